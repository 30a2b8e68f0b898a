"""The compiled centre costs: each centre's error and utility in one pass over the rows.

Dimension legend: ``m`` rows, ``k`` clusters, ``D = d + 1`` token width.

Per 256 rows, one product of the tokens ``[x ; 1]`` with ``[-2 c ; |c|^2]`` (as the Lloyd
step, :mod:`.step`) finds each row's nearest and second-nearest centre; the two squared
distances are then summed from the differences in float64 (the products' form loses
digits where a row lies far from the origin beside its distance). A centre's
*error* is the weighted sum of its rows' squared distances; its *utility* the weighted
sum, over its rows, of the second-nearest distance less the nearest: what the objective
would grow by, were the centre removed and its rows moved to their next centre (the
global moves of :mod:`skformer._fit.moves` read both). The pass may also set each row's
bounds (:mod:`.bounds`) at the centres, as a step would, for the Lloyd run that follows.
"""

from __future__ import annotations

import numpy as np

from .bounds import set_bounds
from .cache import helper, kernel
from .step import ROWS, nearest_centre

__all__ = ["chunk_costs", "second_centre", "squared_distance"]


@helper
def second_centre(dist, best):  # pragma: no cover - compiled
    """The index of the lowest of the values ``dist`` (k,) other than entry ``best``
    (the first on ties; ``best`` itself where k is 1)."""
    k = dist.shape[0]
    if k == 1:
        return best
    other = 1 if best == 0 else 0
    for j in range(k):
        if j != best and dist[j] < dist[other]:
            other = j
    return other


@helper
def squared_distance(row, centre):  # pragma: no cover - compiled
    """``|row - centre|^2`` over the centre's d coordinates, float64."""
    total = 0.0
    for q in range(centre.shape[0]):
        diff = np.float64(row[q]) - centre[q]
        total += diff * diff
    return total


@kernel
def chunk_costs(t, w, cct, c, edges, first, stop, out, labels, rows,
                slack):  # pragma: no cover - compiled
    """Costs of chunks ``first`` to ``stop - 1`` of tokens ``t`` (m, D), chunk ``i``
    being rows ``edges[i]:edges[i + 1]``, into ``out`` (stop - first, 2, k), float64
    zeros: per chunk the centres' errors (``out[., 0]``) and utilities (``out[., 1]``),
    rows added in order. ``w`` (m,) float64 weights or an empty array (all 1); ``cct =
    [-2 c ; |c|^2]^T`` (D, k), of ``t``'s dtype, finds the two nearest centres; ``c``
    (k, d) float64 gives their distances. With :class:`~.bounds.RowBounds`' ``labels``
    (m,), ``rows`` (3, m) and ``slack`` (2,) (empty: none), each row's centre and
    bounds are set as a step's products set them."""
    k = cct.shape[1]
    weighted = w.shape[0] > 0
    keep = labels.shape[0] > 0
    dist = np.empty((ROWS, k), dtype=t.dtype)
    for chunk in range(first, stop):
        acc = out[chunk - first]
        end = edges[chunk + 1]
        for a in range(edges[chunk], end, ROWS):
            r = min(end, a + ROWS) - a
            np.dot(t[a : a + r], cct, dist[:r])
            for p in range(r):
                row = t[a + p]
                best, low = nearest_centre(dist[p])
                near = squared_distance(row, c[best])
                gap = 0.0
                second = np.inf
                if k > 1:
                    other = second_centre(dist[p], best)
                    second = np.float64(dist[p, other])
                    gap = max(0.0, squared_distance(row, c[other]) - near)
                if keep:
                    set_bounds(a + p, best, low, second, labels, rows, slack)
                if weighted:
                    weight = np.float64(w[a + p])
                    near *= weight
                    gap *= weight
                acc[0, best] += near
                acc[1, best] += gap
