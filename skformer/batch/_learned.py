"""Learned runs of many problems at once: the learned model's steps on the same batch.

Dimension legend: ``e`` runs, ``p`` problems of a block, ``n`` rows, ``r`` context rows,
``k`` clusters, ``d`` features, ``w`` the model's width (``d`` plus zero padding).

What :class:`~skformer.TransformerKMeans` does for one problem with ``learned_starts >=
1``, for a block of problems: each run's learned steps (the pretrained soft-attention
model, re-embedded at every step, its temperature schedule at each of the setup's
temperature scales, the best centres by objective kept) on the problem's *context* - its
points, or a seeded sample of ``max_context`` of them - in the model's frame (each
problem mapped into ``[0, 1]^d`` by its per-feature minimum and one global scale), then
exact Lloyd steps on all the problem's points. Padded rows are keys of weight 0 in every
attention and padded features are zeros, so padding changes a problem's numbers only by
the rounding of sums over its padded length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .._fit.learned import LearnedSetup, learned_search
from ..nn.inference import LearnedStepper
from ..nn.kernel import exact_step
from ..nn.projection import Subspace, lift, principal_subspace
from ..nn.streaming import prepare_points
from ..seeding import ProblemStreams
from ._inputs import ProblemBlock, Problems

__all__ = ["Context", "block_context", "context_of", "learned_steps", "problem_polish"]

# Runs per call of the model: a (runs, rows, width) block of tokens stays about this big.
_TOKENS = 2**22


@dataclass
class Context:
    """Each problem's context rows in the model's frame."""

    z: torch.Tensor
    """Rows, shape (p, r, w), float32 (padded rows and features are zeros)."""
    weight: torch.Tensor
    """Their weights, shape (p, r), float32: 0 on padded rows."""
    lo: torch.Tensor
    """Per-feature minimum of each problem's rows, working frame, shape (p, d), float64."""
    scale: torch.Tensor
    """Each problem's largest per-feature range, shape (p,), float64 (1 if 0)."""
    subspace: Subspace | None = None
    """With projection: each problem's principal directions (``lo`` and ``scale`` are
    then those of the projected rows)."""
    rows: torch.Tensor | None = None
    """With projection: the context rows, working frame, shape (p, r, d), float64."""
    projected: torch.Tensor | None = None
    """With projection: the rows in the principal directions, shape (p, r, q)."""

    def _subspace(self, problem: torch.Tensor) -> Subspace:
        return Subspace(self.subspace.mean[problem], self.subspace.basis[problem])

    def to_model(self, c: torch.Tensor, problem: torch.Tensor, width: int) -> torch.Tensor:
        """Working-frame centres (e, k, d) of runs on ``problem`` in the model frame."""
        c = c.double()
        if self.subspace is not None:
            c = self._subspace(problem).project(c)
        z = (c - self.lo[problem].unsqueeze(1)) / self.scale[problem].view(-1, 1, 1)
        return torch.nn.functional.pad(z.float(), (0, width - c.shape[-1]))

    def to_working(self, z: torch.Tensor, problem: torch.Tensor, d: int,
                   dtype: torch.dtype, start: torch.Tensor) -> torch.Tensor:
        """Model-frame centres (e, k, w) back in the working frame (e, k, d); with
        projection, the means of the context rows they assign (``start`` for a centre
        that assigns none)."""
        q = d if self.subspace is None else self.lo.shape[-1]
        out = z[..., :q].double() * self.scale[problem].view(-1, 1, 1)
        out = out + self.lo[problem].unsqueeze(1)
        if self.subspace is not None:
            out = lift(self.rows[problem], self.weight[problem], self.projected[problem],
                       out, start.double())
        return out.to(dtype)


def context_of(block: ProblemBlock, setup: LearnedSetup, uniforms: torch.Tensor | None) -> Context:
    """The block's context rows (all rows, or ``max_context`` of them drawn per problem
    with ``uniforms`` (p, n), one per row) in the model's frame."""
    x, mask = block.x, block.mask
    p, n, d = x.shape
    weight = torch.ones((p, n), dtype=torch.float64, device=x.device) if block.weight is None \
        else block.weight.clone()
    if mask is not None:
        weight = weight * mask
    valid = weight > 0 if mask is None else mask
    if setup.max_context is not None and n > setup.max_context:
        keys = uniforms.to(x.device).masked_fill(~valid, -1.0)
        rows = keys.topk(setup.max_context, dim=1).indices.sort(dim=1).values
        x = x.gather(1, rows.unsqueeze(-1).expand(-1, -1, d))
        weight, valid = weight.gather(1, rows), valid.gather(1, rows)
    subspace = full = None
    if setup.project is not None:  # wide data: the steps run in principal directions
        full = x.double().masked_fill(~valid.unsqueeze(-1), 0.0)
        subspace = principal_subspace(full, weight, setup.project)
        x = subspace.project(full)
    big = torch.finfo(x.dtype).max
    lo = x.masked_fill(~valid.unsqueeze(-1), big).amin(1).double()
    hi = x.masked_fill(~valid.unsqueeze(-1), -big).amax(1).double()
    scale = (hi - lo).amax(-1)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    z = ((x.double() - lo.unsqueeze(1)) / scale.view(-1, 1, 1)).float()
    z = z.masked_fill(~valid.unsqueeze(-1), 0.0)
    z = torch.nn.functional.pad(z, (0, setup.padding))
    return Context(z, weight.float(), lo, scale, subspace, full,
                   None if subspace is None else x)


def block_context(block: ProblemBlock, setup: LearnedSetup,
                  streams: ProblemStreams) -> Context:
    """The block's context (:func:`context_of`); where a problem has more rows than
    ``max_context``, the sample is drawn from the problem's own stream (draw ``j`` for
    row ``j``, whatever the block's padded length), so the problem alone draws the same
    rows."""
    n = block.x.shape[1]
    uniforms = None
    if setup.max_context is not None and n > setup.max_context:
        uniforms = torch.from_numpy(streams.child(-1).subset(block.index).uniform(n))
    return context_of(block, setup, uniforms)


def problem_polish(problems: Problems, i: int, setup: LearnedSetup, streams: ProblemStreams,
                   *, max_iter: int, tol: float
                   ) -> Callable[[np.ndarray], tuple[np.ndarray, int]]:
    """Problem ``i``'s learned steps as a function of its centres (k, d) (the user's
    frame, to the learned centres there and their number), on the context its learned
    runs had: :class:`~skformer.TransformerKMeans`' learned polish, for
    :func:`~skformer._fit.runs.breathe_problem`."""
    block = problems.block(np.array([i]), tol)
    context = block_context(block, setup, streams)
    problem = torch.zeros(1, dtype=torch.long, device=block.x.device)

    def learned(c: np.ndarray) -> tuple[np.ndarray, int]:
        start = torch.from_numpy(np.asarray(c, dtype=np.float64)).to(block.x.device)
        found, n_steps = learned_steps(setup, context, block.to_working(start[None]), problem,
                                       max_iter=max_iter, tol=block.tol, rel_tol=tol)
        return block.to_user(found)[0].cpu().numpy(), int(n_steps[0])

    return learned


def _objective(z: torch.Tensor, c: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """k-means objective (e,) of model-frame centres ``c`` (e, k, w) on rows ``z``."""
    return exact_step(z, c, weight=weight, update=False, inertia=True).inertia


@torch.no_grad()
def learned_steps(setup: LearnedSetup, context: Context, c: torch.Tensor,
                  problem: torch.Tensor, *, max_iter: int, tol: torch.Tensor,
                  rel_tol: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Learned steps of every run from working-frame centres ``c`` (e, k, d).

    Every step of the model's schedule runs; after it, a run stops when its squared
    centre shift is within its ``tol`` (e,) (working frame), when its objective has not
    improved by a relative ``rel_tol`` for three steps, or after ``max_iter`` steps.

    Returns
    -------
    centres : Tensor of shape (e, k, d)
        Each run's centres of least objective among its start and its steps (working
        frame, ``c``'s dtype).
    n_steps : LongTensor of shape (e,)
    """
    e, k, d = c.shape
    width = context.z.shape[-1]
    per = max(1, _TOKENS // max(1, context.z.shape[1] * 4 * width))
    best = torch.empty_like(c)
    n_steps = torch.zeros(e, dtype=torch.long, device=c.device)
    for s in range(0, e, per):
        runs = slice(s, s + per)
        best[runs], n_steps[runs] = _steps(setup, context, c[runs], problem[runs],
                                           max_iter, tol[runs], rel_tol)
    return best, n_steps


def _steps(setup: LearnedSetup, context: Context, c, problem, max_iter, tol, rel_tol):
    model = setup.model
    d, width = c.shape[-1], context.z.shape[-1]
    z_rows, weight = context.z[problem], context.weight[problem]
    stepper = LearnedStepper(model, prepare_points(model, z_rows, None, weight,
                                                   keep_tokens=False), weight)

    def objective(z: torch.Tensor, active: torch.Tensor | None) -> torch.Tensor:
        if active is None:
            return _objective(z_rows, z, weight)
        return _objective(z_rows[active], z, weight[active])

    best_z, n_steps, _ = learned_search(
        stepper, objective, context.to_model(c, problem, width),
        scales=setup.temperature_scales, schedule=model.schedule, max_iter=max_iter,
        tol=tol / context.scale[problem].square(), rel_tol=setup.stop_gain(rel_tol),
        d=d)
    return context.to_working(best_z, problem, d, c.dtype, c), n_steps
