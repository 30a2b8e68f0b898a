"""The compiled kernels of the final assignment (:func:`~skformer._fit.assign.labels_inertia`):
:func:`literal_nearest` (the literal differences, for small data) and
:func:`certified_nearest` (one product per 256 rows and its certificates).

Dimension legend: ``m`` rows, ``k`` clusters, ``d`` features.
"""

from __future__ import annotations

import numpy as np

from .cache import kernel
from .step import NO_WEIGHTS, ROWS

__all__ = ["NO_WEIGHTS", "certified_nearest", "literal_nearest"]

# Below this a squared distance may hold underflowed squares (see literal_nearest).
_TINY = 2.0**-900


@kernel
def literal_nearest(x, c, labels, sq):  # pragma: no cover - compiled
    """The nearest of centres ``c`` (k, d) to each row of ``x`` (m, d), both float64,
    by the literal differences (lowest index on ties), into ``labels`` (m,), and its
    squared distance into ``sq`` (m,). Returns the number of rows whose nearest squared
    distance is not in ``[2**-900, inf)``: a square may have overflowed or underflowed
    there, and the caller takes those rows' answers from scaled arithmetic."""
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


@kernel
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
    rows, in the scaled frame."""
    m, d = x.shape
    k = cst.shape[1]
    top = 0.0
    for j in range(k):
        top = max(top, c_norm[j])
    xs = np.empty((ROWS, d))
    near = np.empty((ROWS, k))
    total = 0.0
    for a in range(0, m, ROWS):
        r = min(m, a + ROWS) - a
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
