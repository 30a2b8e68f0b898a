"""The sparse backend: CSR blocks, never made dense whole.

Dimension legend: ``m`` rows of a block, ``d`` features, ``k`` clusters.

Per block (:class:`~skformer._fit.sparse.SparseSource`'s row slices):

- the nearest centre: ``argmin |c|^2 - 2 x.c``, the products summed over each row's
  stored values in order in the data's dtype (KMeans' sparse kernel);
- the per-cluster sums and masses, in float64 (one scatter-add of the stored values);
- squared distances from the same products, ``|x|^2 + |c|^2 - 2 x.c`` (see
  :func:`~skformer._fit.assign.sparse_nearest`).

The products run on the CPU (scipy's sparse kernels) whatever the fit's device. Only
Hartigan's single-point moves read rows dense, a few at a time (:func:`dense_chunks`): they
visit the rows one by one and decide on exact differences, so they make the moves of the
dense rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import torch
from sklearn.utils.extmath import row_norms

from ..assign import sparse_nearest, sparse_row_squares
from ..sources import Block, Source, sum_parts
from .base import Backend, CentreCosts, LloydStats, Stepper, contingency

__all__ = ["DENSE_VALUES", "SparseBackend", "dense_chunks", "sparse_costs", "sparse_norms",
           "sparse_score", "sparse_stats"]

# Most values of the dense rows that the single-point moves hold at a time: a chunk of
# rows a few MB wide, whatever the number of features.
DENSE_VALUES = 2**18


def _weights(block: Block) -> np.ndarray | None:
    return None if block.w is None else block.w.cpu().numpy()


def sparse_stats(block: Block, c: np.ndarray) -> LloydStats:
    """A sparse block's per-cluster weighted sums (k, d) and masses (k,), float64, from
    centres ``c`` (k, d) (fit frame)."""
    x = block.x
    cn = c.astype(x.dtype, copy=False)
    labels = sparse_nearest(x, cn, row_norms(cn, squared=True))
    k, d = cn.shape
    w = _weights(block)
    counts = np.diff(x.indptr)
    owner = np.repeat(labels, counts)  # the cluster of each stored value
    values = x.data.astype(np.float64, copy=False)
    if w is not None:
        values = values * np.repeat(w, counts)
    # One scatter-add over the stored values, in float64 and in order.
    sums = np.bincount(owner * d + x.indices, weights=values, minlength=k * d).reshape(k, d)
    mass = np.bincount(labels, weights=w, minlength=k).astype(np.float64)
    return LloydStats(sums, mass)


def sparse_norms(block: Block) -> float:
    """A sparse block's weighted sum of squared norms (float64)."""
    sq = sparse_row_squares(block.x)
    w = _weights(block)
    return float((sq if w is None else sq * w).sum())


def sparse_score(block: Block, c: np.ndarray, other: np.ndarray | None):
    """A sparse block's weighted sum of squared distances to the nearest of ``c`` and,
    with ``other`` centres, the (k * k,) contingency table of the two assignments."""
    x = block.x
    cn = c.astype(x.dtype, copy=False)
    labels, sq = sparse_nearest(x, cn, row_norms(cn, squared=True), distances=True)
    w = _weights(block)
    inertia = float((sq if w is None else sq * w).sum())
    if other is None:
        return inertia, None
    on = other.astype(x.dtype, copy=False)
    labels2 = sparse_nearest(x, on, row_norms(on, squared=True))
    return inertia, contingency(labels, labels2, cn.shape[0])


# Most (rows, k) squared distances of a sparse block held at once by :func:`sparse_costs`.
_COST_VALUES = 2**20


def sparse_costs(block: Block, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A sparse block's contribution to the centres' errors and utilities
    (:class:`~.base.CentreCosts`): ``|x|^2 + |c|^2 - 2 x.c`` from one sparse-dense
    product per chunk of rows (float64, clipped at 0)."""
    x = block.x
    c64 = np.asarray(c, dtype=np.float64)
    k = c64.shape[0]
    c_sq = np.square(c64).sum(-1)
    w = _weights(block)
    error, utility = np.zeros(k), np.zeros(k)
    rows = max(1, _COST_VALUES // max(1, k))
    for s in range(0, x.shape[0], rows):
        xs = x[s : s + rows]
        dist = np.asarray(xs @ c64.T, dtype=np.float64)
        dist *= -2.0
        dist += c_sq
        dist += sparse_row_squares(xs)[:, None]
        np.maximum(dist, 0.0, out=dist)
        near = dist.argmin(1)
        first = dist[np.arange(len(near)), near]
        if k > 1:
            dist[np.arange(len(near)), near] = np.inf
            gap = dist.min(1) - first
        else:
            gap = np.zeros_like(first)
        if w is not None:
            first, gap = first * w[s : s + rows], gap * w[s : s + rows]
        error += np.bincount(near, weights=first, minlength=k)
        utility += np.bincount(near, weights=gap, minlength=k)
    return error, utility


def dense_chunks(blocks: Callable[[], Iterable[Block]], n_features: int,
               values: int | None = None) -> Iterator[Block]:
    """The rows of the CSR ``blocks`` in order, as dense blocks (the data's dtype) of at
    most ``values`` values (default :data:`DENSE_VALUES`), each with its weights.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> x = sp.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0], [0.0, 0.0]]))
    >>> [b.x.tolist() for b in dense_chunks(lambda: [Block(x, None)], 2, values=4)]
    [[[0.0, 1.0], [2.0, 0.0]], [[0.0, 0.0]]]
    """
    rows = max(1, (DENSE_VALUES if values is None else values) // max(1, n_features))
    for block in blocks():
        x = block.x
        for s in range(0, x.shape[0], rows):
            yield Block(torch.from_numpy(x[s : s + rows].toarray()),
                        None if block.w is None else block.w[s : s + rows])


class SparseBackend(Backend):
    """CSR rows, block by block on a few threads (SciPy's products release the GIL)."""

    def __init__(self, source: Source, k: int):
        self.source, self.k = source, k

    def stepper(self) -> Stepper:
        return lambda c: (None, self.source.map_reduce(sparse_stats, sum_parts, c))

    def score(self, c, other=None):
        value, table = self.source.map_reduce(sparse_score, sum_parts, c, other)
        return float(value), table

    def norms(self) -> float:
        return float(self.source.map_reduce(sparse_norms, sum_parts))

    def costs(self, c):
        return CentreCosts(*self.source.map_reduce(sparse_costs, sum_parts, c))

    def dense_rows(self):
        """The CSR rows read dense a chunk at a time (:func:`dense_chunks`), so the
        single-point moves are those of the dense rows, to the bit."""
        source = self.source
        return lambda: dense_chunks(source.blocks, source.n_features)
