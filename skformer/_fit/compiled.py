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

The final assignment (:func:`~skformer._fit.assign.labels_inertia`) has two kernels
here: :func:`literal_nearest` (the literal differences, small data) and
:func:`certified_nearest` (one product per 256 rows and its certificates).

Cost to a user: importing numba and loading the kernels (about 0.7 s and 28 MB, on the
first fit in a process; importing skformer does not import numba), and compiling the
kernels a fit needs once per dtype on a machine (2 to 3 s), kept on disk beside this
file or in the user's cache folder. Set the environment variable ``SKFORMER_COMPILED=0``
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

__all__ = ["NO_WEIGHTS", "add_in_order", "certified_nearest", "chunk_sums", "grid_bounds",
           "kernel", "literal_nearest", "lloyd_sums"]

logger = logging.getLogger("skformer")

# Rows per product: their distances (256 x k) stay in a core's cache, as KMeans' do.
_ROWS = 256
# Below this a squared distance may hold underflowed squares (see literal_nearest).
_TINY = 2.0**-900
# Most bytes of per-chunk sums one task holds (a few tasks are in flight at a time).
_PARTS = 2**22
# The kernels' weights where there are none: every row counts 1.
NO_WEIGHTS = np.empty(0)


def chunk_sums(t, w, cct, bounds, first, stop, out):  # pragma: no cover - compiled
    """Sums of chunks ``first`` to ``stop - 1`` of tokens ``t`` (m, D) under their
    nearest centre, chunk ``i`` being rows ``bounds[i]:bounds[i + 1]``, into ``out``
    (stop - first, k, D), float64 zeros;
    ``w`` (m,) float64 weights or an empty array (all 1); ``cct = [-2 c ; |c|^2]^T``
    (D, k), of ``t``'s dtype. Compiled by :func:`kernel`; plain Python (slow) as it
    stands."""
    width = t.shape[1]
    k = cct.shape[1]
    dist = np.empty((_ROWS, k), dtype=t.dtype)
    nearest = np.empty(_ROWS, dtype=np.int64)
    for chunk in range(first, stop):
        acc = out[chunk - first]
        end = bounds[chunk + 1]
        for a in range(bounds[chunk], end, _ROWS):
            b = min(end, a + _ROWS)
            near = dist[: b - a]
            np.dot(t[a:b], cct, near)
            # The rows' nearest centres first, then their sums, with no test inside
            # the loop over a row (on two threads, n = 1e6, d = 32: 4 % faster than one
            # loop doing both at k = 100, level at k = 10).
            for i in range(b - a):
                best = 0
                low = near[i, 0]
                for j in range(1, k):
                    if near[i, j] < low:
                        low = near[i, j]
                        best = j
                nearest[i] = best
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


def add_in_order(acc, parts):  # pragma: no cover - compiled
    """``acc + parts[0] + parts[1] + ...`` (k, D) into ``acc``, in that order. Compiled
    by :func:`kernel`."""
    for p in range(parts.shape[0]):
        acc += parts[p]


class _Kernels:
    """The compiled :func:`chunk_sums`, :func:`add_in_order`, :func:`literal_nearest`
    and :func:`certified_nearest`."""

    def __init__(self, jit: Callable):
        self.chunk_sums = jit(chunk_sums)
        self.add_in_order = jit(add_in_order)
        self.literal_nearest = jit(literal_nearest)
        self.certified_nearest = jit(certified_nearest)


@functools.cache
def kernel() -> _Kernels | None:
    """The compiled kernels, or None where numba cannot be imported, its JIT is off
    (``NUMBA_DISABLE_JIT``) or ``SKFORMER_COMPILED=0``. Compiled on first call per
    dtype, cached on disk where numba finds a writable place."""
    if os.environ.get("SKFORMER_COMPILED", "1").strip() == "0":
        return None
    try:
        import numba
    except ImportError:
        logger.debug("numba is not importable: the CPU step runs in NumPy.")
        return None
    if numba.config.DISABLE_JIT:
        return None
    try:
        return _Kernels(numba.njit(nogil=True, cache=True))
    except RuntimeError:  # no writable place for the cache: compile in each process
        return _Kernels(numba.njit(nogil=True))


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
               cc: np.ndarray, rows: int, threads: int, block_rows: int | None = None
               ) -> np.ndarray:
    """Per-cluster sums (b, k, D), float64, of the ``b`` blocks of ``block_rows`` rows
    (None: one block) of tokens ``[x ; 1]`` (m, D) with weights ``w`` (m,) (None: 1)
    under their nearest of the centres ``cc = [-2 c ; |c|^2]`` (k, D) (the norms as
    KMeans computes them, so near ties fall as in its loop); the last column holds the
    masses. Each block is summed in chunks of ``rows`` rows from its start, chunk by
    chunk in order, so a block's sums are those of a call on the block alone; the
    chunks of all the blocks are shared among ``threads`` threads in one pass.

    Examples
    --------
    >>> t = np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]])   # tokens [x ; 1]
    >>> cc = np.array([[-0.0, 0.0], [-18.0, 81.0]])           # centres 0 and 9
    >>> lloyd_sums(kernel(), t, None, cc, rows=256, threads=1)
    array([[[ 1.,  2.],
            [10.,  1.]]])
    >>> lloyd_sums(kernel(), t, None, cc, rows=256, threads=1, block_rows=2)[1]
    array([[ 0.,  0.],
           [10.,  1.]])
    """
    m = tokens.shape[0]
    k, width = cc.shape
    cct = np.ascontiguousarray(cc.T)
    wt = NO_WEIGHTS if w is None else np.ascontiguousarray(w, np.float64)
    if m <= rows and (block_rows is None or m <= block_rows):  # one chunk: no grid
        out = np.zeros((1, k, width))
        kernels.chunk_sums(tokens, wt, cct, np.array([0, m]), 0, 1, out)
        return out
    bounds, block = grid_bounds(m, rows, block_rows or m)
    chunks = len(block)
    # Consecutive chunks per task, as many tasks for each thread, each task's sums at
    # most _PARTS bytes.
    threads = max(1, threads)
    rounds = -(-chunks // (threads * max(1, _PARTS // (8 * k * width))))
    per = max(1, -(-chunks // (threads * rounds)))

    def run(first: int) -> np.ndarray:
        stop = min(chunks, first + per)
        parts = np.zeros((stop - first, k, width))
        kernels.chunk_sums(tokens, wt, cct, bounds, first, stop, parts)
        return parts

    acc = np.zeros((int(block[-1]) + 1 if chunks else 1, k, width))
    tasks = range(0, chunks, per)
    for first, parts in zip(tasks, ordered_map(run, tasks, min(threads, len(tasks))),
                            strict=True):
        # Chunk by chunk into each block's sums, in order, whatever the tasks.
        owner = block[first : first + len(parts)]
        cuts = np.flatnonzero(np.diff(owner)) + 1
        for lo, hi in zip([0, *cuts], [*cuts, len(parts)], strict=True):
            kernels.add_in_order(acc[owner[lo]], parts[lo:hi])
    return acc
