"""Lloyd's step on the CPU, in NumPy.

Dimension legend: ``m`` rows of a block, ``k`` clusters, ``d`` features.

The fused kernel (:func:`~skformer.nn.exact_step`) computes a block's step in about two
dozen torch operations over the whole block. On the CPU this module computes the same
step with NumPy instead, in one of two ways:

- **a small block**, at most :data:`SMALL` distances (``m * k``; each of iris, wine,
  breast_cancer and digits is one such block). There a torch operation's fixed cost (a
  few microseconds, and as much again of Python around it) exceeds its arithmetic: a step
  of iris took about 220 us in the fused kernel and 50 here. The nearest centre of each
  row is the argmin of one product of the tokens ``[x ; 1]`` with ``[-2 c ; |c|^2]``; each
  cluster's sum and mass, a scatter-add of the (weighted) tokens in row order (torch's
  ``index_add_``: on digits 65 us, where NumPy's product with one-hot labels took 160).
- **a larger block**, in chunks of about :data:`CHUNK` distances (their distances and
  codes stay in a core's cache between the operations, as KMeans' chunks of 256 rows
  do), consecutive chunks on each of KMeans' threads. Per chunk, the fused kernel's
  arithmetic: the distances centres-major, their minimum over the centres, one-hot codes
  from the equality with it (exact ties: the first centre), weighted, and one product
  with the tokens. Per step against KMeans' iteration, alternating in one run on a 2-core
  AMD EPYC: n = 1e5, d = 32, k = 10: 1.6x (float64) and 2.2x (float32) against the fused
  kernel's 2.7x and 2.9x; d = 8: 2.2x and 1.7x against 2.5x and 2.3x; k = 100 (float32):
  1.6x against 2.0x; n = 1e6: 1.9x and 1.7x (k = 10, 100) against 2.2x and 2.0x. Chunks
  of 2**16 distances were slower (2.8x at d = 8), and so were chunks handed to the
  threads one by one (3.7x).

Where numba is importable, every dense CPU block is stepped by the compiled kernel
(:mod:`.compiled`, KMeans' loop: one product per 256 rows, each row added to its
cluster's float64 sums) on the same grid of chunks; the two NumPy ways above are its
fallback (no numba, or ``SKFORMER_COMPILED=0``).

The NumPy ways sum in the data's dtype within a block (small) or a chunk; every way
returns float64 sums, added in chunk order whatever the number of threads (the fit adds
blocks in float64, as it does the fused kernel's). Which way a block takes depends on
its shape (and on numba being there) only, and the blocks of every container follow
one grid of rows (:func:`~skformer._fit.sources.grid_rows`), so every container still
gives the same result. Blocks on a GPU take the fused kernel.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

from ..nn.threads import ordered_map
from . import compiled
from .assign import labels_inertia
from .sources import Block

__all__ = ["BOUNDS_AFTER", "BOUNDS_PRODUCTS", "BOUNDS_STOP", "CHUNK", "SMALL", "GridStep",
           "block_arrays", "block_lloyd_sums", "cpu_step", "dense_score", "grid_lloyd_sums",
           "is_small", "lloyd_sums", "small_score"]

# Largest block (rows x centres) of the small step. Small step / fused step, one run on
# 2 cores: 0.3-0.4 on iris and wine, 0.5 on breast_cancer, 0.7 on digits (1797 x 10),
# 1.0-1.25 at 5000 x 10, 1.5 at 10000 x 10.
SMALL = 2**15
# Distances (rows x centres) per chunk of a larger block (see the module's docstring).
CHUNK = 2**17
# Steps of a run before the compiled step keeps the rows' bounds (GridStep), and the
# fewest products per row (k (d + 1)) it keeps them for: below, a row's product costs
# no more than its bounds' upkeep. Fits against KMeans' on two threads, bounds against
# none: k (d + 1) = 90 (n = 1e5, d = 8) 1.19 against 1.08; 330 (d = 32) 1.03 against
# 1.00 and 1.04 against 1.06, in `skformer bench kmeans` 1.08 to 1.17 against 1.00 to
# 1.09; 650 (digits) 1.11 against 1.19, at 1e5 0.91 against 1.07 (mixture) and 1.05
# against 1.05 (blobs); 3300 (n = 1e5, k = 100) 0.79 against 1.03 (blobs), 0.68 against
# 1.02 (mixture), 0.86 against 1.02 (uniform, 300 steps).
BOUNDS_AFTER = 2
BOUNDS_PRODUCTS = 512
# A step that kept bounds but computed the products of more than this share of the rows
# stops them; they start again after BOUNDS_AFTER steps, then twice as many after each
# stop (uniform data at n = 1e5, k = 100, steps 20 to 40 with bounds throughout: 1.33x
# KMeans' iteration, against 0.99x without).
BOUNDS_STOP = 0.5

_TORCH = {np.float32: torch.float32, np.float64: torch.float64}


def is_small(block: Block, n_clusters: int) -> bool:
    """Whether ``block`` is a dense block on the CPU of at most :data:`SMALL` distances."""
    return (block.tokens is not None and block.tokens.device.type == "cpu"
            and block.tokens.shape[0] * n_clusters <= SMALL)


def cpu_step(block: Block) -> bool:
    """Whether this module steps ``block`` (compiled, or in NumPy): a dense block on the
    CPU."""
    return block.tokens is not None and block.tokens.device.type == "cpu"


def _augmented(c: np.ndarray, dtype, out: np.ndarray | None = None) -> np.ndarray:
    """``[-2 c ; |c|^2]`` (k, d + 1) of centres ``c`` (k, d), in ``dtype`` (into ``out``,
    any (k, d + 1) view of ``dtype``, where given)."""
    c = c.astype(dtype, copy=False)
    k, d = c.shape
    cc = np.empty((k, d + 1), dtype=dtype) if out is None else out
    np.multiply(c, -2, out=cc[:, :d])  # exact: a power of two
    np.einsum("ij,ij->i", c, c, out=cc[:, d])
    return cc


def _two_rows(t: np.ndarray) -> np.ndarray:
    """Rows ``t``, with a zero row below a single one: a matrix-vector product would sum
    in another order than a block's product, and a row's distances must not depend on
    its block."""
    return np.concatenate([t, np.zeros_like(t)]) if t.shape[0] == 1 else t


def _nearest(tokens: np.ndarray, cc: np.ndarray) -> np.ndarray:
    """Nearest centre (m,) of tokens ``[x ; 1]`` (m, d + 1) given ``cc = [-2 c ; |c|^2]``,
    lowest index on ties."""
    return (_two_rows(tokens) @ cc.T)[: tokens.shape[0]].argmin(1)


def lloyd_sums(tokens: np.ndarray, w: np.ndarray | None, c: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster weighted sums (k, d) and masses (k,), float64 arrays, of tokens
    ``[x ; 1]`` (m, d + 1) with weights ``w`` (m,) (None: 1) under their nearest of
    centres ``c`` (k, d): compiled (:mod:`.compiled`) where numba is importable, else
    the small step up to :data:`SMALL` distances, chunks beyond.

    Examples
    --------
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> sums, mass = lloyd_sums(t, None, np.array([[0.0], [9.0]]))
    >>> sums.ravel().tolist(), mass.tolist()
    ([1.0, 10.0], [2.0, 1.0])
    """
    return grid_lloyd_sums(tokens, w, c, None)[0]


def grid_lloyd_sums(tokens: np.ndarray, w: np.ndarray | None, c: np.ndarray,
                    block_rows: int | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`lloyd_sums` of each block of ``block_rows`` rows (None: all the rows as one
    block), each equal to a call on the block alone; compiled, all the blocks in one
    pass over the threads.

    Examples
    --------
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> [mass.tolist() for _, mass in grid_lloyd_sums(t, None, np.array([[0.0], [9.0]]), 2)]
    [[2.0, 0.0], [0.0, 1.0]]
    """
    return GridStep(tokens, w, c.shape[0], block_rows, bounds=False)(c)


class GridStep:
    """:func:`grid_lloyd_sums` on the same rows at every step of a run: the grid, the
    weights and the centres' buffer set up once and, compiled, from the step after the
    first :data:`BOUNDS_AFTER` on, the rows' bounds kept from step to step
    (:class:`~skformer._fit.compiled.RowBounds`: the same sums, fewer products; with at
    least :data:`BOUNDS_PRODUCTS` products per row, not with ``bounds=False``). A step
    that computed most rows' products anyway (:data:`BOUNDS_STOP`) stops the bounds for
    a while, twice as long after each stop.

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
                 block_rows: int | None, *, bounds: bool = True):
        m, width = tokens.shape
        self.tokens, self.block_rows = tokens, block_rows
        self.rows = max(256, CHUNK // k)
        self.kernels = compiled.kernel()
        self.cct = np.empty((width, k), dtype=tokens.dtype)
        self.w, self.bounds, self.threads = w, None, 1
        # Whether the run may keep bounds, whether it keeps them now, and else how many
        # steps are left before it starts them (again) and the wait after a stop.
        self._may = bounds and k * width >= BOUNDS_PRODUCTS
        self._active = False
        self._until = self._wait = BOUNDS_AFTER
        if self.kernels is not None and m > self.rows:  # one chunk: no threads
            self.threads = _openmp_effective_n_threads()

    def __call__(self, c: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each block's sums (k, d) and masses (k,), float64, from centres ``c`` (k, d)."""
        d = c.shape[1]
        cct = _augmented(c, self.tokens.dtype, out=self.cct.T).T  # [-2 c ; |c|^2]^T
        if self.kernels is not None:
            bounds = self._step_bounds(cct.shape[1])
            acc = compiled.lloyd_sums(self.kernels, self.tokens, self.w, cct, self.rows,
                                      self.threads, self.block_rows, bounds)
            if (bounds is not None and bounds.pruned
                    and bounds.computed > BOUNDS_STOP * self.tokens.shape[0]):
                # Most rows moved: steps without bounds cost less for a while.
                self._active, self._until = False, self._wait
                self._wait *= 2
            # C-ordered, as every step's statistics (what the end of a step takes).
            return [(np.ascontiguousarray(a[:, :d]), a[:, d].copy()) for a in acc]
        tokens, w, cc = self.tokens, self.w, np.ascontiguousarray(cct.T)
        m = tokens.shape[0]
        block_rows = self.block_rows or max(m, 1)
        return [_numpy_sums(tokens[s : s + block_rows],
                            None if w is None else w[s : s + block_rows], cc, self.rows)
                for s in range(0, max(m, 1), block_rows)]

    def _step_bounds(self, k: int) -> compiled.RowBounds | None:
        """The bounds this step keeps (started or restarted when due), or None."""
        if not self._may or self.kernels is None:
            return None
        if not self._active:
            if self._until > 0:
                self._until -= 1
                return None
            if self.bounds is None:
                self.bounds = compiled.RowBounds(self.tokens, k)
            else:
                self.bounds.restart()
            self._active = True
        return self.bounds


def _numpy_sums(tokens: np.ndarray, w: np.ndarray | None, cc: np.ndarray, rows: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`lloyd_sums` of one block in NumPy: the small step up to :data:`SMALL`
    distances, chunks of ``rows`` rows beyond."""
    m, k, d = tokens.shape[0], cc.shape[0], cc.shape[1] - 1
    if m * k <= SMALL:
        acc = _scatter_sums(tokens, w, cc)
    else:
        starts = list(range(0, m, rows))
        threads = min(len(starts), _openmp_effective_n_threads())
        per = -(-len(starts) // threads)

        def run(group: list[int]) -> list[np.ndarray]:
            return [_chunk_sums(tokens[s : s + rows], None if w is None else w[s : s + rows],
                                cc) for s in group]

        acc = None
        groups = [starts[i : i + per] for i in range(0, len(starts), per)]
        for parts in ordered_map(run, groups, len(groups)):
            for p in parts:  # chunk by chunk, in order, whatever the threads
                acc = p if acc is None else acc + p
    return acc[:, :d], acc[:, d]


def _scatter_sums(tokens: np.ndarray, w: np.ndarray | None, cc: np.ndarray) -> np.ndarray:
    """The small step's sums (k, d + 1), float64: the argmin, then a scatter-add of the
    (weighted) tokens in row order, in the data's dtype."""
    labels = torch.from_numpy(_nearest(tokens, cc))
    values = tokens if w is None else tokens * w.astype(tokens.dtype)[:, None]
    acc = torch.zeros(cc.shape, dtype=_TORCH[tokens.dtype.type])
    acc.index_add_(0, labels, torch.from_numpy(values))
    return acc.numpy().astype(np.float64)


def _chunk_sums(t: np.ndarray, w: np.ndarray | None, cc: np.ndarray) -> np.ndarray:
    """A chunk's sums (k, d + 1), float64: the distances centres-major (k, r), the
    one-hot codes of their minimum over the centres (exact ties: the first centre),
    weighted, and one product with the tokens ``t`` (r, d + 1), in the data's dtype."""
    r = t.shape[0]
    dist = (cc @ _two_rows(t).T)[:, :r]
    codes = np.empty_like(dist)
    np.equal(dist, dist.min(axis=0), out=codes, casting="unsafe")
    if codes.sum() != r:  # exact ties: the first centre only
        codes *= np.cumsum(codes, axis=0) == 1
    if w is not None:
        codes *= w.astype(t.dtype)
    return (codes @ t).astype(np.float64)


def block_arrays(block: Block) -> tuple[np.ndarray, np.ndarray | None]:
    """A dense block's tokens ``[x ; 1]`` and weights as NumPy arrays (no copy)."""
    return block.tokens.numpy(), None if block.w is None else block.w.numpy()


def block_lloyd_sums(block: Block, c: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """:func:`lloyd_sums` of a block that :func:`cpu_step` takes, from centres ``c``
    (k, d) (fit frame, on the CPU)."""
    return lloyd_sums(*block_arrays(block), c.numpy())


def small_score(block: Block, c: torch.Tensor, other: torch.Tensor | None):
    """A small block's weighted sum of squared distances to the nearest of ``c`` (a
    float64 scalar tensor; each distance from the literal differences in the data's
    dtype) and, with ``other`` centres, the (k * k,) contingency table of the two
    nearest-centre assignments."""
    tokens, w = block_arrays(block)
    cn = c.numpy().astype(tokens.dtype, copy=False)
    k, d = cn.shape
    labels = _nearest(tokens, _augmented(cn, tokens.dtype))
    diff = tokens[:, :d] - cn[labels]
    sq = np.einsum("ij,ij->i", diff, diff).astype(np.float64)
    if w is not None:
        sq *= w
    inertia = torch.tensor(float(sq.sum()), dtype=torch.float64)
    if other is None:
        return inertia, None
    labels2 = _nearest(tokens, _augmented(other.numpy(), tokens.dtype))
    return inertia, torch.from_numpy(np.bincount(labels * k + labels2, minlength=k * k))


def dense_score(block: Block, c: torch.Tensor, other: torch.Tensor | None):
    """:func:`small_score` of a larger dense block on the CPU, by the final assignment's
    arithmetic (:func:`~skformer._fit.assign.labels_inertia`: each row's nearest centre
    by the literal differences, compiled where numba is): a float64 scalar tensor and,
    with ``other`` centres, the (k * k,) contingency table."""
    tokens, w = block_arrays(block)
    k, d = c.shape
    rows = tokens[:, :d]
    labels, inertia = labels_inertia(rows, c.numpy(), w)
    inertia = torch.tensor(inertia, dtype=torch.float64)
    if other is None:
        return inertia, None
    labels2, _ = labels_inertia(rows, other.numpy(), w)
    table = np.bincount(labels.astype(np.int64) * k + labels2, minlength=k * k)
    return inertia, torch.from_numpy(table)
