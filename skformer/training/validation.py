"""Validation: fixed tasks, their Lloyd baselines, and the figures that select a model."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from ..losses import kmeans_cost, lloyd_costs
from ..nn.learned import LearnedKMeansModel
from ..objectives import multistep_terms, unroll
from ..tasks import kmeans_plusplus, sample_tasks
from .config import TrainingConfig

__all__ = ["ValidationSet", "evaluate", "validation_set"]


@torch.no_grad()
def evaluate(
    model: LearnedKMeansModel,
    x: torch.Tensor,
    c: torch.Tensor,
    baseline_cost: torch.Tensor,
    batch_size: int = 32,
) -> float:
    """Mean over tasks of the model's k-means cost after one step over ``baseline_cost``.

    Parameters
    ----------
    model : LearnedKMeansModel
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
    baseline_cost : Tensor of shape (b,)
        The cost after one Lloyd step from ``c`` (the denominator of eq. 20).
    batch_size : int, default=32

    Returns
    -------
    float
    """
    was_training = model.training
    model.eval()
    costs = torch.cat(
        [
            kmeans_cost(x[s : s + batch_size], model(x[s : s + batch_size], c[s : s + batch_size]))
            for s in range(0, x.shape[0], batch_size)
        ]
    )
    model.train(was_training)
    ratio = torch.where(baseline_cost > 0, costs / baseline_cost.clamp_min(1e-30), 1.0)
    return float(ratio.mean())


class ValidationSet(NamedTuple):
    """Fixed validation tasks and their Lloyd baselines."""

    x: torch.Tensor
    """Points, shape (b, n, d)."""
    centres: torch.Tensor
    """Starts, shape (b, k, d): random points, or k-means++ centres for a share."""
    lloyd: torch.Tensor
    """Cost of Lloyd's algorithm from the starts (empty clusters re-seeded with random
    points, as in the paper's code), shape (b, 1 + T): column ``t`` after ``t`` steps."""


def _starts(x: torch.Tensor, random_centres: torch.Tensor, share: float,
            generator: torch.Generator) -> torch.Tensor:
    """Random-point starts, the first ``share`` of the tasks replaced by k-means++."""
    count = int(round(share * x.shape[0]))
    if count == 0:
        return random_centres
    kpp = kmeans_plusplus(x[:count], random_centres.shape[1], generator=generator)
    return torch.cat([kpp, random_centres[count:]])


@torch.no_grad()
def validation_set(config: TrainingConfig, generator: torch.Generator,
                   baseline: torch.Generator, device=None) -> ValidationSet:
    """The validation tasks of a configuration: ``n_val_tasks`` split over its families,
    the first ``kmeanspp_share`` of each family's tasks starting from k-means++."""
    families = config.task_families()
    sizes = [len(part) for part in np.array_split(np.arange(config.n_val_tasks), len(families))]
    xs, cs = [], []
    for family, size in zip(families, sizes, strict=True):
        if size == 0:
            continue
        batch = sample_tasks(config.task_config(family=family), size, generator=generator,
                             device=device)
        xs.append(batch.x)
        cs.append(_starts(batch.x, batch.centres, config.kmeanspp_share, generator))
    x, c = torch.cat(xs), torch.cat(cs)
    n_steps = config.unroll if config.objective == "multi-step" else 1
    lloyd = torch.cat([lloyd_costs(x[s : s + 32], c[s : s + 32], n_steps, generator=baseline)
                       for s in range(0, x.shape[0], 32)])
    return ValidationSet(x, c, lloyd)


@torch.no_grad()
def _validate(model: LearnedKMeansModel, config: TrainingConfig, val: ValidationSet) -> dict:
    """``val_relative``, ``val_multistep`` and ``val_score`` (lower is better)."""
    was_training = model.training
    model.eval()
    if config.objective == "one-step":
        rel = evaluate(model, val.x, val.centres, val.lloyd[:, 1])
        model.train(was_training)
        return {"val_relative": rel, "val_multistep": None, "val_score": rel}
    parts = []
    for s in range(0, val.x.shape[0], 32):
        x, c, lloyd = val.x[s : s + 32], val.centres[s : s + 32], val.lloyd[s : s + 32]
        centres = unroll(model, x, c, config.unroll)
        parts.append(multistep_terms(centres, x, lloyd[:, 1], lloyd[:, -1],
                                     one_step_weight=config.one_step_weight))
    model.train(was_training)
    objective, final, first = (torch.cat(t) for t in zip(*parts, strict=True))
    return {"val_relative": float(first.mean()), "val_multistep": float(final.mean()),
            "val_score": float(objective.mean())}
