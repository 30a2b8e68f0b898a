"""Nearest fitted centre, row by row: the arithmetic of ``labels_``, ``predict``,
``transform`` and ``score`` (user frame, float64), for dense and sparse (CSR) rows.

Dimension legend: ``m`` rows of a chunk, ``k`` clusters, ``d`` features.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils.extmath import row_norms

from ..nn.model import nearest_centre
from .frame import UNIT_RANGE, ldexp_csr, power_of_two

__all__ = [
    "csr_rows",
    "labels_inertia",
    "sparse_nearest",
    "sparse_row_slices",
    "sparse_row_squares",
]

# Rows per chunk: the float64 temporaries stay a few MiB whatever the data size.
_ROWS = 2**11
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


def _assign_chunk(
    x: torch.Tensor, c: torch.Tensor, w: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Nearest centre (x (1, m, d), c (1, k, d)) and the weighted sum of squared
    distances to it, the differences summed literally."""
    lab = nearest_centre(x, c, chunk_rows=x.shape[1])[0]
    sq = (x[0] - c[0, lab]).square().sum(-1)
    return lab, (sq if w is None else sq * w).sum()


def _power(c: np.ndarray) -> int:
    """The power of two to divide centres ``c`` by where their magnitudes are extreme."""
    return power_of_two(float(np.max(np.abs(c), initial=0.0)), UNIT_RANGE)


def labels_inertia(
    X: np.ndarray, centers: np.ndarray, sample_weight: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Nearest centre of each row (float64 arithmetic, row by row) and the inertia.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    centers : ndarray of shape (k, d)
    sample_weight : ndarray of shape (n,), default=None

    Returns
    -------
    labels : ndarray of shape (n,), int32
    inertia : float
        ``sum_i w_i ||x_i - c_{label_i}||^2`` with the differences summed literally.

    Examples
    --------
    >>> import numpy as np
    >>> labels_inertia(np.array([[0.0], [3.0]]), np.array([[1.0], [4.0]]))
    (array([0, 1], dtype=int32), 2.0)
    """
    if sp.issparse(X):
        return _sparse_labels_inertia(X, centers, sample_weight)
    # Both sides translated by the centres' mean: nearest centres and differences are
    # unchanged, and |c|^2 - 2 x.c does not cancel for data far from the origin; and
    # scaled by a power of two where the centres' magnitudes are extreme, so squared
    # distances neither underflow nor overflow (the inertia is scaled back).
    shift = np.asarray(centers, dtype=np.float64).mean(axis=0)
    power = _power(np.asarray(centers, dtype=np.float64) - shift)
    c = torch.from_numpy(np.ldexp(np.asarray(centers, dtype=np.float64) - shift, -power))[None]
    labels = np.empty(X.shape[0], dtype=np.int32)
    inertia = 0.0
    for s in range(0, X.shape[0], _ROWS):
        x = torch.from_numpy(np.ldexp(np.asarray(X[s : s + _ROWS], dtype=np.float64) - shift,
                                      -power))[None]
        w = None if sample_weight is None else torch.tensor(
            np.asarray(sample_weight[s : s + _ROWS], dtype=np.float64))
        lab, part = _assign_chunk(x, c, w)
        labels[s : s + _ROWS] = lab.numpy()
        inertia += float(part)
    return labels, float(np.ldexp(inertia, 2 * power))


def _sparse_labels_inertia(X, centers, sample_weight):
    """:func:`labels_inertia` of CSR rows: one pass of sparse-dense products in float64
    (no translation, which would densify the rows)."""
    power = _power(np.asarray(centers, dtype=np.float64))
    c = np.ldexp(np.asarray(centers, dtype=np.float64), -power)
    labels, sq = sparse_nearest(ldexp_csr(X, -power), c, row_norms(c, squared=True),
                                distances=True)
    if sample_weight is not None:
        sq = sq * np.asarray(sample_weight, dtype=np.float64)
    return labels.astype(np.int32), float(np.ldexp(sq.sum(), 2 * power))
