"""Sparse (CSR) data as a fit source.

Dimension legend: ``n`` samples, ``m`` rows of a block, ``d`` features.

A sparse matrix is never densified. Its fit frame is a scale only (a translation by the
mean would fill in every zero), and the scale is 1 - ``X`` itself, no copy - unless the
magnitudes leave ``[2**-32, 2**32]`` (:data:`~skformer._fit.frame.UNIT_RANGE`); then a
power of two, whose copy of the stored values shares ``X``'s column indices and row
pointers. Blocks are row slices of about 2**20 stored values handed out as
``scipy.sparse.csr_matrix`` views, on a few threads; the sparse backend
(:mod:`skformer._fit.engine.sparse`) steps and scores them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils.sparsefuncs import mean_variance_axis

from ..nn.threads import ordered_map
from .assign import (
    csr_rows,
    labels_inertia,
    sparse_row_slices,
)
from .blas import cpu_threads
from .frame import UNIT_RANGE, Frame
from .sources import Block, Source, Summary, WeightStats

__all__ = ["SparseSource"]


def _column_extremes(X) -> tuple[np.ndarray, np.ndarray]:
    """Per-column minimum and maximum of CSR ``X`` (the implicit zeros included), in
    ``X``'s dtype."""
    d = X.shape[1]
    lo = np.full(d, np.inf, dtype=X.dtype)
    hi = np.full(d, -np.inf, dtype=X.dtype)
    np.minimum.at(lo, X.indices, X.data)
    np.maximum.at(hi, X.indices, X.data)
    has_zero = np.bincount(X.indices, minlength=d) < X.shape[0]
    lo[has_zero] = np.minimum(lo[has_zero], 0)
    hi[has_zero] = np.maximum(hi[has_zero], 0)
    return lo, hi


class SparseSource(Source):
    """A CSR matrix (or array) in memory, read in row blocks of about 2**20 stored values.

    ``X`` must be in canonical format (sorted indices, no duplicates), as the
    estimators' validation leaves it.
    """

    in_memory = True
    sparse = True
    walkable = True
    # The scale stays 1 (no copy of the stored values, KMeans' arithmetic exactly) unless
    # the magnitudes are extreme.
    unit_within = UNIT_RANGE

    def __init__(self, X, w: np.ndarray | None, device: torch.device):
        self.X, self.w = X, w
        self.n_samples, self.n_features = X.shape
        self.dtype = X.dtype
        self.device = torch.device(device)
        self._fitted = None
        self._w = None if w is None else torch.from_numpy(np.asarray(w, dtype=np.float64))

    def drop_weights(self) -> None:
        self.w = self._w = None

    def summary(self) -> Summary:
        X = self.X
        finite = bool(np.isfinite(X.data).all())
        lo, hi = _column_extremes(X)
        if finite:
            variance = float(np.mean(mean_variance_axis(X, axis=0)[1]))
        else:
            variance = float("nan")
        return Summary(self.n_samples, lo, hi, variance, np.zeros(self.n_features, X.dtype),
                       finite, WeightStats.of(self.w))

    def set_frame(self, frame: Frame) -> None:
        super().set_frame(frame)
        self._fitted = sp.csr_matrix(frame.apply(self.X), copy=False)  # a matrix, not array
        self._blocks = [(csr_rows(self._fitted, s), s) for s in sparse_row_slices(self._fitted)]

    def gather(self, index):
        rows = self._fitted if index is None else self._fitted[index]
        w = None if self.w is None else np.asarray(
            self.w if index is None else self.w[index], dtype=np.float64)
        return rows, w

    def blocks(self):
        """The blocks of one pass, in order."""
        for x, s in self._blocks:
            yield Block(x, None if self._w is None else self._w[s])

    def map_reduce(self, func, combine, *args):
        # The blocks run on a few threads (SciPy's sparse products and NumPy release the
        # GIL), as many as KMeans' OpenMP threads; their results are folded in block order
        # as they come (the same sums in the same order every time), with at most one
        # block per thread in flight (a Lloyd partial is n_clusters x n_features).
        blocks = list(self.blocks())
        parts = ordered_map(lambda block: func(block, *args), blocks,
                            min(len(blocks), cpu_threads()))
        result = None
        for part in parts:
            result = part if result is None else combine([result, part])
        return result

    def final(self, centers):
        labels, inertia = labels_inertia(self.X, centers, self.w)
        return labels, inertia, np.bincount(labels, minlength=centers.shape[0])
