"""skformer: k-means clustering by transformers that run Lloyd's algorithm.

Public API
----------
ExactLloydTransformer
    A scikit-learn clusterer whose fit runs a transformer with hand-set weights and
    hard attention that is exactly Lloyd's algorithm, one layer per iteration.
"""

from ._version import __version__
from .exact import ExactLloydTransformer

__all__ = ["ExactLloydTransformer", "__version__"]
