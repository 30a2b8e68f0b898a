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
from .batch import batch_k_means
from .exact import ExactLloydTransformer
from .kmeans import TransformerKMeans
from .nn.learned import LearnedKMeansModel
from .store import load_model, pretrain

__all__ = [
    "ExactLloydTransformer",
    "LearnedKMeansModel",
    "TransformerKMeans",
    "__version__",
    "batch_k_means",
    "load_model",
    "pretrain",
]
