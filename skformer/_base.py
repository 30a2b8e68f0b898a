"""The scikit-learn estimator base shared by skformer's clusterers.

Everything a user sees mirrors :class:`sklearn.cluster.KMeans`: parameter names,
fitted attributes, messages, the ``n_init`` and ``tol`` conventions. Subclasses only
say which transformer makes the clustering steps (:meth:`_make_model`).
"""

from __future__ import annotations

import logging
import warnings
from abc import ABC, abstractmethod
from contextlib import contextmanager
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.cluster import kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    _is_arraylike_not_scalar,
    check_array,
    check_is_fitted,
    validate_data,
)

from .nn.model import nearest_centre

logger = logging.getLogger("skformer")

# Rows per chunk when labelling points and summing their squared distances: small
# enough that the float64 temporaries stay a few MiB whatever the data size.
_ROWS = 2**11


class _Run(NamedTuple):
    centers: torch.Tensor  # (k, d), on the fit device, in the centred frame
    inertia: float | None  # None when not scored (a single run needs no comparison)
    labels: np.ndarray | None  # (n,) assignment to ``centers``, or None
    n_iter: int
    steps: dict | None = None  # steps of each kind, when a run mixes kinds


def resolve_device(device: str | torch.device) -> torch.device:
    """The torch device a ``device`` parameter names (``"auto"``: CUDA when present).

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a valid torch device.") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r} was requested but CUDA is not available; "
            "use device='cpu' or device='auto'."
        )
    return dev


def _assign_chunk(
    x: torch.Tensor, c: torch.Tensor, w: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Nearest centre (b=1 tensors x (1, m, d), c (1, k, d)) and the weighted sum of
    squared distances to it, the differences summed literally."""
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
        w = None if sample_weight is None else torch.tensor(sample_weight[s : s + _ROWS])
        lab, part = _assign_chunk(x, c, None if w is None else w.to(torch.float64))
        labels[s : s + _ROWS] = lab.numpy()
        inertia += float(part)
    return labels, inertia


def _same_clustering(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two labelings are the same partition up to a renaming of clusters."""
    pairs = np.unique(np.stack([a, b]), axis=1).shape[1]
    return pairs == np.unique(a).size == np.unique(b).size


def _is_dask(X) -> bool:
    """Whether ``X`` is a dask collection (told apart without importing dask)."""
    return type(X).__module__.startswith("dask.")


def _tolerance(X: np.ndarray, tol: float) -> float:
    """KMeans' relative tolerance: ``tol`` times the mean per-feature variance."""
    if tol == 0:
        return 0.0
    with np.errstate(over="ignore", under="ignore"):
        return float(np.mean(np.var(X, axis=0)) * tol)


def _column_mean(X: np.ndarray) -> np.ndarray:
    """``X.mean(axis=0)`` as KMeans computes it; in float64 where that overflows."""
    with np.errstate(over="ignore"):
        mean = X.mean(axis=0)
    if not np.all(np.isfinite(mean)):
        mean = X.mean(axis=0, dtype=np.float64).astype(X.dtype)
    return mean


def _unit_power(Xc: np.ndarray) -> int:
    """The exponent ``p`` with ``max |Xc| / 2**p`` in ``[1, 2)`` (0 for all-zero data)."""
    top = float(np.max(np.abs(Xc))) if Xc.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return 0
    return int(np.frexp(top)[1]) - 1


def _scaled_tolerance(tol_user: float, power: int, Xs: np.ndarray, tol: float) -> float:
    """The tolerance in the frame scaled by ``2**-power`` (exactly KMeans' value, scaled),
    recomputed on the scaled data ``Xs`` if the user-unit value overflowed or underflowed."""
    if tol == 0:
        return 0.0
    if np.isfinite(tol_user) and tol_user > 0:
        scaled = float(np.ldexp(tol_user, -2 * power))
        if scaled > 0 and np.isfinite(scaled):
            return scaled
    return _tolerance(Xs, tol)


def _rescaled_callable(init, power: int):
    """A callable ``init`` that sees the centred data in the user's units, as in KMeans."""

    def scaled_init(X, n_clusters, random_state):
        centers = init(np.ldexp(X, power), n_clusters, random_state=random_state)
        return np.ldexp(np.asarray(centers, dtype=X.dtype), -power)

    return scaled_init


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
        "device": [str, torch.device],
    }

    def __init__(
        self, n_clusters, *, init, n_init, max_iter, tol, verbose, random_state, device
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.device = device

    # -- what subclasses provide ------------------------------------------------------

    @abstractmethod
    def _make_model(self, n_features: int, device: torch.device, dtype: torch.dtype):
        """The module whose ``forward(x, c, w)`` returns ``(centres, labels)``."""

    # -- fitting ----------------------------------------------------------------------

    def _check_params_vs_input(self, X: np.ndarray, default_n_init: int = 10) -> None:
        if X.shape[0] < self.n_clusters:
            raise ValueError(
                f"n_samples={X.shape[0]} should be >= n_clusters={self.n_clusters}."
            )
        self._tol = _tolerance(X, self.tol)
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
                stacklevel=3,
            )
            self._n_init = 1

    def _validate_center_shape(self, X: np.ndarray, centers: np.ndarray) -> None:
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

    def _init_centroids(self, X, init, random_state, sample_weight) -> np.ndarray:
        if isinstance(init, str) and init == "k-means++":
            centers, _ = kmeans_plusplus(
                X, self.n_clusters, sample_weight=sample_weight, random_state=random_state
            )
        elif isinstance(init, str) and init == "random":
            seeds = random_state.choice(
                X.shape[0],
                size=self.n_clusters,
                replace=False,
                p=sample_weight / sample_weight.sum(),
            )
            centers = X[seeds]
        elif callable(init):
            centers = init(X, self.n_clusters, random_state=random_state)
            centers = check_array(centers, dtype=X.dtype, copy=False, order="C")
            self._validate_center_shape(X, centers)
        else:
            centers = init
        return centers

    def _iterate(self, model, x, w, c: torch.Tensor, max_iter: int) -> tuple[torch.Tensor, int]:
        """Iterate the model's steps from centres ``c`` (1, k, d) (KMeans' stopping rules).

        Stops at strict convergence (the assignment did not change) or when the
        squared centre shift is within the relative tolerance, or after ``max_iter``
        steps. Returns the final centres and the number of steps run.
        """
        labels_old = None
        i = -1
        for i in range(max_iter):
            step = model(x, c, w)
            shift = float((step.centres - c).square().sum())
            c = step.centres
            logger.info("Iteration %d, centre shift %.6g.", i, self._user_units(shift))
            if labels_old is not None and torch.equal(step.labels, labels_old):
                logger.info("Converged at iteration %d: strict convergence.", i)
                break
            if shift <= self._tol:
                logger.info("Converged at iteration %d: centre shift within tolerance.", i)
                break
            labels_old = step.labels
        return c, i + 1

    @staticmethod
    def _score(x, w, c: torch.Tensor) -> tuple[float, np.ndarray]:
        """Inertia of centres ``c`` (k, d) on the fit's points, and the labels."""
        labels, parts = [], []
        for s in range(0, x.shape[1], _ROWS):
            ws = None if w is None else w[0, s : s + _ROWS]
            lab, part = _assign_chunk(x[:, s : s + _ROWS], c.unsqueeze(0), ws)
            labels.append(lab)
            parts.append(part)
        return float(torch.stack(parts).sum()), torch.cat(labels).cpu().numpy()

    def _user_units(self, squared: float) -> float:
        """A squared distance of the fit's scaled frame in the user's units (for logs)."""
        return float(np.ldexp(squared, 2 * getattr(self, "_power", 0)))

    def _prepare(self, model, x, w, random_state):
        """What :meth:`_single_run` iterates; the model itself unless overridden."""
        return model

    def _single_run(self, model, x, w, centers, *, score: bool = True) -> _Run:
        """One run from initial ``centers`` (k, d); scored (inertia, labels) if asked."""
        c, n_iter = self._iterate(model, x, w, centers.unsqueeze(0), self.max_iter)
        c = c[0]
        if not score:
            return _Run(c, None, None, n_iter)
        return _Run(c, *self._score(x, w, c), n_iter)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Compute the clustering.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training instances. Sparse matrices are refused (convert with
            ``.toarray()``).
        y : Ignored
            Not used, present here for API consistency by convention.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the observations. ``sample_weight`` is not used
            during initialization if ``init`` is a callable or a user provided array.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        if _is_dask(X):  # a dask.array: fitted block by block (skformer.dask)
            from .dask import fit_dask

            return fit_dask(self, X, sample_weight)
        with _verbose_logging(self.verbose):
            return self._fit(X, sample_weight)

    def _fit(self, X, sample_weight):
        X = validate_data(self, X, dtype=[np.float64, np.float32], order="C")
        self._check_params_vs_input(X)
        random_state = check_random_state(self.random_state)
        sample_weight = _check_sample_weight(
            sample_weight, X, dtype=X.dtype, ensure_non_negative=True
        )
        device = resolve_device(self.device)
        dtype = torch.float32 if X.dtype == np.float32 else torch.float64

        init = self.init
        if _is_arraylike_not_scalar(init):
            init = check_array(init, dtype=X.dtype, copy=True, order="C")
            self._validate_center_shape(X, init)

        # Centre the data and bring it to unit size by a power of two. A translation and
        # one scale preserve the k-means problem; a power of two rescales every float
        # exactly, so the steps are those on the raw data, but squared distances can
        # neither overflow nor underflow, whatever the data's units.
        X_mean = _column_mean(X)
        Xc = X - X_mean
        power = self._power = _unit_power(Xc)
        np.ldexp(Xc, -power, out=Xc)
        self._tol = _scaled_tolerance(self._tol, power, Xc, self.tol)
        if _is_arraylike_not_scalar(init):
            init = np.ldexp(init - X_mean, -power)
        elif callable(init) and power != 0:
            init = _rescaled_callable(init, power)
        x = torch.from_numpy(Xc).to(device).unsqueeze(0)
        unit = bool(np.all(sample_weight == 1))
        w = None if unit else torch.from_numpy(sample_weight).to(device).unsqueeze(0)
        model = self._prepare(self._make_model(X.shape[1], device, dtype), x, w, random_state)

        # All starts are drawn first, in KMeans' order (the runs draw nothing), then the
        # runs go through joblib: sequential by default, in parallel under a user's
        # ``joblib.parallel_config(n_jobs=..., backend=...)`` (threads share the model).
        starts = []
        for _ in range(self._n_init):
            starts.append(self._init_centroids(Xc, init, random_state, sample_weight))
            logger.info("Initialization complete")
        runs = Parallel(prefer="threads")(
            delayed(self._single_run)(
                model, x, w, torch.from_numpy(np.asarray(start)).to(device, dtype),
                score=self._n_init > 1,
            )
            for start in starts
        )
        best: _Run | None = None
        for run in runs:
            if best is None or (
                run.inertia < best.inertia and not _same_clustering(run.labels, best.labels)
            ):
                best = run

        centers = np.ldexp(best.centers.cpu().numpy(), power) + X_mean
        self.cluster_centers_ = centers.astype(X.dtype, copy=False)
        self._n_features_out = self.cluster_centers_.shape[0]
        self.labels_, self.inertia_ = labels_inertia(X, self.cluster_centers_, sample_weight)
        self.n_iter_ = best.n_iter
        self._set_run_attributes(best)
        distinct = np.unique(self.labels_).size
        if distinct < self.n_clusters:
            warnings.warn(
                f"Number of distinct clusters ({distinct}) found smaller than "
                f"n_clusters ({self.n_clusters}). Possibly due to duplicate points in X.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _set_run_attributes(self, run: _Run) -> None:
        """Hook for subclasses: extra fitted attributes from the best run."""

    # -- using the fitted centres ----------------------------------------------------

    def _check_test_data(self, X):
        return validate_data(self, X, reset=False, dtype=[np.float64, np.float32], order="C")

    def fit_predict(self, X, y=None, sample_weight=None):
        """Compute the clustering and return the cluster index of each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
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
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,), int32
            A dask array when ``X`` is a dask array.
        """
        check_is_fitted(self)
        if _is_dask(X):
            from .dask import predict_dask

            return predict_dask(self, X)
        X = self._check_test_data(X)
        return labels_inertia(X, self.cluster_centers_)[0]

    def fit_transform(self, X, y=None, sample_weight=None):
        """Compute the clustering and the distances of X to the centres.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_clusters)
        """
        if _is_dask(X):
            return self.fit(X, sample_weight=sample_weight).transform(X)
        return self.fit(X, sample_weight=sample_weight)._transform(self._check_test_data(X))

    def transform(self, X):
        """Euclidean distance of each sample to each fitted centre.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_clusters)
            A dask array when ``X`` is a dask array.
        """
        check_is_fitted(self)
        if _is_dask(X):
            from .dask import transform_dask

            return transform_dask(self, X)
        return self._transform(self._check_test_data(X))

    def _transform(self, X):
        return euclidean_distances(X, self.cluster_centers_)

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the k-means objective of X against the fitted centres.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        check_is_fitted(self)
        if _is_dask(X):
            from .dask import score_dask

            return score_dask(self, X, sample_weight)
        X = self._check_test_data(X)
        sample_weight = _check_sample_weight(sample_weight, X, dtype=X.dtype)
        return -labels_inertia(X, self.cluster_centers_, sample_weight)[1]


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
