"""Lloyd's step and the final assignment on the CPU, compiled with numba: KMeans' loop,
in chunks on a fixed grid.

Dimension legend: ``m`` rows of a block, ``k`` clusters, ``d`` features, ``D = d + 1``
token width.

The NumPy step (:mod:`.cpu`) makes two matrix products per chunk (the distances, then
the sums as a product of one-hot codes with the tokens) and half a dozen passes over a
(k, rows) array between them. KMeans' Cython loop makes one product per 256 rows and
adds each row to its cluster's sum directly. Compiled, the exact step does the same
(:func:`chunk_sums`): per 256 rows, one product of the tokens ``[x ; 1]`` with
``[-2 c ; |c|^2]`` (BLAS, as KMeans; the same distances as the NumPy step and the fused
kernel), then per row the nearest centre (the first on exact ties) and its (weighted)
token added to that cluster's float64 sums. The last column of a token is 1, so the sums
carry the masses.

The grid is the NumPy step's: each block of a pass
(:func:`~skformer._fit.sources.grid_rows`) in chunks of ``rows`` rows from its start,
whatever the number of threads; each chunk's sums are its own, and a block's chunks are
added in order (:func:`add_in_order`). Data held in memory are stepped in one pass over
all their blocks (:func:`lloyd_sums` with ``block_rows``), each block's sums as if it
were stepped alone: one hand-over to the threads per step instead of one per block (at
n = 1e6, d = 32, eight blocks, on two threads: 0.74x the time of a call per block at
k = 10, 0.99x at k = 100). Consecutive chunks go to each of KMeans' threads (numba's
kernels release the GIL; no numba threading layer is used).

Per step against KMeans' iteration, alternating in one run on a 2-core AMD EPYC,
d = 32, float32 (before the one pass over all blocks): n = 1e5 1.06x (k = 10) and 0.99x
(k = 100), n = 1e6 0.92x and 0.86x, where the NumPy step took 2.35x, 2.09x, 2.21x and
1.85x.

Across the steps of a run on data held in memory, the kernel may keep bounds on each
row's distances (:class:`RowBounds`, Hamerly's algorithm) and skip the products of the
rows whose nearest centre they prove unchanged: the same sums, to the last bit.

The final assignment (:func:`~skformer._fit.assign.labels_inertia`) has two kernels
here: :func:`literal_nearest` (the literal differences, small data) and
:func:`certified_nearest` (one product per 256 rows and its certificates).

Cost to a user: importing numba and loading the kernels (about 0.7 s and 28 MB, on the
first fit in a process; importing skformer does not import numba), and compiling the
kernels a fit needs once per dtype on a machine, kept on disk beside this file or in
the user's cache folder (:mod:`.kernel_cache`; a damaged, full or unwritable cache costs
a compile and a warning, never the fit): the first digits fit 5.5 s in float64, then
2.7 s more for float32 (2-core AMD EPYC; 2.2 and 1.4 s before the step kept bounds,
whose kernel takes about 3.5 s of it to compile; each kernel compiles one signature per
dtype, and most of the first one's time is numba compiling its own helpers, once per
process). Set the environment variable ``SKFORMER_COMPILED=0``
to use the NumPy arithmetic instead; without numba it is used anyway. Results differ
from the NumPy step's in the last bits (float64 sums of rows instead of the data's dtype
per chunk), and are bitwise reproducible with either.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable

import numpy as np

from ..nn.threads import ordered_map

__all__ = ["NO_WEIGHTS", "RowBounds", "add_in_order", "certified_nearest", "chunk_sums",
           "finish_step", "grid_bounds", "kernel", "literal_nearest", "lloyd_sums",
           "move_bounds"]

logger = logging.getLogger("skformer")

# Rows per product: their distances (256 x k) stay in a core's cache, as KMeans' do.
_ROWS = 256
# Rows per window of the step: the rows that need products are gathered from it.
_WINDOW = 8 * _ROWS
# Below this a squared distance may hold underflowed squares (see literal_nearest).
_TINY = 2.0**-900
# Most bytes of per-chunk sums one task holds (a few tasks are in flight at a time).
_PARTS = 2**22
# The kernels' weights where there are none: every row counts 1.
NO_WEIGHTS = np.empty(0)
# A bound moved outward (up) or inward (down) past a float64 rounding or two.
_OUT = 1.0 + 4 * np.finfo(np.float64).eps
_IN = 1.0 - 4 * np.finfo(np.float64).eps


def chunk_sums(t, w, cct, edges, first, stop, out, labels, rows,
               moves, slack, prune):  # pragma: no cover - compiled
    """Sums of chunks ``first`` to ``stop - 1`` of tokens ``t`` (m, D) under their
    nearest centre, chunk ``i`` being rows ``edges[i]:edges[i + 1]``, into ``out``
    (stop - first, k, D), float64 zeros;
    ``w`` (m,) float64 weights or an empty array (all 1); ``cct = [-2 c ; |c|^2]^T``
    (D, k), of ``t``'s dtype.

    With :class:`RowBounds`' arrays (``labels`` (m,) int32, ``rows`` (3, m) float64,
    ``moves`` (2, k) float64, ``slack`` (2,) float64; empty arrays: none kept), each
    row's nearest centre and the bounds of its distances are kept for the next step;
    with ``prune``, a row whose bounds, moved by the centres' shifts, prove its nearest
    centre unchanged keeps it without a product. Returns the number of rows whose
    products were computed. Compiled by :func:`kernel`; plain Python (slow) as it
    stands."""
    width = t.shape[1]
    k = cct.shape[1]
    keep = labels.shape[0] > 0
    dist = np.empty((_ROWS, k), dtype=t.dtype)
    gathered = np.empty((_ROWS if prune else 0, width), dtype=t.dtype)
    todo = np.empty(_WINDOW, dtype=np.int64)
    nearest = np.empty(_WINDOW, dtype=np.int64)
    computed = 0
    for chunk in range(first, stop):
        acc = out[chunk - first]
        end = edges[chunk + 1]
        # Windows of rows: which rows need their products, the products 256 rows at a
        # time (the first rows of a window, or the rows that need them, gathered), then
        # every row added to its centre's sums, in row order, while the window is in
        # cache.
        for a in range(edges[chunk], end, _WINDOW):
            b = min(end, a + _WINDOW)
            need = 0
            for row in range(a, b):
                if prune:
                    # Hamerly's test: the distance to the row's centre is at most `up`,
                    # to any other at least `down`; past the rounding of the products
                    # (the margin, twice their bound) its nearest centre is the same.
                    label = labels[row]
                    up = (rows[0, row] + moves[0, label]) * _OUT
                    down = (rows[1, row] - moves[1, label]) * _IN
                    rows[0, row] = up
                    rows[1, row] = down
                    if down > up and (down * down * _IN - up * up * _OUT
                                      > slack[0] * rows[2, row] + slack[1]):
                        nearest[row - a] = label
                        continue
                todo[need] = row
                need += 1
            computed += need
            for g in range(0, need, _ROWS):
                r = min(need, g + _ROWS) - g
                start = todo[g]
                block = t[start : start + r]
                if todo[g + r - 1] - start != r - 1:  # not consecutive rows: gathered
                    for p in range(r):
                        gathered[p] = t[todo[g + p]]
                    block = gathered[:r]
                np.dot(block, cct, dist[:r])  # one call site: compiled once
                for p in range(r):
                    best = 0
                    low = dist[p, 0]
                    for j in range(1, k):
                        if dist[p, j] < low:
                            low = dist[p, j]
                            best = j
                    row = todo[g + p]
                    nearest[row - a] = best
                    if not keep:
                        continue
                    # The second lowest value, in a pass of its own (one loop keeping
                    # both took twice the step's time at k = 100).
                    second = np.inf
                    if k > 1:
                        other = dist[p, 1 if best == 0 else 0]
                        for j in range(best):
                            if dist[p, j] < other:
                                other = dist[p, j]
                        for j in range(best + 1, k):
                            if dist[p, j] < other:
                                other = dist[p, j]
                        second = np.float64(other)
                    labels[row] = best
                    sq = rows[2, row]
                    margin = slack[0] * sq + slack[1]
                    rows[0, row] = np.sqrt(max(0.0, sq + low + margin)) * _OUT
                    rows[1, row] = np.sqrt(max(0.0, sq + second - margin)) * _IN
            if w.shape[0] == 0:
                for i in range(b - a):
                    row = t[a + i]
                    sums = acc[nearest[i]]
                    for q in range(width):
                        sums[q] += row[q]
            else:
                for i in range(b - a):
                    row = t[a + i]
                    sums = acc[nearest[i]]
                    weight = np.float64(w[a + i])
                    for q in range(width):
                        sums[q] += weight * row[q]
    return computed


def literal_nearest(x, c, labels, sq):  # pragma: no cover - compiled
    """The nearest of centres ``c`` (k, d) to each row of ``x`` (m, d), both float64,
    by the literal differences (lowest index on ties), into ``labels`` (m,), and its
    squared distance into ``sq`` (m,). Returns the number of rows whose nearest squared
    distance is not in ``[2**-900, inf)``: a square may have overflowed or underflowed
    there, and the caller takes those rows' answers from scaled arithmetic. Compiled by
    :func:`kernel`."""
    m, d = x.shape
    k = c.shape[0]
    unsure = 0
    for i in range(m):
        best = np.inf
        label = 0
        for j in range(k):
            total = 0.0
            for q in range(d):
                diff = x[i, q] - c[j, q]
                total += diff * diff
            if total < best:
                best = total
                label = j
        labels[i] = label
        sq[i] = best
        if not _TINY <= best < np.inf:
            unsure += 1
    return unsure


def certified_nearest(x, scale, shift, cst, c_sq, c_norm, w, factor, floor, labels,
                      certain, exact):  # pragma: no cover - compiled
    """The certified assignment of :func:`~skformer._fit.assign._nearest_chunk` in one
    pass per 256 rows of ``x`` (m, d), any float dtype.

    Each row is brought to float64, scaled by ``scale`` (a power of two) and translated
    by ``shift`` (d,); one product with the translated centres ``cst`` (d, k), whose
    squared norms are ``c_sq`` (k,) and norms ``c_norm`` (k,), gives ``|c|^2 - 2 x.c``.
    Into ``labels`` (m,) the lowest value's centre (the first on ties); into ``certain``
    (m,) whether it is certainly the nearest, each value being within ``factor * (|x| +
    |c_j|)^2 + floor`` of the true one (the gap to the second value beyond twice the
    largest centre's bound, else every other value less its own bound above the chosen
    one plus its bound; exact ties never); into ``exact`` (m,) whether also ``|x|^2``
    plus that value is the row's squared distance within 1e-9. Returns the (weighted by
    ``w`` (m,), or 1 where ``w`` is empty) sum of those distances over the ``exact``
    rows, in the scaled frame. Compiled by :func:`kernel`."""
    m, d = x.shape
    k = cst.shape[1]
    top = 0.0
    for j in range(k):
        top = max(top, c_norm[j])
    xs = np.empty((_ROWS, d))
    near = np.empty((_ROWS, k))
    total = 0.0
    for a in range(0, m, _ROWS):
        r = min(m, a + _ROWS) - a
        for i in range(r):
            for q in range(d):
                xs[i, q] = np.float64(x[a + i, q]) * scale - shift[q]
        np.dot(xs[:r], cst, near[:r])
        for i in range(r):
            row = a + i
            x_sq = 0.0
            for q in range(d):
                x_sq += xs[i, q] * xs[i, q]
            x_norm = np.sqrt(x_sq)
            low = np.inf
            second = np.inf
            label = 0
            for j in range(k):
                value = c_sq[j] - 2.0 * near[i, j]
                near[i, j] = value
                if value < low:
                    second = low
                    low = value
                    label = j
                elif value < second:
                    second = value
            sure = second - low > 2.0 * (factor * (x_norm + top) ** 2 + floor)
            if not sure and second > low:  # no exact tie: each centre's own bound
                high = low + factor * (x_norm + c_norm[label]) ** 2 + floor
                sure = True
                for j in range(k):
                    if j != label and near[i, j] - (factor * (x_norm + c_norm[j]) ** 2
                                                    + floor) <= high:
                        sure = False
                        break
            labels[row] = label
            certain[row] = sure
            dist = x_sq + low
            ok = sure and factor * (x_norm + top) ** 2 + floor <= 1e-9 * dist
            exact[row] = ok
            if ok:
                total += dist * (w[row] if w.shape[0] else 1.0)
    return total


def move_bounds(cct, centres, moves, slack, factors):  # pragma: no cover - compiled
    """:meth:`RowBounds.advance` of centres ``cct = [-2 c ; |c|^2]^T`` (D, k): the
    margin into ``slack`` (2,), each centre's shift from ``centres`` (k, d) float64 (then
    overwritten by ``c``) and the largest shift of the others into ``moves`` (2, k);
    ``factors``: the margin's slope, floor, the norms' and the shifts' rounding factors.
    Compiled by :func:`kernel`."""
    width, k = cct.shape
    d = width - 1
    top = 0.0
    for j in range(k):
        top = max(top, np.float64(cct[d, j]))
    slack[0] = factors[0]
    slack[1] = factors[0] * top * factors[2] + factors[1]
    largest = 0.0
    second = 0.0
    first = 0
    for j in range(k):
        total = 0.0
        for q in range(d):
            c = np.float64(cct[q, j]) * -0.5  # exact: a power of two
            diff = c - centres[j, q]
            total += diff * diff
            centres[j, q] = c
        shift = np.sqrt(total) * factors[3]
        moves[0, j] = shift
        if shift > largest:
            second = largest
            largest = shift
            first = j
        elif shift > second:
            second = shift
    for j in range(k):
        moves[1, j] = largest
    moves[1, first] = second


def finish_step(c, sums, mass, previous_sums, previous_mass, new,
                fill):  # pragma: no cover - compiled
    """The end of a Lloyd step from centres ``c`` (k, d): with ``fill``, the new centres
    into ``new`` (k, d), ``c``'s dtype (each cluster's float64 ``sums`` (k, d) over its
    ``mass`` (k,), rounded once; its centre in ``c`` where the mass is 0). Returns the
    squared shift from ``c`` to ``new`` (float64, summed in order) and whether the
    statistics equal the previous step's (``previous_sums``, ``previous_mass``; empty
    arrays: none). Compiled by :func:`kernel`."""
    k, d = c.shape
    shift = 0.0
    for j in range(k):
        for q in range(d):
            if fill:
                new[j, q] = sums[j, q] / mass[j] if mass[j] > 0 else c[j, q]
            diff = np.float64(new[j, q]) - np.float64(c[j, q])
            shift += diff * diff
    same = previous_mass.shape[0] == k
    for j in range(k):
        if not same:
            break
        if mass[j] != previous_mass[j]:
            same = False
        for q in range(d):
            if sums[j, q] != previous_sums[j, q]:
                same = False
    return shift, same


def add_in_order(acc, parts):  # pragma: no cover - compiled
    """``acc + parts[0] + parts[1] + ...`` (k, D) into ``acc``, in that order. Compiled
    by :func:`kernel`."""
    for p in range(parts.shape[0]):
        acc += parts[p]


class _Kernels:
    """The compiled :func:`chunk_sums`, :func:`move_bounds`, :func:`finish_step`,
    :func:`add_in_order`, :func:`literal_nearest` and :func:`certified_nearest`."""

    def __init__(self, jit: Callable):
        self.chunk_sums = jit(chunk_sums)
        self.add_in_order = jit(add_in_order)
        self.move_bounds = jit(move_bounds)
        self.finish_step = jit(finish_step)
        self.literal_nearest = jit(literal_nearest)
        self.certified_nearest = jit(certified_nearest)


@functools.cache
def kernel() -> _Kernels | None:
    """The compiled kernels, or None where numba cannot be imported, its JIT is off
    (``NUMBA_DISABLE_JIT``) or ``SKFORMER_COMPILED=0``. Compiled on first call per
    dtype, cached on disk (:mod:`.kernel_cache`: a damaged, full or unwritable cache
    costs a compile and one warning, never the fit)."""
    if os.environ.get("SKFORMER_COMPILED", "1").strip() == "0":
        return None
    try:
        import numba
    except ImportError:
        logger.debug("numba is not importable: the CPU step runs in NumPy.")
        return None
    if numba.config.DISABLE_JIT:
        return None
    from . import kernel_cache

    return _Kernels(kernel_cache.jit(numba, nogil=True))


class RowBounds:
    """Bounds on each row's distances to the centres, kept across the steps of one run
    (Hamerly's algorithm), so a step computes the products of only the rows whose
    nearest centre may have changed.

    After a step, a row's distance to its nearest centre is at most ``upper`` and to
    every other centre at least ``lower``: bounds on the exact distances, from the
    computed values ``|x|^2 + |c|^2 - 2 x.c`` widened by the margin ``4 (d + 8) eps
    (|x|^2 + max |c|^2)`` (``eps`` of the data's dtype; at least twice the rounding of
    those values, whatever the order of the sums). When the centres move, ``upper``
    grows by the row's centre's shift and ``lower`` shrinks by the largest shift of the
    others. A row whose ``lower^2 - upper^2`` then exceeds the margin of the new centres
    has the same nearest centre by the step's own arithmetic, strictly (no tie), so it
    is not recomputed: every step's assignment, sums and centres are those of the full
    products, bit for bit. Holds 28 bytes per row.

    Parameters
    ----------
    tokens : ndarray of shape (m, d + 1)
        The rows of the run, as tokens ``[x ; 1]`` (float32 or float64).
    k : int
        The number of centres.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> cct = np.array([[-0.0, -18.0], [0.0, 81.0]])          # centres 0 and 9
    >>> bounds = RowBounds(t, 2)
    >>> lloyd_sums(kernel(), t, None, cct, 256, 1, bounds=bounds)[0, :, 1]   # masses
    array([2., 1.])
    >>> bounds.labels
    array([0, 0, 1], dtype=int32)
    """

    def __init__(self, tokens: np.ndarray, k: int):
        m, width = tokens.shape
        d = width - 1
        info = np.finfo(tokens.dtype)
        self.labels = np.zeros(m, dtype=np.int32)
        self.rows = np.zeros((3, m))
        """``upper``, ``lower`` and ``|x|^2`` of each row (float64)."""
        x = tokens[:, :d]
        np.einsum("ij,ij->i", x, x, out=self.rows[2], dtype=np.float64)
        self.moves = np.zeros((2, k))
        """Each centre's shift, and the largest shift of the other centres."""
        self.slack = np.zeros(2)
        """The margin of a row: ``slack[0] |x|^2 + slack[1]``."""
        self._factors = np.array([
            4.0 * (d + 8) * float(info.eps),  # the margin's slope and floor
            4.0 * (d + 8) * float(info.tiny),
            1.0 + 2.0 * (d + 2) * float(info.eps),  # |c|^2 as computed, rounded up
            1.0 + 4.0 * (d + 2) * float(np.finfo(np.float64).eps),  # shifts, up
        ])
        self._centres = np.zeros((k, d))
        self._started = False
        self.pruned = False
        """Whether the last step could skip rows (it was not the first since a start)."""
        self.computed = 0
        """Rows whose products the last step computed."""

    def advance(self, cct: np.ndarray) -> bool:
        """Set the margins and moves for a step from centres ``cct = [-2 c ; |c|^2]^T``
        (D, k); whether the step may skip rows (not on the first step since the bounds
        were made or restarted)."""
        kernel().move_bounds(cct, self._centres, self.moves, self.slack, self._factors)
        self.pruned, self._started = self._started, True
        return self.pruned

    def restart(self) -> None:
        """Forget the bounds (steps ran without them): the next step computes every
        product and sets them anew."""
        self._started = False


# The kernel's arguments where no bounds are kept.
_NO_BOUNDS = (np.empty(0, dtype=np.int32), np.empty((3, 0)), np.empty((2, 0)), np.zeros(2))


@functools.lru_cache(maxsize=16)
def grid_bounds(m: int, rows: int, block_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The chunks of ``m`` rows on a grid of blocks of ``block_rows`` rows, each block in
    chunks of ``rows`` rows from its start: the chunks' bounds (n_chunks + 1,) and the
    block of each chunk (n_chunks,), read-only (kept for the next steps of a fit).

    Examples
    --------
    >>> bounds, block = grid_bounds(10, 3, 5)
    >>> bounds.tolist(), block.tolist()
    ([0, 3, 5, 8, 10], [0, 0, 1, 1])
    """
    starts = [np.arange(s, min(m, s + block_rows), rows)
              for s in range(0, m, block_rows)] or [np.zeros(0, np.int64)]
    bounds = np.append(np.concatenate(starts), m).astype(np.int64)
    block = np.repeat(np.arange(len(starts)), [len(c) for c in starts])
    bounds.setflags(write=False)
    block.setflags(write=False)
    return bounds, block


def lloyd_sums(kernels: _Kernels, tokens: np.ndarray, w: np.ndarray | None,
               cct: np.ndarray, rows: int, threads: int, block_rows: int | None = None,
               bounds: RowBounds | None = None) -> np.ndarray:
    """Per-cluster sums (b, k, D), float64, of the ``b`` blocks of ``block_rows`` rows
    (None: one block) of tokens ``[x ; 1]`` (m, D) with weights ``w`` (m,) (None: 1)
    under their nearest of the centres ``cct = [-2 c ; |c|^2]^T`` (D, k), C-ordered
    (the norms as KMeans computes them, so near ties fall as in its loop); the last
    column holds the masses. Each block is summed in chunks of ``rows`` rows from its
    start, chunk by chunk in order, so a block's sums are those of a call on the block
    alone; the chunks of all the blocks are shared among ``threads`` threads in one
    pass.
    ``bounds``: the run's :class:`RowBounds` of ``tokens`` (the same sums, fewer
    products from the second step of the run on).

    Examples
    --------
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> cct = np.array([[-0.0, -18.0], [0.0, 81.0]])          # centres 0 and 9
    >>> lloyd_sums(kernel(), t, None, cct, rows=256, threads=1)
    array([[[ 1.,  2.],
            [10.,  1.]]])
    >>> lloyd_sums(kernel(), t, None, cct, rows=256, threads=1, block_rows=2)[1]
    array([[ 0.,  0.],
           [10.,  1.]])
    """
    m = tokens.shape[0]
    width, k = cct.shape
    wt = NO_WEIGHTS if w is None else np.ascontiguousarray(w, np.float64)
    prune = False if bounds is None else bounds.advance(cct)
    kept = _NO_BOUNDS if bounds is None else (bounds.labels, bounds.rows, bounds.moves,
                                              bounds.slack)
    grid, block = grid_bounds(m, rows, block_rows or m)
    if len(block) <= 1:  # one chunk: no tasks
        out = np.zeros((1, k, width))
        computed = kernels.chunk_sums(tokens, wt, cct, grid, 0, len(block), out, *kept,
                                      prune)
        if bounds is not None:
            bounds.computed = computed
        return out
    chunks = len(block)
    # Consecutive chunks per task, as many tasks for each thread, each task's sums at
    # most _PARTS bytes.
    threads = max(1, threads)
    rounds = -(-chunks // (threads * max(1, _PARTS // (8 * k * width))))
    per = max(1, -(-chunks // (threads * rounds)))

    def run(first: int) -> tuple[np.ndarray, int]:
        stop = min(chunks, first + per)
        parts = np.zeros((stop - first, k, width))
        return parts, kernels.chunk_sums(tokens, wt, cct, grid, first, stop, parts, *kept,
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
            kernels.add_in_order(acc[owner[lo]], parts[lo:hi])
    if bounds is not None:
        bounds.computed = computed
    return acc
