"""Training the learned k-means transformer on random clustering tasks.

The loop of paper B (Algorithm 1, spec section 3.3): each step draws a batch of random
tasks, runs one re-embedded step of the model, and minimises the smoothed k-means loss
``<P(r / tau), r>`` of its output centres with Adam. Every ``eval_every`` steps the
relative validation loss (paper eq. 20: the model's k-means cost over the cost after
one Lloyd step, averaged over a fixed set of validation tasks) is measured; the learning
rate is halved when it stops improving, and the last and best models are checkpointed.

``objective="multi-step"`` trains for the result of several re-embedded steps instead
(:mod:`skformer.objectives`): the batch's tasks start from random points or from
k-means++ centres, the model runs ``unroll`` steps, and the loss is their k-means cost
relative to as many Lloyd steps; validation measures the same objective on fixed tasks.
The returned model is always the best validation checkpoint, never a worse one.

Randomness comes from one seed, split into independent streams (model initialisation,
validation tasks, training tasks, dropout) with :class:`numpy.random.SeedSequence`; the
global torch seed is never touched.
"""

from .config import OBJECTIVES, SEARCH_RANGES, TRAINABLE, TrainingConfig
from .loop import TrainingResult, train
from .schedule import init_model, search_schedule
from .validation import ValidationSet, evaluate, validation_set

__all__ = [
    "OBJECTIVES",
    "SEARCH_RANGES",
    "TRAINABLE",
    "TrainingConfig",
    "TrainingResult",
    "ValidationSet",
    "evaluate",
    "init_model",
    "search_schedule",
    "train",
    "validation_set",
]
