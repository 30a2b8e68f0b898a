"""Inputs at the edges: data near the largest float, refits that fail, devices that
hold no values, and what a batch of problems warns (issue 32's trust battery).

Each test reproduces a failure that was silent (NaN centres, a kernel reading past the
end of the centres, torch's own errors) and checks the behaviour
``docs/reliability.rst`` ("Inputs at the edges") documents:

* finite data near float64's (or float32's) largest value are clustered: finite
  centres in the user's units, labels of the nearest centre, ``inertia_`` inf only
  where the true value exceeds float64's range, never NaN; in every container and in
  :func:`skformer.batch_k_means`;
* a fit that raises leaves the estimator as it was, and every method that reads the
  centres checks the width of ``X`` against them;
* ``device="meta"`` (and meta tensors) are refused with a ValueError naming the
  supported device types.
"""

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from skformer import ExactLloydTransformer, TransformerKMeans, batch_k_means
from skformer._fit import labels_inertia
from skformer._fit.assign import distances

da = pytest.importorskip("dask.array")

ESTIMATORS = (ExactLloydTransformer, TransformerKMeans)


def _memmap(X):
    path = Path(tempfile.mkdtemp()) / "X.dat"
    out = np.memmap(path, dtype=X.dtype, mode="w+", shape=X.shape)
    out[:] = X
    out.flush()
    return np.memmap(path, dtype=X.dtype, mode="r", shape=X.shape)


CONTAINERS = {
    "numpy": lambda X: X,
    "memmap": _memmap,
    "dask": lambda X: da.from_array(X, chunks=(2, X.shape[1])),
    "csr": sp.csr_matrix,
}


def _fit(Estimator, X, k, **params):
    with warnings.catch_warnings():
        # no overflow, no invalid value (but a sparse summary's variance in the user's
        # units, by scikit-learn's mean_variance_axis, overflows float32 with its own
        # warning: the fit then takes the variance from the fit frame)
        warnings.simplefilter("ignore" if sp.issparse(X) else "error", RuntimeWarning)
        return Estimator(k, device="cpu", **params).fit(X)


def _sorted_rows(c):
    c = np.asarray(c)
    return c[np.lexsort(c.T[::-1])]


# -- finite data near the largest float ------------------------------------------------

# (X, k, expected centres (sorted rows), expected labels' partition, inertia)
NEAR_MAX = {
    # the brief's case: the mean overflowed, the centres came back NaN, labels all 0
    "near": (np.array([[1.7e308], [1.6e308], [1.0e308]]), 2,
             [[1.0e308], [1.65e308]], [0, 0, 1], np.inf),
    # the range exceeds float64's: x - mean overflows
    "span": (np.array([[1.7e308], [1.6e308], [-1.7e308], [-1.6e308]]), 2,
             [[-1.65e308], [1.65e308]], [0, 0, 1, 1], np.inf),
    # a range beyond float64's, yet an inertia within it: it comes back finite
    "tight": (np.array([[-1.7e308], [1.7e308], [0.0], [1.0]]), 3,
              [[-1.7e308], [0.5], [1.7e308]], [0, 1, 2, 2], 0.5),
}


def _same_partition(labels, expected):
    labels, expected = np.asarray(labels), np.asarray(expected)
    pairs = set(zip(labels.tolist(), expected.tolist(), strict=True))
    return len(pairs) == len(set(labels.tolist())) == len(set(expected.tolist()))


@pytest.mark.parametrize("Estimator", ESTIMATORS)
@pytest.mark.parametrize("container", list(CONTAINERS))
@pytest.mark.parametrize("case", list(NEAR_MAX))
def test_data_near_float64_max_are_clustered(Estimator, container, case):
    X, k, centres, partition, inertia = NEAR_MAX[case]
    est = _fit(Estimator, CONTAINERS[container](X), k, init="random", n_init=3,
               random_state=0)
    np.testing.assert_allclose(_sorted_rows(est.cluster_centers_), centres, rtol=1e-12)
    assert _same_partition(np.asarray(est.labels_), partition)
    assert est.inertia_ == inertia
    # the methods that read the centres: no NaN either
    np.testing.assert_array_equal(np.asarray(est.predict(X)), np.asarray(est.labels_))
    assert est.score(X) == -inertia
    # distances: inf only where the true one exceeds float64's range
    with np.errstate(over="ignore"):  # (one feature: the distance is |x - c|)
        expected = 2 * np.abs(X / 2 - est.cluster_centers_.T / 2)
    np.testing.assert_allclose(est.transform(X), expected, rtol=1e-12)


def test_data_near_float64_max_n_iter_as_scaled_data():
    """The tolerance comes from the variance in the fit frame: the number of steps is
    that of the same data in moderate units (it was one step, tol = inf, for dask,
    memmaps and sparse data beyond 1e154)."""
    rng = np.random.default_rng(0)
    base = np.r_[rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + 3]
    init = base[[0, 1]]
    ref = KMeans(2, init=init, n_init=1).fit(base)
    for scale in (1e200, 2.0**1000):
        X = base * scale
        for make in CONTAINERS.values():
            est = _fit(ExactLloydTransformer, make(X), 2, init=init * scale)
            assert est.n_iter_ == ref.n_iter_
            np.testing.assert_array_equal(np.asarray(est.labels_), ref.labels_)


@pytest.mark.parametrize("Estimator", ESTIMATORS)
@pytest.mark.parametrize("container", ["numpy", "memmap", "dask", "csr"])
def test_float32_data_near_float32_max(Estimator, container):
    X = np.array([[3.3e38], [3.2e38], [-3.3e38], [-3.2e38]], dtype=np.float32)
    est = _fit(Estimator, CONTAINERS[container](X), 2, random_state=0)
    assert est.cluster_centers_.dtype == np.float32
    np.testing.assert_allclose(_sorted_rows(est.cluster_centers_), [[-3.25e38], [3.25e38]],
                               rtol=1e-6)
    assert _same_partition(np.asarray(est.labels_), [0, 0, 1, 1])
    assert est.inertia_ == pytest.approx(4 * 0.05e38**2, rel=1e-5)  # float64, finite


def test_assignment_when_every_difference_overflows():
    """A row whose differences to every centre overflow still goes to the nearest."""
    centres = np.array([[-1.7e308], [-1.6e308]])
    labels, inertia = labels_inertia(np.array([[1.7e308]]), centres)
    assert labels.tolist() == [1] and inertia == np.inf
    D = distances(np.array([[1.7e308], [0.0]]), centres)
    assert D[0, 0] == np.inf and D[0, 1] == np.inf  # 3.4e308 and 3.3e308 exceed the max
    np.testing.assert_allclose(D[1], [1.7e308, 1.6e308])
    np.testing.assert_allclose(distances(np.array([[1e300]]), np.array([[-1e300]])), [[2e300]])


@pytest.mark.parametrize("form", ["list", "array", "tensor"])
@pytest.mark.parametrize("case", list(NEAR_MAX))
def test_batch_data_near_float64_max(form, case):
    X, k, centres, partition, inertia = NEAR_MAX[case]
    Xb = {"list": [X], "array": X[None], "tensor": torch.from_numpy(X[None])}[form]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = batch_k_means(Xb, k, init=[np.array(centres) * 0.99], device="cpu")
    c = np.asarray(result.cluster_centers[0])
    np.testing.assert_allclose(_sorted_rows(c), centres, rtol=1e-12)
    assert _same_partition(np.asarray(result.labels[0]), partition)
    # the batch's inertia is summed in the working frame: terms below 2**-1074 of the
    # squared scale are lost (docs/reliability.rst), inf only beyond float64's range
    assert float(result.inertia[0]) == (0.0 if case == "tight" else inertia)


def test_batch_float32_near_float32_max_and_tiny_float64():
    X32 = np.array([[3.3e38], [3.2e38], [-3.3e38], [-3.2e38]], dtype=np.float32)
    c, labels, inertia, _ = batch_k_means([X32], 2, random_state=0)
    np.testing.assert_allclose(_sorted_rows(c[0]), [[-3.25e38], [3.25e38]], rtol=1e-6)
    assert _same_partition(labels[0], [0, 0, 1, 1]) and np.isfinite(inertia).all()
    # the other end: rows near 1e-160 (a tolerance of inf, one step) and subnormal rows
    # (NaN centres) behave as in moderate units
    rng = np.random.default_rng(0)
    base = np.r_[rng.normal(size=(50, 2)), rng.normal(size=(50, 2)) + 3]
    ref = KMeans(2, init=base[[0, 1]], n_init=1).fit(base)
    for scale in (1e-160, 1e-310):
        c, labels, _, n_iter = batch_k_means((base * scale)[None], 2,
                                             init=(base[[0, 1]] * scale)[None])
        assert np.isfinite(c).all() and n_iter[0] == ref.n_iter_
        np.testing.assert_array_equal(labels[0], ref.labels_)


# -- a failed refit, and the width of X against the centres ----------------------------


def _failing_refits(rng):
    """Refits that fail after validation set n_features_in_ (5 features, not 3)."""
    return [
        (lambda est: est.fit(rng.normal(size=(1, 5))), r"n_samples=1 should be >= "),
        (lambda est: est.set_params(init=np.zeros((2, 3))).fit(rng.normal(size=(9, 5))),
         r"does not match the number of features of the data 5"),
        (lambda est: est.set_params(device="meta").fit(rng.normal(size=(9, 5))),
         "device='meta' is not supported"),
    ]


@pytest.mark.parametrize("Estimator", ESTIMATORS)
@pytest.mark.parametrize("case", range(3))
def test_failed_refit_leaves_the_estimator_as_it_was(Estimator, case):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    est = Estimator(2, random_state=0, device="cpu").fit(X)
    before = {k: v for k, v in vars(est).items() if k.endswith("_")}
    refit, match = _failing_refits(rng)[case]
    with pytest.raises(ValueError, match=match):
        refit(est)
    est.set_params(init="k-means++", device="cpu")
    assert est.n_features_in_ == 3
    after = {k: v for k, v in vars(est).items() if k.endswith("_")}
    assert after.keys() == before.keys()
    np.testing.assert_array_equal(est.cluster_centers_, before["cluster_centers_"])
    X5 = rng.normal(size=(4, 5))
    message = "X has 5 features, but .* is expecting 3 features"
    for method in (est.predict, est.score, est.transform):
        with pytest.raises(ValueError, match=message):
            method(X5)
        with pytest.raises(ValueError, match=message):
            method(da.from_array(X5))
    np.testing.assert_array_equal(est.predict(X), before["labels_"])


def test_failed_first_fit_leaves_the_estimator_unfitted():
    est = ExactLloydTransformer(2)
    with pytest.raises(ValueError, match="n_samples=1 should be >= n_clusters=2"):
        est.fit(np.zeros((1, 4)))
    assert not hasattr(est, "n_features_in_")
    with pytest.raises(Exception, match="not fitted"):
        est.predict(np.zeros((1, 4)))


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_width_is_checked_against_the_centres(Estimator):
    """Were n_features_in_ and the centres ever to disagree, the centres' width rules:
    the kernels never read past their end."""
    rng = np.random.default_rng(0)
    est = Estimator(2, random_state=0, device="cpu").fit(rng.normal(size=(20, 3)))
    est.n_features_in_ = 5
    X5 = rng.normal(size=(4, 5))
    match = r"X has 5 features, but the fitted centres have 3"
    for method in (est.predict, est.score, est.transform):
        with pytest.raises(ValueError, match=match):
            method(X5)
        with pytest.raises(ValueError, match=match):
            method(da.from_array(X5))
    with pytest.raises(ValueError, match=match):
        labels_inertia(X5, est.cluster_centers_)


# -- devices that hold no values ------------------------------------------------------

META = "not supported: skformer runs on device types 'cpu' and 'cuda'"
X3 = np.random.default_rng(0).normal(size=(3, 10, 2))


@pytest.mark.parametrize("Estimator", ESTIMATORS)
@pytest.mark.parametrize("device", ["meta", torch.device("meta")])
def test_meta_device_is_refused_by_the_estimators(Estimator, device):
    with pytest.raises(ValueError, match=f"device='meta' is {META}"):
        Estimator(2, device=device).fit(X3[0])


@pytest.mark.parametrize(("X", "device", "match"), [
    (X3, "meta", f"device='meta' is {META}"),
    (torch.zeros(3, 10, 2, device="meta"), "auto", f"X is on device 'meta', which is {META}"),
    ([torch.zeros(10, 2, device="meta")], "auto", f"X is on device 'meta', which is {META}"),
    (torch.zeros(3, 10, 2, device="meta"), "cpu", "X is a tensor on device 'meta'"),
    ([torch.zeros(10, 2, device="meta")], "cpu", r"X\[0\] is a tensor on device 'meta'"),
])
def test_meta_device_is_refused_by_batch_k_means(X, device, match):
    with pytest.raises(ValueError, match=match):
        batch_k_means(X, 2, device=device)


# -- batch_k_means: fewer distinct clusters than n_clusters ----------------------------


def test_batch_warns_once_for_fewer_distinct_clusters():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 6, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ordinary problems: no warning
        batch_k_means(X, 3, random_state=0)
    one = X.copy()
    one[4] = 0.0
    with pytest.warns(ConvergenceWarning) as record:
        batch_k_means(one, 3, random_state=0)
    assert len(record) == 1
    assert str(record[0].message) == (
        "Number of distinct clusters (1) found smaller than n_clusters (3) in problem 4. "
        "Possibly due to duplicate points in X.")
    many = X.copy()
    many[1::2] = 0.0
    many[2, :, 0] = [0, 0, 0, 0, 1, 1]
    with pytest.warns(ConvergenceWarning) as record:
        batch_k_means(many, 3, random_state=0)
    assert len(record) == 1
    assert str(record[0].message) == (
        "Number of distinct clusters found smaller than n_clusters in 16 of 30 problems: "
        "problem 1 (1 < 3), problem 2 (2 < 3), problem 3 (1 < 3), problem 5 (1 < 3), "
        "problem 7 (1 < 3), problem 9 (1 < 3), problem 11 (1 < 3), problem 13 (1 < 3), "
        "problem 15 (1 < 3), problem 17 (1 < 3), and 6 more. Possibly due to duplicate "
        "points in X.")


def test_batch_distinct_clusters_ignore_padding():
    """Padded rows (label -1) are no cluster; a list of problems is counted alike."""
    X = np.zeros((2, 6, 1))
    X[:, :3, 0] = [0.0, 1.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batch_k_means(X, 3, lengths=[3, 3], random_state=0)
        batch_k_means([X[0, :3], X[1, :3]], [3, 2], random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"\(2\) found smaller than n_clusters "
                                                r"\(3\) in problem 1\."):
        batch_k_means([X[0, :3], np.array([[0.0], [0.0], [5.0]])], 3, random_state=0)
