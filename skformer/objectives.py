"""What a learned model is trained and judged on: one step, or several re-embedded steps.

Dimension legend: ``b`` tasks, ``n`` points, ``k`` centres, ``d`` features, ``T`` steps.

``one-step`` (the paper's objective, spec §3.2): the smoothed k-means loss of the
centres after one step.

``multi-step``: the k-means cost along ``T`` re-embedded steps, each divided by the cost
of ``T`` Lloyd steps from the same start (so every task counts the same whatever its
scale), later steps weighted more, plus the first step against one Lloyd step::

    sum_t w_t cost(C_t) / cost(Lloyd_T(C_0))  /  sum_t w_t  +  w_1 cost(C_1) / cost(Lloyd_1(C_0))

with ``w_t = (0.1 + 0.9 (t - 1) / (T - 1))^2``. The hard cost is differentiable in the
centres almost everywhere (the nearest centre is locally constant).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .losses import kmeans_cost
from .nn.learned import LearnedKMeansModel
from .nn.streaming import prepare_points, streamed_step

__all__ = ["MultiStepTerms", "multistep_terms", "step_weights", "unroll"]


def step_weights(n_steps: int, *, dtype=torch.float32, device=None) -> torch.Tensor:
    """Weights ``w_1..w_T`` of the steps in the multi-step objective, shape (T,).

    Examples
    --------
    >>> step_weights(3)
    tensor([0.0100, 0.3025, 1.0000])
    """
    if n_steps == 1:
        return torch.ones(1, dtype=dtype, device=device)
    return torch.linspace(0.1, 1.0, n_steps, dtype=dtype, device=device).square()


def unroll(
    model: LearnedKMeansModel,
    x: torch.Tensor,
    c: torch.Tensor,
    n_steps: int,
    *,
    generator: torch.Generator | None = None,
) -> list[torch.Tensor]:
    """``n_steps`` re-embedded steps with gradients, A2 computed once.

    A softmax model without dropout runs the streamed decomposition of the step
    (:mod:`skformer.nn.streaming`: the point tokens' projections once, then
    ``O(n k e)`` per step); otherwise the layer itself.

    Parameters
    ----------
    model : LearnedKMeansModel
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
    n_steps : int
    generator : torch.Generator, default=None
        Dropout masks in training mode.

    Returns
    -------
    list of Tensor of shape (b, k, d)
        The centres after each step (``n_steps`` of them).
    """
    out = []
    if model.activation == "softmax" and not (model.training and model.dropout > 0):
        prepared = prepare_points(model, x, keep_tokens=False)
        for t in range(n_steps):
            c = streamed_step(model, prepared, c, step=t)
            out.append(c)
        return out
    update = model.points_update(x, generator=generator)
    for t in range(n_steps):
        c = model(x, c, step=t, generator=generator, points_update=update)
        out.append(c)
    return out


class MultiStepTerms(NamedTuple):
    """Per-task terms of the multi-step objective."""

    objective: torch.Tensor
    """The objective of each task, shape (b,)."""
    final: torch.Tensor
    """Cost after ``T`` steps over Lloyd's after ``T`` steps, shape (b,)."""
    first: torch.Tensor
    """Cost after one step over Lloyd's after one step, shape (b,)."""


def multistep_terms(
    centres: list[torch.Tensor],
    x: torch.Tensor,
    lloyd_first: torch.Tensor,
    lloyd_final: torch.Tensor,
    *,
    one_step_weight: float = 1.0,
) -> MultiStepTerms:
    """The multi-step objective of the centres of an unrolled run.

    Parameters
    ----------
    centres : list of T Tensors of shape (b, k, d)
        Centres after each step (:func:`unroll`).
    x : Tensor of shape (b, n, d)
    lloyd_first, lloyd_final : Tensor of shape (b,)
        Cost of one and of ``T`` Lloyd steps from the same start.
    one_step_weight : float, default=1.0
        Weight ``w_1`` of the first step's ratio to one Lloyd step.

    Returns
    -------
    MultiStepTerms

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [2.0], [10.0], [12.0]]])
    >>> c = [torch.tensor([[[1.0], [11.0]]])]
    >>> multistep_terms(c, x, torch.tensor([4.0]), torch.tensor([4.0])).objective
    tensor([2.])
    """
    tiny = torch.finfo(x.dtype).tiny
    costs = torch.stack([kmeans_cost(x, c) for c in centres], dim=-1)  # (b, T)
    w = step_weights(len(centres), dtype=costs.dtype, device=costs.device)
    ratios = costs / lloyd_final.clamp_min(tiny).unsqueeze(-1)
    first = costs[:, 0] / lloyd_first.clamp_min(tiny)
    objective = (ratios * w).sum(-1) / w.sum() + one_step_weight * first
    return MultiStepTerms(objective, ratios[:, -1], first)
