"""The compiled Lloyd step: KMeans' loop over a chunk of rows, in small kernels.

Dimension legend: ``m`` rows, ``k`` clusters, ``d`` features, ``D = d + 1`` token width.

Per 256 rows, one product of the tokens ``[x ; 1]`` with ``[-2 c ; |c|^2]`` (BLAS, as
KMeans: the distances up to each row's ``|x|^2``), then per row its nearest centre (the
first on exact ties: :func:`nearest_centre`) and its (weighted) token added to that
cluster's float64 sums (:func:`add_rows`). The last column of a token is 1, so the sums
carry the masses. With row bounds kept (:mod:`.bounds`), a row whose bounds prove its
centre unchanged skips the product. :func:`chunk_sums` composes these over the chunks of
a grid; :func:`end_step` ends a step; :func:`add_in_order` merges chunks' sums in order.

Every kernel is compiled on first use per dtype (:func:`~.cache.kernel`); this module
imports numba, so it is imported only when a compiled backend is chosen.
"""

from __future__ import annotations

import numpy as np

from .bounds import keeps_centre, set_bounds
from .cache import helper, kernel

__all__ = ["NO_WEIGHTS", "ROWS", "add_in_order", "add_rows", "chunk_sums", "end_step",
           "nearest_centre", "second_lowest"]

# Rows per product: their distances (256 x k) stay in a core's cache, as KMeans' do.
ROWS = 256
# Rows per window: the rows that need products are gathered from it, and all its rows
# are added to their sums while they are in cache.
_WINDOW = 8 * ROWS
# The kernels' weights where there are none: every row counts 1.
NO_WEIGHTS = np.empty(0)


@helper
def nearest_centre(dist):  # pragma: no cover - compiled
    """The index of the lowest of the values ``dist`` (k,) (the first on ties) and that
    value."""
    best = 0
    low = dist[0]
    for j in range(1, dist.shape[0]):
        if dist[j] < low:
            low = dist[j]
            best = j
    return best, low


@helper
def second_lowest(dist, best):  # pragma: no cover - compiled
    """The lowest of the values ``dist`` (k,) other than entry ``best`` (inf if none),
    as float64. A pass of its own: one loop keeping both lowest values is slower."""
    k = dist.shape[0]
    if k == 1:
        return np.inf
    other = dist[1 if best == 0 else 0]
    for j in range(best):
        if dist[j] < other:
            other = dist[j]
    for j in range(best + 1, k):
        if dist[j] < other:
            other = dist[j]
    return np.float64(other)


@helper
def add_rows(acc, t, w, nearest, a, b):  # pragma: no cover - compiled
    """Rows ``a`` to ``b - 1`` of tokens ``t`` (m, D), each weighted by ``w`` (m,)
    float64 (empty: 1), added in row order to the float64 sums ``acc`` (k, D) of its
    centre ``nearest[row - a]``."""
    width = t.shape[1]
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


@kernel
def chunk_sums(t, w, cct, edges, first, stop, out, labels, rows, moves, slack,
               prune):  # pragma: no cover - compiled
    """Sums of chunks ``first`` to ``stop - 1`` of tokens ``t`` (m, D) under their
    nearest centre, chunk ``i`` being rows ``edges[i]:edges[i + 1]``, into ``out``
    (stop - first, k, D), float64 zeros; ``w`` (m,) float64 weights or an empty array
    (all 1); ``cct = [-2 c ; |c|^2]^T`` (D, k), of ``t``'s dtype.

    With :class:`~.bounds.RowBounds`' arrays (``labels`` (m,) int32, ``rows`` (3, m),
    ``moves`` (3, k), ``slack`` (2,), float64; empty arrays: none kept), each row's
    centre and bounds are kept for the next step; with ``prune``, a row whose bounds
    prove its centre unchanged keeps it without a product. Returns the number of rows
    whose products were computed."""
    width = t.shape[1]
    k = cct.shape[1]
    keep = labels.shape[0] > 0
    dist = np.empty((ROWS, k), dtype=t.dtype)
    gathered = np.empty((ROWS if prune else 0, width), dtype=t.dtype)
    todo = np.empty(_WINDOW, dtype=np.int64)
    nearest = np.empty(_WINDOW, dtype=np.int64)
    computed = 0
    for chunk in range(first, stop):
        acc = out[chunk - first]
        end = edges[chunk + 1]
        for a in range(edges[chunk], end, _WINDOW):
            b = min(end, a + _WINDOW)
            need = 0
            for row in range(a, b):
                if prune and keeps_centre(row, labels, rows, moves, slack):
                    nearest[row - a] = labels[row]
                    continue
                todo[need] = row
                need += 1
            computed += need
            for g in range(0, need, ROWS):
                r = min(need, g + ROWS) - g
                start = todo[g]
                block = t[start : start + r]
                if todo[g + r - 1] - start != r - 1:  # not consecutive rows: gathered
                    for p in range(r):
                        gathered[p] = t[todo[g + p]]
                    block = gathered[:r]
                np.dot(block, cct, dist[:r])  # one call site: compiled once
                for p in range(r):
                    best, low = nearest_centre(dist[p])
                    row = todo[g + p]
                    nearest[row - a] = best
                    if keep:
                        set_bounds(row, best, low, second_lowest(dist[p], best), labels,
                                   rows, slack)
            add_rows(acc, t, w, nearest, a, b)
    return computed


@kernel
def end_step(c, sums, mass, previous_sums, previous_mass, new,
             fill):  # pragma: no cover - compiled
    """The end of a Lloyd step from centres ``c`` (k, d): with ``fill``, the new centres
    into ``new`` (k, d), ``c``'s dtype (each cluster's float64 ``sums`` (k, d) over its
    ``mass`` (k,), rounded once; its centre in ``c`` where the mass is 0). Returns the
    squared shift from ``c`` to ``new`` (float64, summed in order) and whether the
    statistics equal the previous step's (``previous_sums``, ``previous_mass``; empty
    arrays: none)."""
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


@kernel
def add_in_order(acc, parts):  # pragma: no cover - compiled
    """``acc + parts[0] + parts[1] + ...`` (k, D) into ``acc``, in that order."""
    for p in range(parts.shape[0]):
        acc += parts[p]
