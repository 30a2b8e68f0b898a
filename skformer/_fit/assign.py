"""Nearest fitted centre, row by row: the arithmetic of ``labels_``, ``predict``,
``transform`` and ``score`` (user frame, float64), for dense and sparse (CSR) rows.

Dimension legend: ``m`` rows of a chunk, ``k`` clusters, ``d`` features.
"""

from __future__ import annotations

import threading

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils.extmath import row_norms

from ..nn.threads import ordered_map
from . import kernels as _kernels
from .blas import cpu_threads, one_blas_thread
from .frame import UNIT_RANGE, ldexp_csr, power_of_two

__all__ = [
    "check_width",
    "csr_rows",
    "distances",
    "labels_inertia",
    "sparse_nearest",
    "sparse_row_slices",
    "sparse_row_squares",
]

# Rows per chunk, and their (rows, k) distances: the float64 temporaries stay a few
# megabytes whatever the data size.
_ROWS = 2**13
_DISTANCES = 2**18
# Rows per chunk of the compiled certified assignment.
_COMPILED_ROWS = 2**14
# The compiled kernels' weights where there are none: every row counts 1.
_NO_WEIGHTS = np.empty(0)
# Largest (rows, k) block of sparse-dense products computed at once.
_PRODUCTS = 2**20


def csr_rows(x, rows: slice) -> sp.csr_matrix:
    """Rows ``rows`` (a slice with step 1) of CSR ``x`` as a ``csr_matrix`` sharing
    ``x``'s stored values and column indices (no copy)."""
    start, stop, _ = rows.indices(x.shape[0])
    stop = max(start, stop)
    lo, hi = x.indptr[start], x.indptr[stop]
    return sp.csr_matrix((x.data[lo:hi], x.indices[lo:hi], x.indptr[start : stop + 1] - lo),
                         shape=(stop - start, x.shape[1]), copy=False)


def sparse_row_slices(x: sp.csr_matrix, values: int = 2**20) -> list[slice]:
    """Consecutive row slices of CSR ``x`` holding about ``values`` stored values each
    (at least 256 rows, at most ``values // 64``: the dense per-row temporaries stay
    small too)."""
    n = x.shape[0]
    per_row = max(1.0, x.nnz / max(1, n))
    rows = int(min(max(256, values / per_row), max(256, values // 64)))
    return [slice(s, s + rows) for s in range(0, n, rows)]


def sparse_row_squares(x: sp.csr_matrix) -> np.ndarray:
    """Squared norm of each CSR row (m,), summed in float64."""
    data = x.data.astype(np.float64, copy=False)
    return np.bincount(np.repeat(np.arange(x.shape[0]), np.diff(x.indptr)),
                       weights=data * data, minlength=x.shape[0])


def sparse_nearest(x: sp.csr_matrix, c: np.ndarray, c_sq: np.ndarray, *,
                   distances: bool = False):
    """Nearest centre (lowest index on ties) of CSR rows ``x`` (m, d) among dense ``c``
    (k, d) with squared norms ``c_sq`` (k,): the argmin of ``|c|^2 - 2 x.c``, each
    product summed over the row's stored values in order, in the common dtype of ``x``
    and ``c`` (KMeans' sparse arithmetic).

    Returns int64 labels (m,); with ``distances=True`` also each row's squared distance to
    its centre, ``|x|^2 + |c|^2 - 2 x.c`` in float64 from the same products, clipped at 0.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> c = np.array([[0.0, 0.0], [0.0, 4.0]])
    >>> x = sp.csr_matrix([[0.0, 3.0], [1.0, 0.0]])
    >>> sparse_nearest(x, c, (c * c).sum(1), distances=True)
    (array([1, 0]), array([1., 1.]))
    """
    m, k = x.shape[0], c.shape[0]
    ct = np.ascontiguousarray(c.T)
    # Chunks of rows of at most about 2**20 stored values and 2**20 products.
    rows = max(1, _PRODUCTS // max(1, k))
    chunks = [slice(s, min(s + rows, b.stop, m))
              for b in sparse_row_slices(x) for s in range(b.start, min(b.stop, m), rows)]
    labels = np.empty(m, dtype=np.int64)
    sq = np.empty(m, dtype=np.float64) if distances else None
    for rows_ in chunks:
        chunk = csr_rows(x, rows_)
        dist = np.asarray(chunk @ ct)  # (rows, k)
        dist *= -2
        dist += c_sq
        lab = labels[rows_] = dist.argmin(axis=1)
        if distances:
            x_sq = sparse_row_squares(chunk)
            nearest = dist[np.arange(chunk.shape[0]), lab].astype(np.float64, copy=False)
            sq[rows_] = np.maximum(x_sq + nearest, 0.0)
    return (labels, sq) if distances else labels


# Relative rounding of a computed ``|c|^2 - 2 x.c`` against ``(|x| + |c|)^2``, per
# feature: a dot product of d terms is within ``d * eps`` of ``|x| |c|`` (any order of
# summation, fused or not), the norm and the sum add a few more roundings, and the rows
# and centres themselves were rounded once by the frame's translation. Doubled for margin;
# the absolute term covers products that underflow.
_ROUNDING = 2 * np.finfo(np.float64).eps
# Up to this many centres the distances are laid out centres-major (see _certain_labels).
_CENTRES_MAJOR = 32
_UNDERFLOW = 2 * np.finfo(np.float64).tiny
# Up to this many differences (rows x centres x features), a dense assignment takes
# every answer from the literal differences: nothing to certify, and fewer operations.
# The certified path has a fixed set-up (scaling, translation, norms, certificates) and
# then runs its products through BLAS, while the literal differences work elementwise:
# the literal path wins on few differences and loses more the more there are, and the
# threshold sits where the two took about the same time.
_LITERAL = 40_000


def _certain_labels(expanded: np.ndarray, x_norm: np.ndarray, c_norm: np.ndarray,
                    d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nearest centre of each row from ``expanded``, ``|c|^2 - 2 x.c`` in float64
    laid out centres-major (k, m) up to :data:`_CENTRES_MAJOR` centres (the reductions
    over the centres then run across rows), rows-major (m, k) beyond; whether it is
    certainly the nearest (lowest index on ties); and its value. ``x_norm`` (m,) and
    ``c_norm`` (k,) are the norms of the rows and centres.

    The value for centre j is within ``bound_j = F (|x| + |c_j|)^2`` of the true one.
    A row is certain when the gap to its second-lowest value exceeds twice the bound of
    the largest centre; the rows that fail that check are certain when every other
    centre's value, less its own bound, lies above the chosen one's plus its own. Exact
    ties are never certain.
    """
    factor = (d + 8) * _ROUNDING
    k = c_norm.shape[0]
    if k <= _CENTRES_MAJOR:
        best = expanded.min(axis=0)
        hit = expanded == best
        labels = hit.argmax(axis=0)  # the first centre at the minimum
        second = np.where(hit, np.inf, expanded).min(axis=0, initial=np.inf)
        single = hit.sum(axis=0) == 1
        per_row = expanded.T
    else:
        rows = np.arange(expanded.shape[0])
        labels = expanded.argmin(axis=1)
        best = expanded[rows, labels]
        expanded[rows, labels] = np.inf
        second = expanded.min(axis=1, initial=np.inf)  # equal to best on a tie
        expanded[rows, labels] = best
        single = np.ones(best.shape, dtype=bool)
        per_row = expanded
    top = float(np.max(c_norm, initial=0.0))
    certain = single & (second - best > 2 * (factor * np.square(x_norm + top)
                                             + (d + 8) * _UNDERFLOW))
    redo = np.flatnonzero(single & ~certain)
    if redo.size:
        rows = np.arange(redo.size)
        bound = np.square(np.add.outer(x_norm[redo], c_norm))
        bound *= factor
        bound += (d + 8) * _UNDERFLOW
        high = best[redo] + bound[rows, labels[redo]]
        low = np.subtract(per_row[redo], bound, out=bound)
        low[rows, labels[redo]] = np.inf
        certain[redo] = low.min(axis=1, initial=np.inf) > high
    return labels, certain, best


def _literal_labels(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Nearest centre of rows ``x`` (m, d) among ``c`` (k, d), both in the user's frame,
    from the literal differences (float64), lowest index on ties. Each row's differences
    are scaled by the power of two of its nearest candidate's largest one (among the
    centres it does not equal), so its squared distances neither overflow nor
    underflow. Chunked so that the (rows, k, d) differences stay about 2**20 values."""
    rows = max(1, _PRODUCTS // max(1, c.shape[0] * c.shape[1]))
    out = np.empty(x.shape[0], dtype=np.int64)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for s in range(0, x.shape[0], rows):
            diff, _ = _difference(x[s : s + rows, None, :], c[None])
            # The nearest candidate's largest difference, among the centres the row is
            # not equal to (its distance to those it equals is 0 at any scale).
            top = np.abs(diff).max(axis=2)
            top = np.where(top > 0, top, np.inf).min(axis=1)  # (rows,)
            power = np.frexp(np.where(top < np.inf, top, 1.0))[1]
            diff = np.ldexp(diff, -power[:, None, None])
            out[s : s + rows] = np.einsum("mkd,mkd->mk", diff, diff).argmin(axis=1)
    return out


def _difference(x: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, int]:
    """``(x - c) * 2**-shift`` (broadcast, float64) and ``shift``: 0, the plain
    differences, unless one overflows (finite values near the largest float, of
    opposite signs); then 1, the difference of the halves, which rounds as the
    difference does (a power of two commutes with rounding) and never overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        diff = x - c
    if np.all(np.isfinite(diff)) or not (np.all(np.isfinite(x)) and np.all(np.isfinite(c))):
        return diff, 0
    with np.errstate(under="ignore"):
        return np.ldexp(x, -1) - np.ldexp(c, -1), 1


def _squares(x: np.ndarray, c: np.ndarray, w: np.ndarray | None) -> float:
    """``sum_i w_i |x_i - c_i|^2`` of rows ``x`` and ``c`` (m, d) (float64), summed in a
    frame scaled by the power of two of the largest difference, so neither the
    differences nor the squares overflow or underflow unless the total does (then it is
    inf: its true value exceeds float64's range)."""
    diff, shift = _difference(x, c)
    power = power_of_two(float(np.max(np.abs(diff), initial=0.0)), UNIT_RANGE)
    scaled = np.ldexp(diff, -power) if power else diff
    sq = np.einsum("md,md->m", scaled, scaled)
    if w is not None:
        sq *= w
    with np.errstate(over="ignore"):
        return float(np.ldexp(sq.sum(), 2 * (power + shift)))


def _scale(c: np.ndarray) -> int:
    """The power of two that brings the centres' largest magnitude into [1, 2) where it
    lies outside :data:`~skformer._fit.frame.UNIT_RANGE` (0 inside it)."""
    return power_of_two(float(np.max(np.abs(c), initial=0.0)), UNIT_RANGE)


def _nearest_chunk(x: np.ndarray, centers: np.ndarray, power: int, shift: np.ndarray,
                   c_shifted: np.ndarray, c_sq: np.ndarray, c_norm: np.ndarray,
                   w: np.ndarray | None, buffer: np.ndarray) -> tuple[np.ndarray, float]:
    """Nearest centre of float64 rows ``x`` (m, d) among ``centers`` (k, d) (user
    frame), and the rows' (weighted) sum of squared distances to it.

    One matrix product on rows and centres scaled by ``2**-power`` and translated by
    ``shift`` (``c_shifted``, with squared norms ``c_sq`` and norms ``c_norm``); the
    rows whose nearest centre is not certain from it (a far centre made the translation
    coarse, or a near tie) are decided by their literal differences. A row's squared
    distance is ``|x|^2`` plus its minimum where the rounding bound of that sum is
    within 1e-9 of it, else its literal differences. ``buffer``: at least (k, m)
    float64 values to work in, reused from chunk to chunk."""
    m, k = x.shape[0], centers.shape[0]
    xs = np.ldexp(x, -power) if power else x.copy()
    xs -= shift
    if k <= _CENTRES_MAJOR:
        expanded = np.matmul(c_shifted, xs.T, out=buffer[: m * k].reshape(k, m))
        expanded *= -2.0
        expanded += c_sq[:, None]
    else:
        expanded = np.matmul(xs, c_shifted.T, out=buffer[: m * k].reshape(m, k))
        expanded *= -2.0
        expanded += c_sq
    with np.errstate(over="ignore", under="ignore"):
        x_sq = np.einsum("md,md->m", xs, xs)
        x_norm = np.sqrt(x_sq)
        labels, certain, best = _certain_labels(expanded, x_norm, c_norm, x.shape[1])
        dist = x_sq + best
        slack = (x.shape[1] + 8) * _ROUNDING * np.square(x_norm + np.max(c_norm))
        exact = certain & (slack + (x.shape[1] + 8) * _UNDERFLOW <= 1e-9 * dist)
    total = float(dist[exact] @ (w[exact] if w is not None else np.ones(int(exact.sum()))))
    return _decide_uncertain(x, centers, labels, certain, exact, total, power, w)


def _decide_uncertain(x: np.ndarray, centers: np.ndarray, labels: np.ndarray,
                      certain: np.ndarray, exact: np.ndarray, total: float, power: int,
                      w: np.ndarray | None) -> tuple[np.ndarray, float]:
    """A chunk's labels and (weighted) sum of squared distances from its certified
    answers: the rows not ``certain`` (m,) take their labels from the literal
    differences, the rows not ``exact`` (m,) their squared distances; ``total`` is the
    exact rows' sum in the frame scaled by ``2**-power``."""
    if not certain.all():
        unsure = np.flatnonzero(~certain)
        labels[unsure] = _literal_labels(np.asarray(x[unsure], dtype=np.float64), centers)
    with np.errstate(over="ignore"):
        total = float(np.ldexp(total, 2 * power))
    if not exact.all():
        other = np.flatnonzero(~exact)
        total += _squares(np.asarray(x[other], dtype=np.float64), centers[labels[other]],
                          None if w is None else w[other])
    return labels, total


def _compiled_chunk(kernels, x: np.ndarray, centers: np.ndarray, power: int,
                    shift: np.ndarray, cst: np.ndarray, c_sq: np.ndarray,
                    c_norm: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, float]:
    """:func:`_nearest_chunk` of rows ``x`` (m, d) in their own dtype, by the compiled
    :func:`~skformer._fit.kernels.assign.certified_nearest` (``cst``: the translated centres,
    transposed (d, k)): scaling, translation, product and certificates in one pass per
    256 rows, with no (k, m) array."""
    m, d = x.shape
    labels = np.empty(m, dtype=np.int64)
    certain, exact = np.empty(m, dtype=bool), np.empty(m, dtype=bool)
    total = kernels.certified_nearest(
        np.ascontiguousarray(x), 2.0**-power, shift, cst, c_sq, c_norm,
        _NO_WEIGHTS if w is None else w,
        (d + 8) * _ROUNDING, (d + 8) * _UNDERFLOW, labels, certain, exact)
    return _decide_uncertain(x, centers, labels, certain, exact, total, power, w)


def check_width(X, centers: np.ndarray) -> None:
    """Raise a ValueError unless rows ``X`` (n, d) have as many features as ``centers``
    (k, d): the kernels read ``d`` values of every centre for every row."""
    if X.shape[1] != centers.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features, but the fitted centres have "
                         f"{centers.shape[1]} (cluster_centers_.shape = {centers.shape}).")


def distances(X, centers: np.ndarray) -> np.ndarray:
    """Euclidean distance of each row of ``X`` (n, d), dense or CSR, to each centre
    (k, d): :func:`sklearn.metrics.pairwise.euclidean_distances` (``transform``'s
    arithmetic, as KMeans'), except on the rows where its squared norms overflowed (data
    beyond 1e154): those rows' distances come from their literal differences, scaled by
    a power of two, so they are inf only where they exceed the dtype's range (never NaN).

    Examples
    --------
    >>> import numpy as np
    >>> distances(np.array([[1e300], [0.0]]), np.array([[-1e300], [3.0]]))
    array([[2.e+300, 1.e+300],
           [1.e+300, 3.e+000]])
    """
    check_width(X, centers)
    with np.errstate(over="ignore", invalid="ignore"):
        out = euclidean_distances(X, centers)
    bad = np.flatnonzero(~np.isfinite(out).all(axis=1))
    c = np.asarray(centers, dtype=np.float64)
    rows = max(1, _PRODUCTS // max(1, c.shape[0] * c.shape[1]))
    for s in range(0, bad.size, rows):
        part = bad[s : s + rows]
        x = X[part]
        x = np.asarray(x.toarray() if sp.issparse(x) else x, dtype=np.float64)
        diff, shift = _difference(x[:, None, :], c[None])  # (rows, k, d)
        # Each difference of a row and a centre scaled by the power of two of its
        # largest entry, so its square neither overflows nor underflows.
        top = np.abs(diff).max(axis=2)
        power = np.frexp(np.where(top > 0, top, 1.0))[1]  # (rows, k)
        with np.errstate(over="ignore", under="ignore"):
            scaled = np.ldexp(diff, -power[..., None])
            dist = np.sqrt(np.einsum("mkd,mkd->mk", scaled, scaled))
            out[part] = np.ldexp(dist, power + shift).astype(out.dtype)
    return out


def labels_inertia(
    X: np.ndarray, centers: np.ndarray, sample_weight: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Nearest centre of each row and the inertia, in float64, whatever the magnitudes.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
    centers : ndarray of shape (k, d)
    sample_weight : ndarray of shape (n,), default=None

    Returns
    -------
    labels : ndarray of shape (n,), int32
        Each row's nearest centre by the literal differences ``x - c`` (lowest index
        on ties).
    inertia : float
        ``sum_i w_i ||x_i - c_{label_i}||^2``, each term within 1e-9 of its literal
        value.

    Notes
    -----
    Up to 40,000 differences (rows x centres x features), each answer comes from the
    literal differences. Beyond, the nearest centre is the argmin of ``|c|^2 - 2 x.c``
    (one matrix product per chunk of rows), on rows and centres translated by the
    centres' per-feature median (so data far from the origin do not cancel, and a few
    far centres do not move the translation) and scaled by a power of two where the
    centres' magnitudes are extreme.
    A row whose answer is not certain within the rounding bound of that form is decided
    by its literal differences to every centre. A row's squared distance is taken from
    the same product (``|x|^2`` plus its minimum) where that sum's rounding bound is
    within 1e-9 of it; else from its literal differences, scaled by a power of two so
    that they neither underflow nor overflow (the sum is scaled back). Where numba is
    importable both arithmetics run compiled (:mod:`.kernels.assign`; the same answers, one
    pass per 256 rows), else in NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> labels_inertia(np.array([[0.0], [3.0]]), np.array([[1.0], [4.0]]))
    (array([0, 1], dtype=int32), 2.0)
    """
    check_width(X, centers)
    if sp.issparse(X):
        return _sparse_labels_inertia(X, centers, sample_weight)
    if X.shape[0] * centers.shape[0] * centers.shape[1] <= _LITERAL:
        return _literal_labels_inertia(X, centers, sample_weight)
    return _dense_labels_inertia(X, centers, sample_weight)


def _literal_labels_inertia(X, centers, sample_weight):
    """:func:`labels_inertia` of few rows: every answer from the literal differences
    (compiled where numba is there and no square can have overflowed or underflowed;
    else scaled by powers of two in NumPy)."""
    x = np.ascontiguousarray(X, dtype=np.float64)
    centers = np.ascontiguousarray(centers, dtype=np.float64)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    kernels = _kernels.load()
    if kernels is not None:
        labels, sq = np.empty(x.shape[0], dtype=np.int32), np.empty(x.shape[0])
        if kernels.literal_nearest(x, centers, labels, sq) == 0:
            with np.errstate(over="ignore"):
                return labels, float(sq.sum() if w is None else sq @ w)
    labels = _literal_labels(x, centers)
    return labels.astype(np.int32), _squares(x, centers[labels], w)


@one_blas_thread()
def _dense_labels_inertia(X, centers, sample_weight):
    """:func:`labels_inertia` of dense rows by certified products, chunk by chunk."""
    centers = np.asarray(centers, dtype=np.float64)
    power = _scale(centers)
    c = np.ldexp(centers, -power)
    shift = np.median(c, axis=0)
    c_shifted = c - shift
    with np.errstate(under="ignore"):
        c_sq = np.einsum("kd,kd->k", c_shifted, c_shifted)
    c_norm = np.sqrt(c_sq)
    k = centers.shape[0]
    labels = np.empty(X.shape[0], dtype=np.int32)
    kernels = _kernels.load()
    # Compiled, a chunk's (rows, k) values live 256 rows at a time inside the kernel, so
    # memory does not limit a chunk's length: longer chunks mean fewer calls from Python.
    rows = _COMPILED_ROWS if kernels is not None else max(64, min(_ROWS, _DISTANCES // k))
    cst = None if kernels is None else np.ascontiguousarray(c_shifted.T)
    scratch = threading.local()

    def chunk(s: int) -> float:
        w = None if sample_weight is None else np.asarray(sample_weight[s : s + rows],
                                                          dtype=np.float64)
        if kernels is not None:
            labels[s : s + rows], part = _compiled_chunk(
                kernels, X[s : s + rows], centers, power, shift, cst, c_sq, c_norm, w)
            return part
        buffer = getattr(scratch, "buffer", None)
        if buffer is None:
            buffer = scratch.buffer = np.empty(rows * k)
        x = np.asarray(X[s : s + rows], dtype=np.float64)
        labels[s : s + rows], part = _nearest_chunk(x, centers, power, shift, c_shifted,
                                                    c_sq, c_norm, w, buffer)
        return part

    # Chunks on a few threads (NumPy releases the GIL), their parts summed in order.
    starts = range(0, X.shape[0], rows)
    inertia = 0.0
    for part in ordered_map(chunk, starts, min(len(starts), cpu_threads())):
        inertia += part
    return labels, inertia


@one_blas_thread()
def _sparse_labels_inertia(X, centers, sample_weight):
    """:func:`labels_inertia` of CSR rows, chunk by chunk, never densified but for the
    rows whose answer is not certain: the nearest centre from sparse-dense products in
    float64 (no translation, which would fill the zeros), certified as for dense rows;
    each row's squared distance as ``sum over stored values of (x_j - c_j)^2`` plus the
    centre's squared norm off them. A row whose label is not certain, or whose distance
    that last term could round by more than 1e-9 of it, is densified and done literally."""
    centers = np.asarray(centers, dtype=np.float64)
    power = _scale(centers)
    c = np.ldexp(centers, -power)
    c_sq = row_norms(c, squared=True)
    c_norm, ct = np.sqrt(c_sq), np.ascontiguousarray(c.T)
    m_all, (k, d) = X.shape[0], c.shape
    w_all = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    labels = np.empty(m_all, dtype=np.int32)
    scaled, literal = 0.0, 0.0  # the certain rows' sum (scaled frame), the others'
    rows = max(1, _PRODUCTS // max(1, k))
    chunks = [slice(s, min(s + rows, b.stop, m_all))
              for b in sparse_row_slices(X) for s in range(b.start, min(b.stop, m_all), rows)]
    for part in chunks:
        x = ldexp_csr(csr_rows(X, part), -power).astype(np.float64)
        expanded = np.asarray(x @ ct)
        expanded *= -2.0
        expanded += c_sq
        with np.errstate(under="ignore"):
            lab, certain, _ = _certain_labels(
                np.ascontiguousarray(expanded.T) if k <= _CENTRES_MAJOR else expanded,
                np.sqrt(sparse_row_squares(x)), c_norm, d)
            owner = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
            cv = c[lab[owner], x.indices]
            on = np.bincount(owner, weights=np.square(x.data - cv), minlength=x.shape[0])
            off = c_sq[lab] - np.bincount(owner, weights=cv * cv, minlength=x.shape[0])
        dist = on + np.maximum(off, 0.0)
        certain &= c_sq[lab] * ((d + 8) * _ROUNDING) + _UNDERFLOW <= 1e-9 * dist
        w = None if w_all is None else w_all[part]
        if not certain.all():
            unsure = np.flatnonzero(~certain)
            dense = csr_rows(X, part)[unsure].toarray().astype(np.float64)
            lab[unsure] = _literal_labels(dense, centers)
            literal += _squares(dense, centers[lab[unsure]], None if w is None else w[unsure])
            dist[unsure] = 0.0
        labels[part] = lab
        scaled += float(dist @ w) if w is not None else float(dist.sum())
    with np.errstate(over="ignore"):
        return labels, float(np.ldexp(scaled, 2 * power)) + literal
