"""Lloyd runs of many problems at once, each stopping on its own.

Dimension legend: ``e`` runs (a problem's ``n_init`` runs are ``n_init`` entries),
``p`` problems of a block, ``n`` rows, ``k`` clusters, ``d`` features.

A run follows :class:`sklearn.cluster.KMeans` (``algorithm="lloyd"``) step for step:
each iteration assigns every point to its nearest centre and moves each centre to the
mean of its points (the exact transformer's layer, :func:`~skformer.nn.kernel.exact_step`);
a run ends when its labels did not change (strict convergence), when its squared centre
shift is within its tolerance, or after ``max_iter`` iterations; a run that did not end
by strict convergence gets its labels from its final centres. A cluster without points
keeps its centre (where KMeans moves it to a far point). Runs that have ended leave the
batch: the work of an iteration is that of the runs still going.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._fit.engine import contingency, lloyd_loop, same_partition
from ..nn.kernel import exact_step
from ._inputs import ProblemBlock

__all__ = ["RunState", "final_assignment", "pick_best", "run_batch_lloyd", "split_runs"]

# Largest (runs, rows, k) block of distances of one kernel call.
_BUDGET = 2**20


@dataclass
class RunState:
    """Runs of a block of problems (``n_init`` per problem), in the working frame."""

    problem: torch.Tensor
    """Row of the block (local problem index) of each run, shape (e,)."""
    centres: torch.Tensor
    """Shape (e, k, d)."""
    n_iter: torch.Tensor
    """Iterations run, shape (e,) int64."""
    labels: torch.Tensor | None = None
    """Each run's labels, shape (e, n) int64 (-1 on padding), once final."""
    inertia: torch.Tensor | None = None
    """Each run's inertia (working frame), shape (e,) float64, once final."""


def _groups(active: torch.Tensor, per: int):
    """Consecutive slices of ``per`` of the runs ``active``."""
    for s in range(0, active.numel(), per):
        yield active[s : s + per]


def _rows(block: ProblemBlock, problem: torch.Tensor, full: bool):
    """The rows, mask and weights of runs' problems ``problem`` (views for ``full``)."""
    if full:
        return block.x, block.mask, block.weight
    pick = (lambda t: None if t is None else t.index_select(0, problem))  # noqa: E731
    return pick(block.x), pick(block.mask), pick(block.weight)


def _per_call(block: ProblemBlock, k: int) -> int:
    """Runs per kernel call: as many whole problems as the distance budget holds."""
    n = block.x.shape[1]
    return max(1, _BUDGET // max(1, n * k))


@torch.no_grad()
def run_batch_lloyd(block: ProblemBlock, state: RunState, max_iter: int) -> RunState:
    """Lloyd iterations of every run of ``state`` until each stops (in place), by the
    fit's run loop (:func:`~skformer._fit.engine.lloyd_loop`).

    The clusters' sums are scatter-adds of the rows in their order, so a problem's
    numbers are the same to the bit whatever its padding and its neighbours in the
    batch (a one-hot product would sum in an order that depends on the padded length).

    Parameters
    ----------
    block : ProblemBlock
    state : RunState
        Runs from their initial centres (``n_iter`` 0).
    max_iter : int
    """
    e, n = state.problem.numel(), block.x.shape[1]
    per = _per_call(block, state.centres.shape[1])
    centre_mask = block.centre_mask
    previous = torch.full((e, n), -2, dtype=torch.int32, device=block.x.device)
    identity = e == block.x.shape[0] and bool(
        (state.problem == torch.arange(e, device=state.problem.device)).all())

    def step(active: torch.Tensor, i: int):
        shifts, unchanged = [], []
        for runs in _groups(active, per):
            full = identity and runs.numel() == e
            problem = state.problem[runs]
            x, mask, weight = _rows(block, problem, full)
            c = state.centres[runs]
            stats = exact_step(x, c, weight=weight, mask=mask, one_hot=False,
                               centre_mask=None if centre_mask is None
                               else centre_mask[problem])
            new = stats.centres(c)
            labels = stats.labels.to(torch.int32)
            unchanged.append((labels == previous[runs]).all(-1))
            shifts.append((new.double() - c.double()).square().sum((-1, -2)))
            state.centres[runs] = new
            previous[runs] = labels
        return torch.cat(shifts), torch.cat(unchanged)

    runs = torch.arange(e, device=block.x.device)
    n_iter, _ = lloyd_loop(step, runs, max_iter, block.tol[state.problem])
    state.n_iter += n_iter
    return state


@torch.no_grad()
def final_assignment(block: ProblemBlock, state: RunState) -> RunState:
    """Each run's labels and inertia under its final centres (in place)."""
    k = state.centres.shape[1]
    per = _per_call(block, k)
    e = state.problem.numel()
    centre_mask = block.centre_mask
    labels, inertia = [], []
    for runs in _groups(torch.arange(e, device=block.x.device), per):
        problem = state.problem[runs]
        x, mask, weight = _rows(block, problem, False)
        stats = exact_step(x, state.centres[runs], weight=weight, mask=mask, update=False,
                           inertia=True, centre_mask=None if centre_mask is None
                           else centre_mask[problem])
        labels.append(stats.labels)
        inertia.append(stats.inertia)
    state.labels, state.inertia = torch.cat(labels), torch.cat(inertia)
    return state


def pick_best(states: list[RunState]) -> RunState:
    """Per entry, the best of the runs ``states`` (the same entries, in order): KMeans'
    rule, the first, replaced by a later one of lower inertia that is not the same
    partition renamed."""
    best = states[0]
    k = best.centres.shape[1]
    for other in states[1:]:
        lower = other.inertia < best.inertia
        if not bool(lower.any()):
            continue
        take = lower & ~same_partition(
            contingency(other.labels, best.labels, k, valid=other.labels >= 0), k)
        best = RunState(best.problem, *(_where(take, a, b) for a, b in (
            (other.centres, best.centres), (other.n_iter, best.n_iter),
            (other.labels, best.labels), (other.inertia, best.inertia))))
    return best


def _where(take: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a`` where ``take`` (e,), else ``b``, entry by entry."""
    return torch.where(take.view(-1, *([1] * (a.ndim - 1))), a, b)


def split_runs(state: RunState, n_problems: int) -> list[RunState]:
    """The runs of ``state`` ordered run-major (run ``r`` of problem ``i`` is entry
    ``r * n_problems + i``), as one state per run."""
    return [RunState(*(None if v is None else v[s : s + n_problems] for v in (
        state.problem, state.centres, state.n_iter, state.labels, state.inertia)))
        for s in range(0, state.problem.numel(), n_problems)]
