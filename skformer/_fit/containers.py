"""The fit source of validated data: the one place that asks what kind of container X is."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from .sources import ArraySource, DaskSource, Source, is_dask
from .sparse import SparseSource

__all__ = ["as_source"]


def as_source(X, sample_weight, device: torch.device) -> Source:
    """The :class:`~skformer._fit.sources.Source` of validated data.

    Parameters
    ----------
    X : ndarray, memmap, CSR matrix or array, or dask.array.Array of shape \
            (n_samples, n_features)
    sample_weight : ndarray, dask array or None
        None when every weight is 1.
    device : torch.device

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, torch
    >>> type(as_source(sp.csr_matrix(np.eye(3)), None, torch.device("cpu"))).__name__
    'SparseSource'
    """
    if is_dask(X):
        return DaskSource(X, sample_weight, device)
    if sp.issparse(X):
        return SparseSource(X, sample_weight, device)
    return ArraySource(X, sample_weight, device, cache=not isinstance(X, np.memmap))
