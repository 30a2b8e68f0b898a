"""Nearest fitted centre, row by row: the arithmetic of ``labels_``, ``predict``,
``transform`` and ``score`` (user frame, float64)."""

from __future__ import annotations

import numpy as np
import torch

from ..nn.model import nearest_centre

__all__ = ["labels_inertia"]

# Rows per chunk: the float64 temporaries stay a few MiB whatever the data size.
_ROWS = 2**11


def _assign_chunk(
    x: torch.Tensor, c: torch.Tensor, w: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Nearest centre (x (1, m, d), c (1, k, d)) and the weighted sum of squared
    distances to it, the differences summed literally."""
    lab = nearest_centre(x, c, chunk_rows=x.shape[1])[0]
    sq = (x[0] - c[0, lab]).square().sum(-1)
    return lab, (sq if w is None else sq * w).sum()


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
    # Both sides translated by the centres' mean: nearest centres and differences are
    # unchanged, and |c|^2 - 2 x.c does not cancel for data far from the origin.
    shift = np.asarray(centers, dtype=np.float64).mean(axis=0)
    c = torch.from_numpy(np.asarray(centers, dtype=np.float64) - shift)[None]
    labels = np.empty(X.shape[0], dtype=np.int32)
    inertia = 0.0
    for s in range(0, X.shape[0], _ROWS):
        x = torch.from_numpy(np.asarray(X[s : s + _ROWS], dtype=np.float64) - shift)[None]
        w = None if sample_weight is None else torch.tensor(
            np.asarray(sample_weight[s : s + _ROWS], dtype=np.float64))
        lab, part = _assign_chunk(x, c, w)
        labels[s : s + _ROWS] = lab.numpy()
        inertia += float(part)
    return labels, inertia
