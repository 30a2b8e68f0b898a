"""The compiled CPU backend: KMeans' loop over a fixed grid of chunks, on KMeans' threads.

Dimension legend: ``m`` rows, ``k`` clusters, ``d`` features, ``D = d + 1`` token width.

The kernels (:mod:`skformer._fit.kernels.step`) step a chunk of rows: per 256 rows one
product of the tokens ``[x ; 1]`` with ``[-2 c ; |c|^2]``, then each row's nearest centre
and its token added to that cluster's float64 sums. This module lays the chunks out and
hands them to the threads:

- **the grid**: each block of a pass (:func:`~skformer._fit.sources.grid_rows`) in chunks
  of ``max(256, CHUNK // k)`` rows from its start (:func:`grid_edges`), whatever the
  number of threads; a block's chunks are added in order, so a block's sums are those of
  a call on the block alone and every container gives the same result;
- **one pass per step** over data held in memory: the chunks of all the blocks shared
  among the threads at once (one hand-over per step, not one per block); consecutive
  chunks go to each of KMeans' threads (the kernels release the GIL);
- **row bounds** across the steps of a run (:class:`~skformer._fit.kernels.bounds.RowBounds`,
  Hamerly's): from the step after the first :data:`BOUNDS_AFTER`, where a row's
  product is large enough that skipping it pays (:data:`BOUNDS_PRODUCTS`), and paused
  for a while when most rows moved anyway (:data:`BOUNDS_STOP`). The same sums, bit for
  bit.

Data not held in memory (a memmap, a dask array) are stepped block by block, without
bounds (a block's rows are not kept between steps).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...nn.threads import ordered_map
from ..assign import labels_inertia
from ..blas import cpu_threads
from ..kernels import step as _step
from ..kernels.bounds import NO_BOUNDS, RowBounds
from ..kernels.step import NO_WEIGHTS
from ..sources import Block, Source, merge_tree, sum_parts
from .base import Backend, CentreCosts, LloydStats, Stepper, contingency, dense_norms

__all__ = ["BOUNDS_AFTER", "BOUNDS_PRODUCTS", "BOUNDS_STOP", "CHUNK", "HALF_GAP_FEATURES",
           "WARM_GRID", "WARM_GRID_LOW", "CompiledBackend", "Grid", "GridStep", "cpu_score",
           "grid_costs", "grid_edges", "grid_sums", "warm_grid"]

# Distances (rows x centres) per chunk: a chunk is the unit of work of a thread, large
# enough that handing it over costs little beside its arithmetic, small enough that the
# grid has several chunks per thread.
CHUNK = 2**17
# Steps of a run before it keeps row bounds: the first steps move most rows.
BOUNDS_AFTER = 2
# The fewest products per row (k (d + 1)) that bounds are kept for: below, a row's
# product costs no more than its bounds' upkeep.
BOUNDS_PRODUCTS = 512
# A step that kept bounds but computed the products of more than this share of the rows
# pauses them: they start again after BOUNDS_AFTER steps, then twice as many after each
# pause (data whose rows keep moving, such as uniform data, pay for bounds otherwise).
BOUNDS_STOP = 0.5
# Most bytes of per-chunk sums one task holds (a few tasks are in flight at a time).
PARTS = 2**22


@dataclass(frozen=True)
class Grid:
    """How the compiled backend lays out and bounds its steps (the defaults above; tests
    set others to reach every path on small data)."""

    chunk: int = CHUNK
    """Distances (rows x centres) per chunk; a chunk has at least 256 rows."""
    bounds_after: int = BOUNDS_AFTER
    bounds_products: int = BOUNDS_PRODUCTS
    bounds_stop: float = BOUNDS_STOP
    parts: int = PARTS
    """Most bytes of per-chunk sums one task holds."""
    resident: bool = True
    """Step data held in memory all at once (False: block by block, as a memmap)."""
    half_gaps: bool = False
    """Bounds that keep the centres' half-gaps (:class:`~..kernels.bounds.RowBounds`):
    worth their upkeep (``k^2 d`` products now and then) where few centres move far."""


WARM_GRID = Grid(bounds_after=1, bounds_products=0)
"""The grid of runs that start near a fixed point (the global moves'): after a first
step most rows keep their centre, so bounds pay from the second step on, even where a
row's products are few."""
# The most features for which warm runs keep the centres' half-gaps, from their first
# step: below, a global move shifts one centre far and the others little, and the
# half-gap test keeps the rows that the largest shift alone sends back to their
# products; at digits' 64 features the rows' distances to their centre and to the next
# are too alike for it to pay its upkeep.
HALF_GAP_FEATURES = 31
WARM_GRID_LOW = Grid(bounds_after=0, bounds_products=0, half_gaps=True)
"""The grid of warm runs of at most :data:`HALF_GAP_FEATURES` features."""


def warm_grid(n_features: int) -> Grid:
    """The grid of runs that start near a fixed point, for rows of ``n_features``."""
    return WARM_GRID_LOW if n_features <= HALF_GAP_FEATURES else WARM_GRID


def augmented(c: np.ndarray, dtype, out: np.ndarray | None = None) -> np.ndarray:
    """``[-2 c ; |c|^2]`` (k, d + 1) of centres ``c`` (k, d), in ``dtype`` (into ``out``,
    any (k, d + 1) view of ``dtype``, where given)."""
    c = c.astype(dtype, copy=False)
    k, d = c.shape
    cc = np.empty((k, d + 1), dtype=dtype) if out is None else out
    np.multiply(c, -2, out=cc[:, :d])  # exact: a power of two
    np.einsum("ij,ij->i", c, c, out=cc[:, d])
    return cc


@functools.lru_cache(maxsize=16)
def grid_edges(m: int, rows: int, block_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The chunks of ``m`` rows on a grid of blocks of ``block_rows`` rows, each block in
    chunks of ``rows`` rows from its start: the chunks' edges (n_chunks + 1,) and the
    block of each chunk (n_chunks,), read-only (kept for the next steps of a fit).

    Examples
    --------
    >>> edges, block = grid_edges(10, 3, 5)
    >>> edges.tolist(), block.tolist()
    ([0, 3, 5, 8, 10], [0, 0, 1, 1])
    """
    starts = [np.arange(s, min(m, s + block_rows), rows)
              for s in range(0, m, block_rows)] or [np.zeros(0, np.int64)]
    edges = np.append(np.concatenate(starts), m).astype(np.int64)
    block = np.repeat(np.arange(len(starts)), [len(c) for c in starts])
    edges.setflags(write=False)
    block.setflags(write=False)
    return edges, block


def grid_sums(tokens: np.ndarray, w: np.ndarray | None, cct: np.ndarray, rows: int,
              threads: int, block_rows: int | None = None,
              bounds: RowBounds | None = None, parts: int = PARTS) -> np.ndarray:
    """Per-cluster sums (b, k, D), float64, of the ``b`` blocks of ``block_rows`` rows
    (None: one block) of tokens ``[x ; 1]`` (m, D) with weights ``w`` (m,) (None: 1)
    under their nearest of the centres ``cct = [-2 c ; |c|^2]^T`` (D, k), C-ordered
    (the norms as KMeans computes them, so near ties fall as in its loop); the last
    column holds the masses. Each block is summed in chunks of ``rows`` rows from its
    start, chunk by chunk in order; the chunks of all the blocks are shared among
    ``threads`` threads in one pass. ``bounds``: the run's row bounds of ``tokens`` (the
    same sums, fewer products from the second step of the run on). ``parts``: the most
    bytes of per-chunk sums one task holds.

    Examples
    --------
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> cct = np.array([[-0.0, -18.0], [0.0, 81.0]])          # centres 0 and 9
    >>> grid_sums(t, None, cct, rows=256, threads=1)
    array([[[ 1.,  2.],
            [10.,  1.]]])
    >>> grid_sums(t, None, cct, rows=256, threads=1, block_rows=2)[1]
    array([[ 0.,  0.],
           [10.,  1.]])
    """
    m = tokens.shape[0]
    width, k = cct.shape
    wt = NO_WEIGHTS if w is None else np.ascontiguousarray(w, np.float64)
    prune = False if bounds is None else bounds.advance(cct)
    kept = NO_BOUNDS if bounds is None else bounds.kernel_arrays
    edges, block = grid_edges(m, rows, block_rows or m)
    if len(block) <= 1:  # one chunk: no tasks
        out = np.zeros((1, k, width))
        computed = _step.chunk_sums(tokens, wt, cct, edges, 0, len(block), out, *kept,
                                      prune)
        if bounds is not None:
            bounds.computed = computed
        return out
    chunks = len(block)
    # Consecutive chunks per task, as many tasks for each thread, each task's sums at
    # most ``parts`` bytes.
    threads = max(1, threads)
    rounds = -(-chunks // (threads * max(1, parts // (8 * k * width))))
    per = max(1, -(-chunks // (threads * rounds)))

    def run(first: int) -> tuple[np.ndarray, int]:
        stop = min(chunks, first + per)
        parts = np.zeros((stop - first, k, width))
        return parts, _step.chunk_sums(tokens, wt, cct, edges, first, stop, parts, *kept,
                                         prune)

    acc = np.zeros((int(block[-1]) + 1 if chunks else 1, k, width))
    tasks = range(0, chunks, per)
    computed = 0
    for first, (parts, count) in zip(tasks, ordered_map(run, tasks, min(threads,
                                                                         len(tasks))),
                                     strict=True):
        computed += count
        # Chunk by chunk into each block's sums, in order, whatever the tasks.
        owner = block[first : first + len(parts)]
        cuts = np.flatnonzero(np.diff(owner)) + 1
        for lo, hi in zip([0, *cuts], [*cuts, len(parts)], strict=True):
            _step.add_in_order(acc[owner[lo]], parts[lo:hi])
    if bounds is not None:
        bounds.computed = computed
    return acc


def grid_costs(tokens: np.ndarray, w: np.ndarray | None, c: np.ndarray, rows: int,
               threads: int, block_rows: int | None = None,
               bounds: RowBounds | None = None) -> list[tuple]:
    """Each block's contribution (error (k,), utility (k,), float64) to the costs of
    centres ``c`` (k, d) (:class:`~.base.CentreCosts`), over tokens ``[x ; 1]`` (m, D)
    with weights ``w`` (None: 1), on the grid of :func:`grid_sums` (the chunks of all
    the blocks shared among ``threads`` threads, each block's chunks added in order).
    ``bounds``: new row bounds of ``tokens`` for ``k`` centres, set at ``c`` as a step
    would set them.

    Examples
    --------
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> [(e.tolist(), u.tolist()) for e, u in grid_costs(t, None, np.array([[0.0], [9.0]]),
    ...                                                   rows=256, threads=1)]
    [([1.0, 1.0], [144.0, 99.0])]
    """
    from ..kernels import costs as _costs

    m = tokens.shape[0]
    k = c.shape[0]
    wt = NO_WEIGHTS if w is None else np.ascontiguousarray(w, np.float64)
    cct = np.ascontiguousarray(augmented(c, tokens.dtype).T)
    c64 = np.ascontiguousarray(c, dtype=np.float64)
    edges, block = grid_edges(m, rows, block_rows or m)
    chunks = len(block)
    per = max(1, -(-chunks // max(1, threads)))
    labels, bounded, _, slack = NO_BOUNDS if bounds is None else bounds.kernel_arrays
    if bounds is not None:
        bounds.advance(cct)  # the margins of these centres; the centres, for the next

    def run(first: int) -> np.ndarray:
        stop = min(chunks, first + per)
        parts = np.zeros((stop - first, 2, k))
        _costs.chunk_costs(tokens, wt, cct, c64, edges, first, stop, parts, labels,
                           bounded, slack)
        return parts

    tasks = range(0, chunks, per)
    acc = np.zeros((int(block[-1]) + 1 if chunks else 1, 2, k))
    for first, parts in zip(tasks, ordered_map(run, tasks, min(threads, len(tasks))),
                            strict=True):
        owner = block[first : first + len(parts)]
        for i, part in enumerate(parts):  # chunk by chunk, in order, into each block's
            acc[owner[i]] += part
    return [(a[0], a[1]) for a in acc]


def block_costs(block: Block, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A dense CPU block's contribution to the costs of centres ``c`` (k, d)."""
    tokens, w = _arrays(block)
    rows = max(256, CHUNK // c.shape[0])
    return grid_costs(tokens, w, c, rows, 1)[0]


class GridStep:
    """The step of one run on the same rows at every step: the grid, the weights and the
    centres' buffer set up once and, from the step after the first ``grid.bounds_after``
    on, the rows' bounds kept from step to step (with at least ``grid.bounds_products``
    products per row, not with ``bounds=False``). A step that computed more than a share
    ``grid.bounds_stop`` of the rows' products anyway pauses the bounds, twice as long
    after each pause. ``start``: bounds already set at the first step's centres
    (:meth:`~..kernels.bounds.RowBounds.carried`), kept from the first step on.

    Examples
    --------
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> step = GridStep(t, None, 2, None)
    >>> [mass.tolist() for _, mass in step(np.array([[0.0], [9.0]]))]
    [[2.0, 1.0]]
    >>> [mass.tolist() for _, mass in step(np.array([[0.5], [10.0]]))]
    [[2.0, 1.0]]
    """

    def __init__(self, tokens: np.ndarray, w: np.ndarray | None, k: int,
                 block_rows: int | None, *, bounds: bool = True, grid: Grid = Grid(),
                 start: RowBounds | None = None):
        m, width = tokens.shape
        self.tokens, self.block_rows, self.grid = tokens, block_rows, grid
        self.rows = max(256, grid.chunk // k)
        self.cct = np.empty((width, k), dtype=tokens.dtype)
        self.w, self.bounds = w, None
        self.threads = cpu_threads() if m > self.rows else 1
        # Whether the run may keep bounds, whether it keeps them now, and else how many
        # steps are left before it starts them (again) and the wait after a pause.
        self._may = bounds and k * width >= grid.bounds_products
        self._active = False
        self._until = grid.bounds_after
        self._wait = max(1, grid.bounds_after)
        if self._may and start is not None:  # bounds set at the first step's centres
            self.bounds, self._active = start, True

    def __call__(self, c: np.ndarray) -> list[LloydStats]:
        """Each block's sums (k, d) and masses (k,), float64, from centres ``c`` (k, d)."""
        d = c.shape[1]
        cct = augmented(c, self.tokens.dtype, out=self.cct.T).T  # [-2 c ; |c|^2]^T
        bounds = self._step_bounds(cct.shape[1])
        acc = grid_sums(self.tokens, self.w, cct, self.rows, self.threads, self.block_rows,
                        bounds, self.grid.parts)
        if (bounds is not None and bounds.pruned
                and bounds.computed > self.grid.bounds_stop * self.tokens.shape[0]):
            # Most rows moved: steps without bounds cost less for a while.
            self._active, self._until = False, self._wait
            self._wait *= 2
        # C-ordered, as every step's statistics (what the end of a step takes).
        return [LloydStats(np.ascontiguousarray(a[:, :d]), a[:, d].copy()) for a in acc]

    def _step_bounds(self, k: int) -> RowBounds | None:
        """The bounds this step keeps (started or restarted when due), or None."""
        if not self._may:
            return None
        if not self._active:
            if self._until > 0:
                self._until -= 1
                return None
            if self.bounds is None:
                self.bounds = RowBounds(self.tokens, k, self.grid.half_gaps)
            else:
                self.bounds.restart()
            self._active = True
        return self.bounds


def _arrays(block: Block) -> tuple[np.ndarray, np.ndarray | None]:
    """A dense CPU block's tokens ``[x ; 1]`` and weights as NumPy arrays (no copy)."""
    return block.tokens.numpy(), None if block.w is None else block.w.numpy()


def block_stats(block: Block, c: np.ndarray, grid: Grid = Grid()) -> LloydStats:
    """A dense CPU block's contribution to the step from centres ``c`` (k, d)."""
    tokens, w = _arrays(block)
    return GridStep(tokens, w, c.shape[0], None, bounds=False, grid=grid)(c)[0]


def cpu_score(block: Block, c: np.ndarray, other: np.ndarray | None):
    """A dense CPU block's weighted sum of squared distances to the nearest of ``c``
    (float64) by the final assignment's arithmetic (:func:`~skformer._fit.assign.labels_inertia`)
    and, with ``other`` centres, the (k * k,) contingency table."""
    tokens, w = _arrays(block)
    rows = tokens[:, : c.shape[1]]
    labels, inertia = labels_inertia(rows, c, w)
    if other is None:
        return inertia, None
    return inertia, contingency(labels, labels_inertia(rows, other, w)[0], c.shape[0])


class ResidentStep:
    """A run's step over data held in memory: its :class:`GridStep` (``grid_step``, with
    the run's row bounds), the blocks' sums merged by the pass's tree."""

    def __init__(self, grid_step: GridStep):
        self.grid_step = grid_step

    def __call__(self, c: np.ndarray) -> tuple[None, LloydStats]:
        return None, merge_tree(self.grid_step(c), sum_parts)


class CompiledBackend(Backend):
    """Dense rows on the CPU, stepped by the compiled kernels: all at once where the
    source holds them in memory (with row bounds), else block by block.

    Parameters
    ----------
    source : Source
        Dense rows on the CPU, in the fit frame.
    k : int
        The number of clusters.
    grid : Grid, default=Grid()
        The layout of the steps.

    Examples
    --------
    >>> import torch
    >>> from skformer._fit.sources import ArraySource
    >>> from skformer._fit.frame import Frame
    >>> src = ArraySource(np.array([[0.0], [1.0], [10.0]]), None, torch.device("cpu"))
    >>> src.set_frame(Frame(np.zeros(1), 0))
    >>> step = CompiledBackend(src, 2).stepper()
    >>> new, stats = step(np.array([[0.0], [9.0]]))
    >>> stats.mass.tolist()
    [2.0, 1.0]
    """

    def __init__(self, source: Source, k: int, *, grid: Grid = Grid()):
        self.source, self.k, self.grid = source, k, grid
        block = source.resident() if grid.resident else None
        self._resident = None if block is None else _arrays(block)
        self._norms: np.ndarray | None = None  # the rows' |x|^2, once costs keep bounds

    def stepper(self) -> Stepper:
        if self._resident is not None:
            return ResidentStep(GridStep(*self._resident, self.k, self.source.block_rows,
                                         grid=self.grid))
        return lambda c: (None, self.source.map_reduce(block_stats, sum_parts, c, self.grid))

    def stepper_from(self, state, c):
        if self._resident is None or not isinstance(state, RowBounds):
            return self.stepper()
        return ResidentStep(GridStep(*self._resident, self.k, self.source.block_rows,
                                     grid=self.grid,
                                     start=state.carried(c, self.grid.half_gaps)))

    def score(self, c, other=None):
        value, table = self.source.map_reduce(cpu_score, sum_parts, c, other)
        return float(value), table

    def norms(self) -> float:
        return float(self.source.map_reduce(dense_norms, sum_parts))

    def costs(self, c):
        return self._costs(c, keep=False)[0]

    def costs_and_state(self, c):
        # The state: the rows' bounds at ``c``, which a step would set anew.
        return self._costs(c, keep=True)

    def _costs(self, c: np.ndarray, keep: bool) -> tuple[CentreCosts, RowBounds | None]:
        if self._resident is None:
            return CentreCosts(*self.source.map_reduce(block_costs, sum_parts, c)), None
        tokens, w = self._resident
        rows = max(256, self.grid.chunk // c.shape[0])
        threads = cpu_threads() if tokens.shape[0] > rows else 1
        bounds = None
        if keep:
            if self._norms is None:
                x = tokens[:, : c.shape[1]]
                self._norms = np.einsum("ij,ij->i", x, x, dtype=np.float64)
            # No half-gaps: the run that starts from these bounds sets its own.
            bounds = RowBounds(tokens, c.shape[0], norms=self._norms)
        parts = grid_costs(tokens, w, c, rows, threads, self.source.block_rows, bounds)
        return CentreCosts(*merge_tree(parts, sum_parts)), bounds

