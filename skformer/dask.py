"""The skformer clusterers on dask arrays: the thin entry of the fit layer.

``fit`` on a 2-D :class:`dask.array.Array` never holds the data in one place: the fit
layer (:mod:`skformer._fit`) reads it through a
:class:`~skformer._fit.sources.DaskSource`, whose every pass maps a function over the
row blocks and reduces the small results with a fixed tree, one :func:`dask.compute`
(one graph) per pass, on whatever scheduler is active (a :class:`distributed.Client`
when the user made one). The fit itself - frame, initialisation, Lloyd and learned
steps, stopping rules, best of ``n_init`` - is the one every container gets. What
differs: the ``"k-means++"`` / ``"random"`` initialisation runs on a seeded sample of
``max(10_000, 20 * n_clusters)`` rows when there are more, and ``labels_`` is a lazy
dask array.

This module validates dask input and maps ``predict``, ``transform`` and ``score`` over
the blocks. dask is imported lazily; see the user guide page "Dask" of the documentation.
"""

from __future__ import annotations

import functools
from numbers import Real

import numpy as np
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from ._fit import WeightStats, dask_labels, labels_inertia
from ._fit.assign import check_width, distances

__all__ = ["predict_dask", "score_dask", "transform_dask", "validate_dask"]


def _import_dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - dask is there when X is a dask array
        raise ImportError(
            "Fitting on dask arrays requires dask. Install with: "
            'pip install "dask[array,distributed]"'
        ) from exc
    return dask, da


# -- checks ---------------------------------------------------------------------------


def _check_array(estimator, X, *, reset: bool):
    """A 2-D float dask array with one block of columns (lazy: nothing is computed)."""
    _, da = _import_dask()
    if not isinstance(X, da.Array):
        raise TypeError(
            f"{type(X).__module__}.{type(X).__name__} is not supported: pass a "
            "dask.array.Array (a dask DataFrame converts with .to_dask_array(lengths=True))."
        )
    if X.ndim != 2:
        raise ValueError(
            f"Expected 2D array, got {X.ndim}D array instead. Reshape your data either "
            "using X.reshape(-1, 1) if your data has a single feature or X.reshape(1, -1) "
            "if it contains a single sample."
        )
    unknown = [name for axis, name in ((0, "rows"), (1, "columns"))
               if any(np.isnan(size) for size in X.chunks[axis])]
    if unknown:
        # (a width of NaN would otherwise reach int() far down the fit)
        what = " and ".join(unknown)
        raise ValueError(
            f"X has an unknown number of {what} (chunk sizes NaN, shape={X.shape}): call "
            "X.compute_chunk_sizes() first, or convert a dask DataFrame with "
            ".to_dask_array(lengths=True)."
        )
    if np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError("Complex data not supported")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    for axis, name in ((0, "sample"), (1, "feature")):
        if X.shape[axis] == 0:
            raise ValueError(
                f"Found array with 0 {name}(s) (shape={X.shape}) while a minimum of 1 is "
                f"required by {type(estimator).__name__}."
            )
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    if reset:
        estimator.n_features_in_ = X.shape[1]
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
    else:
        if X.shape[1] != estimator.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
                f"expecting {estimator.n_features_in_} features as input."
            )
        # The centres' own width as well: the kernels read that many values of each.
        check_width(X, estimator.cluster_centers_)
    return X


def _check_weight(sample_weight, X, *, ensure_non_negative: bool):
    """Sample weights as a lazy array with X's row blocks (their sign and whether all
    are 1 are checked in the fit's first pass), or None for unit weights."""
    _, da = _import_dask()
    if sample_weight is None:
        return None
    if isinstance(sample_weight, da.Array):
        if sample_weight.ndim != 1:
            raise ValueError("Sample weights must be 1D array or scalar")
        if sample_weight.shape != (X.shape[0],):
            raise ValueError(
                f"sample_weight.shape == {sample_weight.shape}, expected {(X.shape[0],)}!"
            )
        return sample_weight.astype(X.dtype).rechunk((X.chunks[0],))
    if isinstance(sample_weight, Real) and sample_weight == 1:
        return None
    w = _check_sample_weight(
        sample_weight, X, dtype=X.dtype, ensure_non_negative=ensure_non_negative
    )
    if np.all(w == 1):
        return None
    return da.from_array(w, chunks=(X.chunks[0],))


def validate_dask(estimator, X, sample_weight):
    """``(X, weights or None)`` of a dask fit, validated lazily (nothing is computed)."""
    X = _check_array(estimator, X, reset=True)
    return X, _check_weight(sample_weight, X, ensure_non_negative=True)


def predict_dask(estimator, X):
    """Nearest fitted centre of each row of a dask array, lazily (int32 dask array).

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from skformer import ExactLloydTransformer
    >>> est = ExactLloydTransformer(2, init=np.array([[0.0], [9.0]])).fit(
    ...     np.array([[0.0], [1.0], [9.0], [10.0]]))
    >>> predict_dask(est, da.from_array(np.array([[0.2], [8.0]]), chunks=1)).compute()
    array([0, 1], dtype=int32)
    """
    check_is_fitted(estimator)
    X = _check_array(estimator, X, reset=False)
    return dask_labels(X, estimator.cluster_centers_)


def transform_dask(estimator, X):
    """Distances of each row of a dask array to the fitted centres, lazily (n, k)."""
    check_is_fitted(estimator)
    X = _check_array(estimator, X, reset=False)
    centers = estimator.cluster_centers_
    dtype = distances(np.zeros((1, X.shape[1]), X.dtype), centers).dtype
    return X.map_blocks(_distances_block, centers=centers, dtype=dtype,
                        chunks=(X.chunks[0], (centers.shape[0],)),
                        meta=np.empty((0, 0), dtype=dtype))


def score_dask(estimator, X, sample_weight=None) -> float:
    """Opposite of the k-means objective of a dask array, computed block by block."""
    check_is_fitted(estimator)
    X = _check_array(estimator, X, reset=False)
    dask, _ = _import_dask()
    w = _check_weight(sample_weight, X, ensure_non_negative=False)
    parts = [dask.delayed(_inertia_block)(xb, wb, estimator.cluster_centers_)
             for xb, wb in zip(X.to_delayed().ravel(),
                               [None] * X.numblocks[0] if w is None
                               else w.to_delayed().ravel(), strict=True)]
    parts = dask.compute(*parts)
    functools.reduce(WeightStats.merge, [stats for _, stats in parts]).check(
        negative=True, dtype=X.dtype)
    return -float(sum(inertia for inertia, _ in parts))


def _inertia_block(xb, wb, centers):
    w = None if wb is None else np.asarray(wb)
    return labels_inertia(np.asarray(xb), centers, w)[1], WeightStats.of(w)


def _distances_block(xb, centers):
    return distances(np.asarray(xb), centers)
