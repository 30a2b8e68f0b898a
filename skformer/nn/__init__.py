"""Pure-PyTorch building blocks: distance attention, embeddings, the k-means layer.

This subpackage never imports scikit-learn: tensors in, tensors out.
"""

from .attention import DistanceAttention, distance_attention, sqdist
from .embedding import decode_index, embed_centres, embed_points, index_codes, index_width
from .kernel import StepStats, exact_step
from .layer import KMeansLayer, LayerOutput, exact_lloyd_layer
from .learned import LearnedKMeansModel
from .model import ExactLloydModel, LloydStep, nearest_centre

__all__ = [
    "DistanceAttention",
    "ExactLloydModel",
    "KMeansLayer",
    "LayerOutput",
    "LearnedKMeansModel",
    "LloydStep",
    "StepStats",
    "decode_index",
    "distance_attention",
    "embed_centres",
    "embed_points",
    "exact_lloyd_layer",
    "exact_step",
    "index_codes",
    "index_width",
    "nearest_centre",
    "sqdist",
]
