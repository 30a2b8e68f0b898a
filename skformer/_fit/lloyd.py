"""Lloyd's step over a data source: per-block partial, merge, finish.

Dimension legend: ``m`` rows of a block, ``k`` clusters, ``d`` features.

The step is what the exact transformer's hard attention computes (the fused path of
:class:`~skformer.nn.model.ExactLloydModel`): A1 is the nearest centre of each point
(lowest index on ties), A3 the weighted mean of each cluster; a cluster of zero weight
keeps its centre. A block contributes its per-cluster sums and weights, summed in the
data's dtype within the block (or a chunk of it) and in float64 across blocks; blocks
follow one grid of rows whatever the container
(:func:`~skformer._fit.sources.grid_rows`), so every container gives the same result.
The new centres are computed once, in the data's dtype. A dense block's kernel is, on
the CPU, the exact step compiled with numba (:mod:`.compiled`) or, without it, in NumPy
(:mod:`.cpu`), on a GPU :func:`~skformer.nn.exact_step`; a sparse block's,
:mod:`.sparse`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch

from ..nn.kernel import Workspace, exact_step
from ..nn.model import ExactLloydModel
from . import compiled
from .cpu import (
    GridStep,
    block_arrays,
    block_lloyd_sums,
    cpu_step,
    dense_score,
    is_small,
    small_score,
)
from .sources import Block, DaskSource, Source, merge_tree, sum_parts
from .sparse import sparse_lloyd_sums, sparse_norms, sparse_score

__all__ = [
    "LloydRun",
    "LloydStats",
    "lloyd_partial",
    "lloyd_step",
    "norms_partial",
    "run_lloyd",
    "same_clustering",
    "score_partial",
]

logger = logging.getLogger("skformer")


class LloydStats(NamedTuple):
    """Sufficient statistics of an assignment: equal statistics, equal assignment."""

    sums: np.ndarray
    """Weighted sum of each cluster's points, shape (k, d), float64."""
    mass: np.ndarray
    """Total weight of each cluster, shape (k,), float64."""

    def inertia(self, c: np.ndarray, x2: float) -> float:
        """Weighted sum of squared distances of the points to centres ``c`` (k, d) under
        this assignment: ``sum_i w_i |x_i|^2 - 2 sum_j c_j . S_j + sum_j m_j |c_j|^2``,
        from the points' total ``x2 = sum_i w_i |x_i|^2`` (float64; the fit frame keeps
        the terms of one size, so the cancellation costs about 1e-10 relative)."""
        c64 = np.asarray(c, dtype=np.float64)
        return float(x2 - 2.0 * (c64 * self.sums).sum()
                     + (self.mass * np.square(c64).sum(-1)).sum())

    def same(self, other: LloydStats | None) -> bool:
        """Whether ``other`` holds the same statistics (then the same assignment)."""
        return (other is not None and np.array_equal(self.mass, other.mass)
                and np.array_equal(self.sums, other.sums))


def _numpy(t: torch.Tensor) -> np.ndarray:
    """A tensor's values as a NumPy array (no copy on the CPU)."""
    return t.detach().cpu().numpy()


# The thread's scratch buffers while a run of Lloyd steps is under way (see
# :func:`_scratch_scope` and :class:`~skformer.nn.kernel.Workspace`).
_scratch = threading.local()


@contextmanager
def _scratch_scope():
    """Within this block the calling thread reuses its buffers; they are freed on exit."""
    outer = getattr(_scratch, "workspace", None)
    _scratch.workspace = outer if outer is not None else Workspace()
    try:
        yield
    finally:
        if outer is None:
            _scratch.workspace = None


def _block_step(block: Block, c: torch.Tensor, *, update: bool = True,
                inertia: bool = False, labels: bool = True):
    """:func:`~skformer.nn.kernel.exact_step` on a block (a batch of one problem), its
    sums in the data's dtype; on the block's tokens ``[x ; 1]`` where the source has
    them (the products then carry the centres' norms and the masses)."""
    c = c.to(block.x.device, block.x.dtype)
    tokens = update and block.tokens is not None
    return exact_step((block.tokens if tokens else block.x).unsqueeze(0), c.unsqueeze(0),
                      weight=None if block.w is None else block.w.unsqueeze(0),
                      update=update, inertia=inertia, augmented=tokens, labels=labels,
                      workspace=getattr(_scratch, "workspace", None))


def lloyd_partial(block: Block, c: torch.Tensor) -> LloydStats:
    """A block's contribution to the step from centres ``c`` (k, d)."""
    if sp.issparse(block.x):
        return LloydStats(*sparse_lloyd_sums(block, c))
    if cpu_step(block):
        return LloydStats(*block_lloyd_sums(block, c))
    stats = _block_step(block, c, labels=False)
    return LloydStats(_numpy(stats.sums[0].double()), _numpy(stats.mass[0].double()))


def _finish(c: np.ndarray, stats: LloydStats) -> np.ndarray:
    """Each cluster's mean (float64 sums over masses, rounded to ``c``'s dtype), or its
    centre in ``c`` (k, d) where its mass is 0."""
    mass = stats.mass[:, None]
    if stats.mass.all():  # no empty cluster (the usual case: no masked division)
        return (stats.sums / mass).astype(c.dtype, copy=False)
    new = c.copy()
    np.divide(stats.sums, mass, out=new, where=mass > 0, casting="same_kind")
    return new


# The compiled end of a step's "no previous statistics".
_NO_STATS = (np.empty((0, 0)), np.empty(0))


def _settle(c: np.ndarray, stats: LloydStats, previous: LloydStats | None,
            new: np.ndarray | None) -> tuple[np.ndarray, float, bool]:
    """The end of a step from centres ``c`` (k, d) whose assignment has statistics
    ``stats``: the new centres (``new``, or :func:`_finish`'s where None), the squared
    shift to them and whether the statistics equal ``previous`` (then the assignment
    did not change). Compiled in one call where numba is (the shift summed in order,
    else by NumPy: every container of a fit takes the same way)."""
    kernels = compiled.kernel()
    if kernels is None:
        if new is None:
            new = _finish(c, stats)
        return new, float(np.square(new.astype(np.float64) - c).sum()), stats.same(previous)
    fill = new is None
    if fill:
        new = np.empty_like(c)
    # C-ordered arrays whatever the step made them: one signature to compile.
    stats = LloydStats(*map(np.ascontiguousarray, stats))
    last = _NO_STATS if previous is None else map(np.ascontiguousarray, previous)
    shift, same = kernels.finish_step(c, *stats, *last, new, fill)
    return new, shift, same


@torch.no_grad()
def _dense_step(source: Source, model: ExactLloydModel, c: torch.Tensor):
    """The literal attention layer over all the points (``path="dense"``; sparse rows are
    densified: this path is for small data, its attention costs ``n**2``)."""
    x, w = source.gather(None)
    if sp.issparse(x):
        x = x.toarray()
    x = torch.from_numpy(x).to(c.device).unsqueeze(0)
    wt = None if w is None else torch.from_numpy(w).to(c.device, c.dtype).unsqueeze(0)
    step = model(x, c.unsqueeze(0), wt)
    lab = step.labels[0]
    k = c.shape[0]
    ws = torch.ones(lab.shape[0], dtype=torch.float64) if w is None else torch.from_numpy(w)
    mass = torch.zeros(k, dtype=torch.float64).index_add_(0, lab.cpu(), ws)
    sums = torch.zeros(k, c.shape[1], dtype=torch.float64).index_add_(
        0, lab.cpu(), x[0].double().cpu() * ws.unsqueeze(-1))
    return step.centres[0], LloydStats(sums.numpy(), mass.numpy())


def _stepper(source: Source, c: torch.Tensor, model: ExactLloydModel | None
             ) -> Callable[[np.ndarray], tuple[np.ndarray | None, LloydStats]]:
    """Lloyd's step over ``source`` as a function of the centres: NumPy (k, d) of the
    data's dtype (fit frame) in; the assignment's statistics out, after the new centres
    where the step makes them itself (the dense model's), else None (:func:`_settle`
    makes them). ``c`` tells the device of the fit and the number of centres.

    Data held in memory, of a kind the CPU step takes (:mod:`.cpu`), are stepped on
    their rows directly, all blocks in one call (each block's sums those of a pass
    over the block alone, merged by the pass's tree: the same result), by one
    :class:`~skformer._fit.cpu.GridStep` for the run (compiled, it keeps the rows'
    bounds from step to step and skips the products they make needless).
    """
    if model is not None and model.path == "dense":
        if isinstance(source, DaskSource):
            raise ValueError("path='dense' needs a NumPy array (or memmap) or a sparse "
                             "matrix, not a dask array; use path='fused'.")

        def dense(cn: np.ndarray):
            new, stats = _dense_step(source, model, torch.from_numpy(cn).to(c.device))
            return _numpy(new), stats

        return dense
    block = source.resident()
    if block is not None and cpu_step(block):
        tokens, w = block_arrays(block)
        grid = GridStep(tokens, w, c.shape[0], source.block_rows)

        def resident(cn: np.ndarray):
            parts = grid(cn)
            return None, merge_tree([LloydStats(*p) for p in parts], sum_parts)

        return resident

    def blocks(cn: np.ndarray):
        return None, source.map_reduce(lloyd_partial, sum_parts, torch.from_numpy(cn))

    return blocks


def lloyd_step(source: Source, c: torch.Tensor, model: ExactLloydModel | None = None):
    """One step from centres ``c`` (k, d): new centres (``c``'s device) and the
    assignment's statistics."""
    cn = _numpy(c)
    new, stats = _stepper(source, c, model)(cn)
    new, _, _ = _settle(cn, stats, None, new)
    return torch.from_numpy(new).to(c.device), stats


class LloydRun(NamedTuple):
    """The end of a run of Lloyd steps."""

    centers: torch.Tensor
    """(k, d), the data's dtype."""
    n_iter: int
    inertia: float | None
    """Inertia of ``centers``, known without another pass when the run ended by strict
    convergence (the last assignment is the final one); None otherwise."""


def run_lloyd(source: Source, c: torch.Tensor, max_iter: int, tol: float, *,
              model: ExactLloydModel | None = None, to_user=float,
              x2: float | None = None, log: bool = True) -> LloydRun:
    """Lloyd steps from ``c`` (k, d) with KMeans' stopping rules.

    Stops at strict convergence (the assignment did not change: its statistics are
    equal, and so are the centres), when the squared centre shift is within ``tol``, or
    after ``max_iter`` steps. ``to_user`` converts a squared shift to the user's units
    for the log; ``x2`` (the points' weighted sum of squared norms) lets a run that ends by
    strict convergence report its inertia from the last step's statistics. ``log=False``:
    nothing is logged (steps that are not the fit's own, such as the context screen's).
    """
    step = _stepper(source, c, model)
    cn = _numpy(c)
    previous, inertia = None, None
    i = -1
    log = log and logger.isEnabledFor(logging.INFO)
    with _scratch_scope():
        for i in range(max_iter):
            new, stats = step(cn)
            cn, shift, same = _settle(cn, stats, previous, new)
            if log:
                logger.info("Iteration %d, centre shift %.6g.", i, to_user(shift))
            if same:
                if log:
                    logger.info("Converged at iteration %d: strict convergence.", i)
                if x2 is not None:
                    inertia = stats.inertia(cn, x2)
                break
            if shift <= tol:
                if log:
                    logger.info("Converged at iteration %d: centre shift within "
                                "tolerance.", i)
                break
            previous = stats
    return LloydRun(torch.from_numpy(cn).to(c.device), i + 1, inertia)


@torch.no_grad()
def norms_partial(block: Block) -> torch.Tensor:
    """A block's weighted sum of squared norms (float64)."""
    if sp.issparse(block.x):
        return sparse_norms(block)
    sq = block.x.double().square().sum(-1)
    return (sq if block.w is None else sq * block.w).sum().cpu()


def score_partial(block: Block, c: torch.Tensor, other: torch.Tensor | None):
    """A block's weighted sum of squared distances to the nearest of centres ``c``
    (float64, differences summed literally) and, if ``other`` centres are given, the
    contingency table (k * k,) of the two nearest-centre assignments."""
    if sp.issparse(block.x):
        return sparse_score(block, c, other)
    if is_small(block, c.shape[0]):
        return small_score(block, c, other)
    if cpu_step(block):
        return dense_score(block, c, other)
    stats = _block_step(block, c, update=False, inertia=True)
    if other is None:
        return stats.inertia[0].cpu(), None
    k = c.shape[0]
    lab, lab2 = stats.labels[0], _block_step(block, other, update=False).labels[0]
    return stats.inertia[0].cpu(), torch.bincount(lab * k + lab2, minlength=k * k).cpu()


def same_clustering(table: torch.Tensor, k: int) -> bool:
    """Whether a contingency table says two labelings are one partition renamed."""
    t = table.reshape(k, k) > 0
    return int(t.sum()) == int(t.any(1).sum()) == int(t.any(0).sum())
