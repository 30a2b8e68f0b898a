"""skformer: k-means clustering by transformers that run Lloyd's algorithm.

Public API
----------
ExactLloydTransformer
    A scikit-learn clusterer whose fit runs a transformer with hand-set weights and
    hard attention that is exactly Lloyd's algorithm, one layer per iteration.
TransformerKMeans
    The clusterer users call: learned transformer steps, finished by exact Lloyd
    steps, with KMeans' interface.
LearnedKMeansModel
    The trainable one-layer transformer whose forward pass is a clustering step.
batch_k_means
    K-means of many independent problems in one call (a batch ``(b, n, d)`` or a list
    of arrays), each problem's result KMeans'.
load_model, pretrain
    The pretrained-model store: shipped weights, a user cache, pretraining on demand.
"""

from ._version import __version__

# The public names, imported on first use (PEP 562), so that ``import skformer`` and
# ``skformer --help`` do not import torch and scikit-learn: those imports take seconds,
# which a command that only prints its help should not pay.
_LAZY = {
    "ExactLloydTransformer": ".exact",
    "LearnedKMeansModel": ".nn.learned",
    "TransformerKMeans": ".kmeans",
    "batch_k_means": ".batch",
    "load_model": ".store",
    "pretrain": ".store",
}

__all__ = [
    "ExactLloydTransformer",
    "LearnedKMeansModel",
    "TransformerKMeans",
    "__version__",
    "batch_k_means",
    "load_model",
    "pretrain",
]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__all__})
