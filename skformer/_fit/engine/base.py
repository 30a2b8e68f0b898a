"""What every Lloyd backend provides, and what they share: a step's statistics, the end
of a step, the comparison of two assignments.

Dimension legend: ``m`` rows of a block, ``k`` clusters, ``d`` features.

A backend is set up once per fit on a data source and the number of clusters
(:func:`~skformer._fit.engine.choose_backend` chooses it); the run loop
(:func:`~skformer._fit.engine.loop.lloyd_loop`) then asks it nothing about devices or
containers. Its verbs:

- :meth:`Backend.stepper`: Lloyd's step of one run as a function of the centres, giving
  the assignment's :class:`LloydStats` (and the new centres where the backend makes
  them itself); a run's state, such as row bounds, lives in its stepper;
- :func:`end_step`: the new centres, their squared shift and whether the assignment
  changed, the same arithmetic for every backend;
- :meth:`Backend.score`: the inertia of centres and, against other centres, the
  contingency table of the two assignments (:func:`same_partition` reads it);
- :meth:`Backend.norms`: the points' weighted sum of squared norms;
- :meth:`Backend.costs`: each centre's error and utility (:class:`CentreCosts`), what
  the global moves (:mod:`skformer._fit.moves`) choose their centres by;
- :meth:`Backend.single_moves`: Hartigan and Wong's single-point moves (:mod:`.single`),
  where the rows are held in memory.

Every backend sums in the data's dtype within a chunk or block and in float64 across
blocks, and blocks follow one grid of rows whatever the container
(:func:`~skformer._fit.sources.grid_rows`), so every container gives the same result.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np
import torch

from ..kernels import Kernels
from ..sources import Block, sum_parts
from .single import SingleMoves, single_moves

__all__ = ["Backend", "CentreCosts", "LloydStats", "Stepper", "contingency", "dense_costs",
           "dense_norms", "end_step", "means", "same_partition"]


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


class CentreCosts(NamedTuple):
    """What each centre costs and is worth under the nearest-centre assignment."""

    error: np.ndarray
    """(k,) float64: the weighted sum of squared distances of each centre's points (they
    sum to the inertia)."""
    utility: np.ndarray
    """(k,) float64: the weighted sum, over each centre's points, of the squared distance
    to their second-nearest centre less that to their own: how much the inertia would
    grow were the centre removed and its points moved to their next centre."""

    @property
    def inertia(self) -> float:
        return float(self.error.sum())


Stepper = Callable[[np.ndarray], tuple[np.ndarray | None, LloydStats]]
"""Lloyd's step of one run: centres (k, d), the data's dtype (fit frame), in; the new
centres where the backend makes them itself (else None: :func:`end_step` makes them)
and the assignment's statistics out."""


class Backend(ABC):
    """Lloyd's step, scoring and norms over one data source for ``k`` clusters."""

    kernels: Kernels | None = None
    """The compiled kernels that end each step (None: NumPy), set when the backend is
    chosen: every backend of a machine ends its steps alike."""

    def end_step(self, c: np.ndarray, stats: LloydStats, previous: LloydStats | None,
                 new: np.ndarray | None) -> tuple[np.ndarray, float, bool]:
        """:func:`end_step` with this backend's kernels."""
        return end_step(c, stats, previous, new, self.kernels)

    @abstractmethod
    def stepper(self) -> Stepper:
        """A new run's step (each run its own: a stepper may keep state across steps)."""

    @abstractmethod
    def score(self, c: np.ndarray, other: np.ndarray | None = None
              ) -> tuple[float, torch.Tensor | None]:
        """The weighted sum of squared distances of the points to the nearest of centres
        ``c`` (k, d) (float64, differences summed literally) and, with ``other`` centres,
        the (k * k,) contingency table of the two nearest-centre assignments."""

    @abstractmethod
    def norms(self) -> float:
        """The points' weighted sum of squared norms (float64)."""

    def costs(self, c: np.ndarray) -> CentreCosts:
        """Each of centres ``c``'s (k, d) error and utility, one pass (float64; a dense
        source's blocks by torch, backends with faster arithmetic override it)."""
        return CentreCosts(*self.source.map_reduce(dense_costs, sum_parts, c))

    def costs_and_state(self, c: np.ndarray) -> tuple[CentreCosts, object | None]:
        """:meth:`costs` and what the same pass learnt of the rows at ``c`` that a run
        from nearby centres can start from (:meth:`stepper_from`; None: nothing)."""
        return self.costs(c), None

    def stepper_from(self, state: object | None, c: np.ndarray) -> Stepper:
        """A new run's step from centres ``c`` (k, d) near those of ``state`` (from
        :meth:`costs_and_state`, possibly of another backend of the same rows): the same
        steps as :meth:`stepper`'s, started from what the state knows."""
        return self.stepper()

    def dense_rows(self) -> Callable[[], Iterable[Block]] | None:
        """A walk over the rows, once, in order, as dense blocks, where this process can
        make one (in memory: the held array, on the CPU; a memmap: its blocks); None
        otherwise (a dask array's blocks live on its workers). The sparse
        backend reads its CSR rows dense a chunk at a time."""
        source = self.source
        if source.sparse or not source.walkable:
            return None
        held = source.held_tokens()
        if held is None:  # a memmap: its blocks, read pass by pass
            return source.blocks
        # In memory: the held NumPy array itself, whatever the device of the steps.
        w = source.gather(None)[1]
        block = Block(torch.from_numpy(held)[:, :-1], None if w is None else torch.from_numpy(w))
        return lambda: [block]

    def single_moves(self, c: np.ndarray, *, max_passes: int, floor: float
                     ) -> SingleMoves | None:
        """Hartigan and Wong's single-point moves from centres ``c`` (k, d)
        (:func:`~.single.single_moves`), or None where they are not offered: they visit
        the rows one by one, in order, so they need :meth:`dense_rows` and the compiled
        kernels.
        """
        rows = None if self.kernels is None else self.dense_rows()
        if rows is None:
            return None
        return single_moves(self.kernels, rows, self.source.n_samples, c,
                            max_passes=max_passes, floor=floor)


def dense_norms(block: Block) -> float:
    """A dense block's weighted sum of squared norms (float64)."""
    sq = block.x.double().square().sum(-1)
    return float((sq if block.w is None else sq * block.w).sum())


# Rows per chunk of :func:`dense_costs`' distances (rows x k values at a time).
_COST_VALUES = 2**20


def dense_costs(block: Block, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A dense block's contribution to :class:`CentreCosts` of centres ``c`` (k, d): each
    row's two nearest centres by ``|c|^2 - 2 x.c`` (the block's dtype, chunk by chunk),
    their squared distances from the differences (float64), summed per centre."""
    x = block.x
    ct = torch.from_numpy(np.ascontiguousarray(c)).to(x.device, x.dtype)
    c64 = torch.from_numpy(np.asarray(c, dtype=np.float64)).to(x.device)
    k = ct.shape[0]
    c_sq = ct.square().sum(-1)
    error = torch.zeros(k, dtype=torch.float64, device=x.device)
    utility = torch.zeros_like(error)
    rows = max(1, _COST_VALUES // max(1, k))
    for s in range(0, x.shape[0], rows):
        xs = x[s : s + rows]
        two = torch.addmm(c_sq, xs, ct.T, alpha=-2.0).topk(min(2, k), largest=False).indices
        x64 = xs.double().unsqueeze(1)
        sq = (x64 - c64[two]).square().sum(-1)  # (rows, 1 or 2)
        near = sq[:, 0]
        gap = (sq[:, 1] - near).clamp_min(0) if k > 1 else torch.zeros_like(near)
        if block.w is not None:
            w = block.w[s : s + rows].to(x.device, torch.float64)
            near, gap = near * w, gap * w
        error.index_add_(0, two[:, 0], near)
        utility.index_add_(0, two[:, 0], gap)
    return error.cpu().numpy(), utility.cpu().numpy()


def means(c: np.ndarray, stats: LloydStats) -> np.ndarray:
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


def end_step(c: np.ndarray, stats: LloydStats, previous: LloydStats | None,
             new: np.ndarray | None, kernels: Kernels | None = None
             ) -> tuple[np.ndarray, float, bool]:
    """The end of a step from centres ``c`` (k, d) whose assignment has statistics
    ``stats``: the new centres (``new``, or :func:`means`), the squared shift to them
    and whether the statistics equal ``previous`` (then the assignment did not change).
    One compiled call with ``kernels`` (the shift summed in order), else NumPy.

    Examples
    --------
    >>> stats = LloydStats(np.array([[2.0], [30.0]]), np.array([2.0, 3.0]))
    >>> new, shift, same = end_step(np.array([[0.0], [9.0]]), stats, None, None)
    >>> new.ravel().tolist(), shift, same
    ([1.0, 10.0], 2.0, False)
    """
    if kernels is None:
        if new is None:
            new = means(c, stats)
        return new, float(np.square(new.astype(np.float64) - c).sum()), stats.same(previous)
    fill = new is None
    if fill:
        new = np.empty_like(c)
    # C-ordered arrays whatever the step made them: one signature to compile.
    stats = LloydStats(*map(np.ascontiguousarray, stats))
    last = _NO_STATS if previous is None else map(np.ascontiguousarray, previous)
    shift, same = kernels.end_step(c, *stats, *last, new, fill)
    return new, shift, same


def contingency(a, b, k: int, valid: torch.Tensor | None = None) -> torch.Tensor:
    """The contingency table of two labelings ``a`` and ``b`` (..., n) into ``k``
    clusters: shape (..., k * k), entry ``i * k + j`` counting the points labelled ``i``
    by ``a`` and ``j`` by ``b`` (only where ``valid``, when given: padding is not
    counted). NumPy arrays or tensors in; a tensor out.

    Examples
    --------
    >>> contingency(np.array([0, 0, 1]), np.array([1, 1, 0]), 2).tolist()
    [0, 2, 1, 0]
    """
    a, b = torch.as_tensor(a).long(), torch.as_tensor(b).long()
    if valid is None and a.ndim == 1:
        return torch.bincount(a * k + b, minlength=k * k)
    if valid is None:
        valid = torch.ones_like(a, dtype=torch.bool)
    table = torch.zeros((*a.shape[:-1], k * k), dtype=torch.int64, device=a.device)
    return table.scatter_add_(-1, (a.clamp_min(0) * k + b.clamp_min(0)), valid.long())


def same_partition(table: torch.Tensor, k: int) -> torch.Tensor:
    """Whether contingency tables (..., k * k) say two labelings are one partition
    renamed (as many non-zero entries as clusters used by each), entry by entry.

    Examples
    --------
    >>> bool(same_partition(contingency([0, 0, 1], [1, 1, 0], 2), 2))
    True
    >>> bool(same_partition(contingency([0, 0, 1], [0, 1, 1], 2), 2))
    False
    """
    t = table.reshape(*table.shape[:-1], k, k) > 0
    pairs = t.sum((-1, -2))
    return (pairs == t.any(-1).sum(-1)) & (pairs == t.any(-2).sum(-1))
