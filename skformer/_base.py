"""The scikit-learn estimator base shared by skformer's clusterers.

Everything a user sees mirrors :class:`sklearn.cluster.KMeans`: parameter names,
fitted attributes, messages, the ``n_init`` and ``tol`` conventions. The estimators
validate their input and delegate the fit to the private fit layer (:mod:`skformer._fit`),
which runs the same flow for a NumPy array, a memmap and a dask array; subclasses say
which steps the fit runs (:meth:`_fit_spec`).
"""

from __future__ import annotations

import logging
import warnings
from abc import ABC, abstractmethod
from contextlib import contextmanager
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    _is_arraylike_not_scalar,
    check_array,
    check_is_fitted,
    validate_data,
)

from ._fit import FitResult, FitSpec, as_source, fit, is_dask, labels_inertia
from ._fit.assign import check_width, distances

__all__ = ["SUPPORTED_DEVICES", "BaseTransformerKMeans", "labels_inertia", "resolve_device"]

logger = logging.getLogger("skformer")

SUPPORTED_DEVICES = ("cpu", "cuda")
"""The torch device types a fit runs on (a ``"meta"`` tensor holds no values, and the
fit layer's float64 arithmetic and CPU kernels are written for these two)."""


def resolve_device(device: str | torch.device) -> torch.device:
    """The torch device a ``device`` parameter names (``"auto"``: CUDA when present).

    Raises a ValueError for a name torch does not know, a device type other than
    ``"cpu"`` and ``"cuda"`` (:data:`SUPPORTED_DEVICES`), and CUDA where it is absent.

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("meta")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: device='meta' is not supported: skformer runs on device types 'cpu' and ...
    """
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a valid torch device.") from exc
    if dev.type not in SUPPORTED_DEVICES:
        name = str(device) if isinstance(device, torch.device) else device
        raise ValueError(
            f"device={name!r} is not supported: skformer runs on device types 'cpu' and "
            "'cuda' (e.g. 'cpu', 'cuda', 'cuda:1', or 'auto')."
        )
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r} was requested but CUDA is not available; "
            "use device='cpu' or device='auto'."
        )
    return dev


class BaseTransformerKMeans(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin, BaseEstimator, ABC
):
    """Common machinery of the transformer clusterers (not for direct use)."""

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "init": [StrOptions({"k-means++", "random"}), callable, "array-like"],
        "n_init": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "copy_x": ["boolean"],
        "algorithm": [StrOptions({"lloyd", "elkan"})],
        "device": [str, torch.device],
    }

    def __init__(
        self, n_clusters, *, init, n_init, max_iter, tol, verbose, random_state, copy_x,
        algorithm, device
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.copy_x = copy_x
        self.algorithm = algorithm
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR, as KMeans
        return tags

    # -- what subclasses provide ------------------------------------------------------

    @abstractmethod
    def _fit_spec(self, n_features: int, device: torch.device, random_state) -> dict:
        """Fields of :class:`~skformer._fit.FitSpec` that depend on the estimator
        (``exact``, ``learned``, ``finish``, ``learned_starts``)."""

    # -- fitting ----------------------------------------------------------------------

    def _check_params_vs_input(self, X, default_n_init: int = 10) -> None:
        if self.algorithm == "elkan":
            raise ValueError(
                f"algorithm='elkan' is not supported by {self.__class__.__name__}: its "
                "transformer layers are Lloyd iterations. Use algorithm='lloyd' (KMeans' "
                "default), which converges to the same clustering as 'elkan'."
            )
        if X.shape[0] < self.n_clusters:
            raise ValueError(
                f"n_samples={X.shape[0]} should be >= n_clusters={self.n_clusters}."
            )
        if self.n_init == "auto":
            fixed = _is_arraylike_not_scalar(self.init) or self.init == "k-means++"
            self._n_init = 1 if fixed else default_n_init
        else:
            self._n_init = self.n_init
        if _is_arraylike_not_scalar(self.init) and self._n_init != 1:
            warnings.warn(
                "Explicit initial center position passed: performing only one init in "
                f"{self.__class__.__name__} instead of n_init={self._n_init}.",
                RuntimeWarning,
                stacklevel=4,
            )
            self._n_init = 1

    def _validate_center_shape(self, X, centers: np.ndarray) -> None:
        if centers.shape[0] != self.n_clusters:
            raise ValueError(
                f"The shape of the initial centers {centers.shape} does not match "
                f"the number of clusters {self.n_clusters}."
            )
        if centers.shape[1] != X.shape[1]:
            raise ValueError(
                f"The shape of the initial centers {centers.shape} does not match "
                f"the number of features of the data {X.shape[1]}."
            )

    def _validate_fit_input(self, X, sample_weight):
        """``(X, weights or None)`` validated as KMeans validates them; a memmap stays
        a memmap (read block by block, never copied)."""
        memmap = isinstance(X, np.memmap)
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          order="C", copy=False)
        X = _canonical(X)
        if memmap and not isinstance(X, np.memmap):
            X = X.view(np.memmap) if X.base is not None else X
        sample_weight = _check_sample_weight(
            sample_weight, X, dtype=X.dtype, ensure_non_negative=True
        )
        unit = bool(np.all(sample_weight == 1))
        return X, None if unit else sample_weight

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Compute the clustering.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training instances: an array (a ``numpy.memmap`` is read block by block,
            never copied), a sparse matrix or array (CSR; other formats are converted
            to CSR; never densified) or a ``dask.array.Array`` (fitted block by block
            on the active dask scheduler).
        y : Ignored
            Not used, present here for API consistency by convention.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the observations. ``sample_weight`` is not used
            during initialization if ``init`` is a callable or a user provided array.

        Returns
        -------
        self : object
            Fitted estimator.

        Notes
        -----
        A fit that raises leaves the estimator as it was before the call (fitted
        attributes, ``n_features_in_`` and ``feature_names_in_`` included): a previous
        fit's centres stay usable, and are never paired with a failed fit's width.
        """
        # A fit that fails leaves the estimator as it found it: validation sets
        # n_features_in_ (and feature names) before checks that may still fail, and a
        # previous fit's centres must never meet data of another width. (Inline, not a
        # helper: the warnings' stacklevels count the frames up to the caller.)
        before = dict(vars(self))
        try:
            with _verbose_logging(self.verbose):
                if is_dask(X):
                    from .dask import validate_dask

                    X, w = validate_dask(self, X, sample_weight)
                else:
                    X, w = self._validate_fit_input(X, sample_weight)
                self._check_params_vs_input(X)
                init = self.init
                if _is_arraylike_not_scalar(init):
                    init = check_array(init, dtype=X.dtype, copy=True, order="C")
                    self._validate_center_shape(X, init)
                device = resolve_device(self.device)
                random_state = check_random_state(self.random_state)
                spec = FitSpec(
                    n_clusters=self.n_clusters, init=init, n_init=self._n_init,
                    max_iter=self.max_iter, tol=self.tol, random_state=random_state,
                    **self._fit_spec(X.shape[1], device, random_state),
                )
                source = as_source(X, w, device)
                result = fit(source, spec)
                self._set_fitted(source, result, X.dtype)
        except BaseException:
            vars(self).clear()
            vars(self).update(before)
            raise
        return self

    def _set_fitted(self, source, result: FitResult, dtype) -> None:
        centers = result.frame.to_user(result.centers.cpu().numpy())
        self.cluster_centers_ = centers.astype(dtype, copy=False)
        self._n_features_out = self.cluster_centers_.shape[0]
        self.labels_, self.inertia_, sizes = source.final(self.cluster_centers_)
        self.n_iter_ = result.n_iter
        self._set_run_attributes(result)
        distinct = int(np.count_nonzero(sizes))
        if distinct < self.n_clusters:
            warnings.warn(
                f"Number of distinct clusters ({distinct}) found smaller than "
                f"n_clusters ({self.n_clusters}). {_why_fewer(source, self.n_clusters)}",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _set_run_attributes(self, result: FitResult) -> None:
        """Hook for subclasses: extra fitted attributes from the fit's result."""

    # -- using the fitted centres ----------------------------------------------------

    def _check_test_data(self, X):
        X = validate_data(self, X, accept_sparse="csr", reset=False,
                          dtype=[np.float64, np.float32], order="C")
        # The centres' own width as well: the kernels read that many values of each.
        check_width(X, self.cluster_centers_)
        return _canonical(X)

    def fit_predict(self, X, y=None, sample_weight=None):
        """Compute the clustering and return the cluster index of each sample.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            A lazy dask array when ``X`` is a dask array.
        """
        return self.fit(X, sample_weight=sample_weight).labels_

    def predict(self, X):
        """Index of the nearest fitted centre of each sample.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,), int32
            A dask array when ``X`` is a dask array.
        """
        check_is_fitted(self)
        if is_dask(X):
            from .dask import predict_dask

            return predict_dask(self, X)
        X = self._check_test_data(X)
        return labels_inertia(X, self.cluster_centers_)[0]

    def fit_transform(self, X, y=None, sample_weight=None):
        """Compute the clustering and the distances of X to the centres.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_clusters)
        """
        if is_dask(X):
            return self.fit(X, sample_weight=sample_weight).transform(X)
        return self.fit(X, sample_weight=sample_weight)._transform(self._check_test_data(X))

    def transform(self, X):
        """Euclidean distance of each sample to each fitted centre.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_clusters)
            A dask array when ``X`` is a dask array.
        """
        check_is_fitted(self)
        if is_dask(X):
            from .dask import transform_dask

            return transform_dask(self, X)
        return self._transform(self._check_test_data(X))

    def _transform(self, X):
        return distances(X, self.cluster_centers_)

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the k-means objective of X against the fitted centres.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        check_is_fitted(self)
        if is_dask(X):
            from .dask import score_dask

            return score_dask(self, X, sample_weight)
        X = self._check_test_data(X)
        sample_weight = _check_sample_weight(sample_weight, X, dtype=X.dtype)
        return -labels_inertia(X, self.cluster_centers_, sample_weight)[1]


def _why_fewer(source, n_clusters: int) -> str:
    """The cause of fewer distinct clusters than ``n_clusters``, as far as the source
    tells it (:meth:`~skformer._fit.sources.Source.distinct_rows`): KMeans' words where X
    holds fewer distinct rows than clusters; else a cluster left without points, whose
    centre the exact Lloyd steps keep where KMeans moves it to a far point."""
    emptied = ("A cluster was left without points: the exact Lloyd steps keep its "
               "centre where KMeans moves it to a far point (learned_starts=1, or "
               "breathing_depth >= 1, moves it to where a centre is missing).")
    distinct = source.distinct_rows(n_clusters)
    if distinct is None:
        return ("Possibly due to duplicate points in X. Otherwise: "
                f"{emptied[0].lower()}{emptied[1:]}")
    return emptied if distinct else "Possibly due to duplicate points in X."


def _canonical(X):
    """A CSR ``X`` with sorted indices and no duplicate entries (a copy only when ``X``
    is not already so: the user's matrix is never modified); other ``X`` unchanged."""
    if sp.issparse(X) and not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


@contextmanager
def _verbose_logging(verbose):
    """Show skformer's progress messages on stderr while ``verbose`` is set.

    Leaves the ``"skformer"`` logger as it found it, so a later ``verbose=0`` fit
    is silent; a user who configures that logger themselves keeps their setup.
    """
    if not verbose:
        yield
        return
    handler = None
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.setLevel(level)
        if handler is not None:
            logger.removeHandler(handler)
