"""The estimator ExactLloydTransformer: oracle, properties, errors.

Oracle first: with the same parameters and ``random_state`` the estimator must give what
``sklearn.cluster.KMeans(algorithm="lloyd")`` gives (same initial centres, same
iterations, same stopping rule), and what :func:`skformer.reference.lloyd` gives from an
explicit initialisation. Then the properties of a k-means clusterer (weights, translation,
permutation, dtypes, the scikit-learn API), then the error messages, word for word.
"""

import logging
import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from scipy.spatial.distance import cdist
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.datasets import load_iris, make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils import check_random_state

from skformer import ExactLloydTransformer
from skformer.reference import lloyd, lloyd_step

ATOL = 1e-9
RTOL = 1e-9


def blobs(seed, n=60, d=4, k=3):
    """Well-separated blobs and one initial centre taken from each blob.

    Starting from one point per blob, no cluster ever empties.
    """
    X, y = make_blobs(n, n_features=d, centers=k, cluster_std=0.6, random_state=seed)
    init = X[[np.flatnonzero(y == j)[0] for j in range(k)]].copy()
    return X, init


def iris():
    return load_iris().data


def ill_posed(X, init, n_init, seed, n_clusters=3, max_iter=300):
    """Why Lloyd's iterates from one of KMeans' starts may leave the oracle's domain, or None.

    Two cases are not comparable with KMeans: a cluster that empties (KMeans relocates
    its centre, we keep it, by design) and a point equidistant from two centres in exact
    arithmetic (data with few decimals, like iris: each implementation's rounding picks a
    side). The starts are drawn as KMeans draws them, from the centred data and one
    random stream, and followed with the reference Lloyd step.
    """
    random_state = check_random_state(seed)
    mean = X.mean(axis=0)
    Xc = X - mean
    n = X.shape[0]
    for _ in range(n_init):
        if init == "k-means++":
            centres = kmeans_plusplus(Xc, n_clusters, random_state=random_state)[0]
        else:
            centres = Xc[random_state.choice(n, n_clusters, replace=False, p=np.full(n, 1 / n))]
        centres = centres + mean
        for _ in range(max_iter):
            sq = np.sort(cdist(X, centres, "sqeuclidean"), axis=1)
            if np.any(sq[:, 1] - sq[:, 0] <= 1e-9 * (1 + sq[:, 0])):
                return "a point is equidistant from two centres: rounding decides"
            new, labels = lloyd_step(X, centres)
            if np.unique(labels).size < n_clusters:
                return "a cluster empties: KMeans relocates its centre, we keep it"
            if np.array_equal(new, centres):
                break
            centres = new
    return None


def assert_same_as_kmeans(est, km, unless=None):
    """The same fit, or a skip when it differs and ``unless`` (a reason) explains why."""
    try:
        _assert_same_as_kmeans(est, km)
    except AssertionError:
        if unless is None:
            raise
        pytest.skip(unless)


def _assert_same_as_kmeans(est, km):
    np.testing.assert_allclose(est.cluster_centers_, km.cluster_centers_, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(est.labels_, km.labels_)
    assert est.inertia_ == pytest.approx(km.inertia_, rel=RTOL)
    assert est.n_iter_ == km.n_iter_


@pytest.fixture
def restore_skformer_logger():
    """Undo what ``verbose`` does to the "skformer" logger (a handler and a level)."""
    logger = logging.getLogger("skformer")
    handlers, level = list(logger.handlers), logger.level
    yield logger
    for handler in list(logger.handlers):
        if handler not in handlers:
            logger.removeHandler(handler)
    logger.setLevel(level)


# -- oracle -----------------------------------------------------------------------------


@pytest.mark.parametrize("embedding", ["binary", "onehot"])
@pytest.mark.parametrize("n_init", [1, 3])
@pytest.mark.parametrize("init", ["k-means++", "random"])
@pytest.mark.parametrize("dataset", ["blobs", "iris"])
def test_same_as_kmeans(global_random_seed, dataset, init, n_init, embedding):
    X = blobs(global_random_seed)[0] if dataset == "blobs" else iris()
    reason = ill_posed(X, init, n_init, global_random_seed)
    params = dict(n_clusters=3, init=init, n_init=n_init, random_state=global_random_seed)
    est = ExactLloydTransformer(embedding=embedding, **params).fit(X)
    km = KMeans(algorithm="lloyd", **params).fit(X)
    assert_same_as_kmeans(est, km, unless=reason)


@pytest.mark.parametrize("embedding", ["binary", "onehot"])
@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_dense_path_same_as_kmeans(global_random_seed, init, embedding):
    X = blobs(global_random_seed, n=30, d=3)[0]
    reason = ill_posed(X, init, 2, global_random_seed)
    params = dict(n_clusters=3, init=init, n_init=2, random_state=global_random_seed)
    est = ExactLloydTransformer(embedding=embedding, path="dense", **params).fit(X)
    km = KMeans(algorithm="lloyd", **params).fit(X)
    assert_same_as_kmeans(est, km, unless=reason)


@pytest.mark.parametrize("path", ["fused", "dense"])
@pytest.mark.parametrize("embedding", ["binary", "onehot"])
@pytest.mark.parametrize("max_iter", [1, 3, 10])
def test_explicit_init_same_as_kmeans_and_reference(global_random_seed, max_iter, embedding, path):
    X, init = blobs(global_random_seed, n=40)
    params = dict(n_clusters=3, init=init, n_init=1, max_iter=max_iter, tol=0)
    est = ExactLloydTransformer(embedding=embedding, path=path, **params).fit(X)
    km = KMeans(algorithm="lloyd", **params).fit(X)
    assert_same_as_kmeans(est, km)
    ref = lloyd(X, init, max_iter)
    assert ref.n_empty == 0
    np.testing.assert_allclose(est.cluster_centers_, ref.centers, rtol=0, atol=ATOL)


def test_one_iteration_from_explicit_init_is_one_lloyd_step(rng):
    X = rng.random((50, 2))
    init = X[:4].copy()
    est = ExactLloydTransformer(n_clusters=4, init=init, max_iter=1).fit(X)
    assert est.n_iter_ == 1
    np.testing.assert_allclose(est.cluster_centers_, lloyd(X, init, 1).centers, atol=ATOL)


# -- empty clusters ---------------------------------------------------------------------


@pytest.mark.parametrize("path", ["fused", "dense"])
def test_empty_cluster_keeps_its_centre(global_random_seed, path):
    X, init = blobs(global_random_seed, n=40)
    init[2] = 100.0 + np.arange(X.shape[1])  # far from every point: its cluster is empty
    msg = "Number of distinct clusters (2) found smaller than n_clusters (3)"
    with pytest.warns(ConvergenceWarning, match=re.escape(msg)):
        est = ExactLloydTransformer(n_clusters=3, init=init, path=path).fit(X)
    # kept up to the rounding of the centring round trip (x - mean) + mean
    np.testing.assert_array_max_ulp(est.cluster_centers_[2], init[2], maxulp=1)
    assert 2 not in est.labels_
    np.testing.assert_allclose(
        est.cluster_centers_[:2], lloyd(X, init, 300).centers[:2], rtol=0, atol=ATOL
    )
    # unlike KMeans, which relocates the empty cluster's centre onto the data
    km = KMeans(n_clusters=3, init=init, n_init=1, algorithm="lloyd").fit(X)
    assert np.abs(km.cluster_centers_[2] - init[2]).max() > 1.0


# -- properties -------------------------------------------------------------------------


def test_labels_predict_score_transform(global_random_seed):
    X = blobs(global_random_seed)[0]
    est = ExactLloydTransformer(n_clusters=3, random_state=global_random_seed).fit(X)
    assert est.labels_.dtype == np.int32
    assert est.predict(X).dtype == np.int32
    np.testing.assert_array_equal(est.labels_, est.predict(X))
    assert est.score(X) == pytest.approx(-est.inertia_, rel=1e-12)
    np.testing.assert_allclose(
        est.transform(X), euclidean_distances(X, est.cluster_centers_), rtol=1e-12
    )
    assert est.n_features_in_ == X.shape[1]


def test_fit_transform_and_fit_predict(global_random_seed):
    X = blobs(global_random_seed)[0]
    params = dict(n_clusters=3, init="random", n_init=2, random_state=global_random_seed)
    Xt = ExactLloydTransformer(**params).fit_transform(X)
    np.testing.assert_allclose(Xt, ExactLloydTransformer(**params).fit(X).transform(X))
    labels = ExactLloydTransformer(**params).fit_predict(X)
    np.testing.assert_array_equal(labels, ExactLloydTransformer(**params).fit(X).labels_)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_preserved(global_random_seed, dtype):
    X = blobs(global_random_seed)[0].astype(dtype)
    est = ExactLloydTransformer(n_clusters=3, random_state=global_random_seed).fit(X)
    assert est.cluster_centers_.dtype == dtype
    np.testing.assert_array_equal(est.labels_, est.predict(X))


def test_float32_close_to_float64(global_random_seed):
    X, init = blobs(global_random_seed)
    est64 = ExactLloydTransformer(n_clusters=3, init=init).fit(X)
    est32 = ExactLloydTransformer(n_clusters=3, init=init.astype(np.float32))
    est32.fit(X.astype(np.float32))
    np.testing.assert_array_equal(est32.labels_, est64.labels_)
    np.testing.assert_allclose(est32.cluster_centers_, est64.cluster_centers_, atol=1e-4)


def test_integer_sample_weight_is_repeating_rows(rng):
    X, init = blobs(int(rng.integers(1000)), n=40)
    sw = rng.integers(0, 4, size=X.shape[0])
    params = dict(n_clusters=3, init=init, tol=0)
    weighted = ExactLloydTransformer(**params).fit(X, sample_weight=sw)
    repeated = ExactLloydTransformer(**params).fit(np.repeat(X, sw, axis=0))
    np.testing.assert_allclose(
        weighted.cluster_centers_, repeated.cluster_centers_, rtol=0, atol=ATOL
    )
    np.testing.assert_array_equal(np.repeat(weighted.labels_, sw), repeated.labels_)
    assert weighted.inertia_ == pytest.approx(repeated.inertia_, rel=RTOL)


def test_sample_weight_scale_does_not_change_centres(rng):
    X, init = blobs(int(rng.integers(1000)))
    sw = rng.random(X.shape[0]) + 0.1
    params = dict(n_clusters=3, init=init, tol=0)
    a = ExactLloydTransformer(**params).fit(X, sample_weight=sw)
    b = ExactLloydTransformer(**params).fit(X, sample_weight=7.5 * sw)
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert b.inertia_ == pytest.approx(7.5 * a.inertia_, rel=RTOL)


def test_translation_translates_centres(rng):
    X, init = blobs(int(rng.integers(1000)))
    shift = rng.uniform(-20, 20, size=X.shape[1])
    a = ExactLloydTransformer(n_clusters=3, init=init).fit(X)
    b = ExactLloydTransformer(n_clusters=3, init=init + shift).fit(X + shift)
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_ + shift, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.n_iter_ == b.n_iter_


def test_row_permutation_leaves_centres_unchanged(rng):
    X, init = blobs(int(rng.integers(1000)))
    perm = rng.permutation(X.shape[0])
    a = ExactLloydTransformer(n_clusters=3, init=init).fit(X)
    b = ExactLloydTransformer(n_clusters=3, init=init).fit(X[perm])
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(a.labels_[perm], b.labels_)


@pytest.mark.parametrize("weighted", [False, True])
def test_one_cluster_is_the_mean(rng, weighted):
    X = rng.normal(size=(25, 3))
    sw = rng.random(25) + 0.5 if weighted else None
    est = ExactLloydTransformer(n_clusters=1, random_state=0).fit(X, sample_weight=sw)
    np.testing.assert_allclose(
        est.cluster_centers_[0], np.average(X, axis=0, weights=sw), rtol=0, atol=1e-12
    )
    np.testing.assert_array_equal(est.labels_, 0)


def test_duplicate_points_and_constant_feature():
    points = np.array([[0.0, 5.0, 1.0], [4.0, 5.0, 1.0], [0.0, 5.0, 9.0]])
    X = np.repeat(points, 6, axis=0)  # duplicates; column 1 is constant
    est = ExactLloydTransformer(n_clusters=3, random_state=0).fit(X)
    centres = est.cluster_centers_[np.lexsort(est.cluster_centers_.T[::-1])]
    np.testing.assert_allclose(centres, points[np.lexsort(points.T[::-1])], atol=1e-12)
    assert est.inertia_ == pytest.approx(0.0, abs=1e-20)
    np.testing.assert_array_equal(est.cluster_centers_[:, 1], 5.0)


def test_identical_points_warn_about_distinct_clusters():
    X = np.ones((10, 2))
    msg = "Number of distinct clusters (1) found smaller than n_clusters (2)"
    with pytest.warns(ConvergenceWarning, match=re.escape(msg)):
        est = ExactLloydTransformer(n_clusters=2, random_state=0).fit(X)
    np.testing.assert_allclose(est.cluster_centers_, 1.0)
    assert est.inertia_ == 0.0


def test_pandas_feature_names_and_set_output(global_random_seed):
    X = blobs(global_random_seed)[0]
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"], index=np.arange(X.shape[0]) + 100)
    est = ExactLloydTransformer(n_clusters=3, random_state=global_random_seed).fit(df)
    np.testing.assert_array_equal(est.feature_names_in_, ["a", "b", "c", "d"])
    names = [f"exactlloydtransformer{j}" for j in range(3)]
    np.testing.assert_array_equal(est.get_feature_names_out(), names)

    out = est.set_output(transform="pandas").transform(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == names
    np.testing.assert_array_equal(out.index, df.index)
    np.testing.assert_allclose(out.to_numpy(), euclidean_distances(X, est.cluster_centers_))


def test_pickle_round_trip_is_small(global_random_seed):
    X = blobs(global_random_seed, d=4)[0]
    est = ExactLloydTransformer(n_clusters=3, random_state=global_random_seed).fit(X)
    blob = pickle.dumps(est)
    assert len(blob) < 20_000
    loaded = pickle.loads(blob)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    np.testing.assert_array_equal(loaded.cluster_centers_, est.cluster_centers_)
    np.testing.assert_allclose(loaded.transform(X), est.transform(X))


def test_device_auto(global_random_seed):
    X = blobs(global_random_seed)[0]
    params = dict(n_clusters=3, random_state=global_random_seed)
    auto = ExactLloydTransformer(device="auto", **params).fit(X)
    cpu = ExactLloydTransformer(device="cpu", **params).fit(X)
    np.testing.assert_allclose(auto.cluster_centers_, cpu.cluster_centers_, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(auto.labels_, cpu.labels_)


def test_verbose_logs_to_skformer_logger(caplog, restore_skformer_logger):
    X = blobs(0, n=30)[0]
    caplog.set_level(logging.INFO, logger="skformer")
    ExactLloydTransformer(n_clusters=3, random_state=0, verbose=1).fit(X)
    messages = [r.getMessage() for r in caplog.records if r.name == "skformer"]
    assert "Initialization complete" in messages
    assert any(m.startswith("Iteration 0") for m in messages)
    assert any(m.startswith("Converged at iteration") for m in messages)


def test_verbose_zero_is_silent_after_verbose_one(caplog, restore_skformer_logger):
    X = blobs(0, n=30)[0]
    ExactLloydTransformer(n_clusters=3, random_state=0, verbose=1).fit(X)
    caplog.clear()
    ExactLloydTransformer(n_clusters=3, random_state=0, verbose=0).fit(X)
    assert not [r for r in caplog.records if r.name == "skformer"]


def test_same_random_state_is_reproducible(global_random_seed):
    X = iris()
    params = dict(n_clusters=4, init="random", n_init=3, random_state=global_random_seed)
    a = ExactLloydTransformer(**params).fit(X)
    b = ExactLloydTransformer(**params).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.inertia_ == b.inertia_
    assert a.n_iter_ == b.n_iter_


def test_explicit_init_with_n_init_warns(global_random_seed):
    X, init = blobs(global_random_seed)
    msg = (
        "Explicit initial center position passed: performing only one init in "
        "ExactLloydTransformer instead of n_init=3"
    )
    with pytest.warns(RuntimeWarning, match=re.escape(msg)):
        est = ExactLloydTransformer(n_clusters=3, init=init, n_init=3).fit(X)
    ref = ExactLloydTransformer(n_clusters=3, init=init, n_init=1).fit(X)
    np.testing.assert_array_equal(est.cluster_centers_, ref.cluster_centers_)


def test_explicit_init_with_auto_n_init_does_not_warn(global_random_seed):
    X, init = blobs(global_random_seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ExactLloydTransformer(n_clusters=3, init=init).fit(X)


# -- errors -----------------------------------------------------------------------------


def _X(n=20, d=4):
    return np.random.default_rng(0).normal(size=(n, d))


def _with(value):
    X = _X()
    X[3, 1] = value
    return X


CUDA_MISSING = pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available")


def case(name, message, *, X=None, error=ValueError, fit=None, marks=(), **params):
    """One row of the error table: fit ``ExactLloydTransformer(**params)`` on ``X``.

    ``fit={"predict": True}`` fits on ``_X()`` first, then predicts on ``X``.
    """
    X = _X() if X is None else X
    return pytest.param(params, X, fit or {}, error, message, id=name, marks=marks)


ERRORS = [
    case("nan", "Input X contains NaN", X=_with(np.nan)),
    case("inf", "Input X contains infinity", X=_with(np.inf)),
    case("empty", "Found array with 0 sample(s)", X=np.zeros((0, 3)), n_clusters=3),
    case("1d", "Expected 2D array, got 1D array", X=_X()[:, 0], n_clusters=3),
    case(
        "predict-n-features",
        "X has 3 features, but ExactLloydTransformer is expecting 4 features as input",
        X=_X(d=3),
        fit={"predict": True},
        n_clusters=3,
    ),
    case("n-samples", "n_samples=5 should be >= n_clusters=8.", X=_X(n=5), n_clusters=8),
    case("complex", "Complex data not supported", X=_X() + 1j, n_clusters=3),
    case("strings", "could not convert string to float", X=np.array([["a", "b"]] * 3)),
    case("sparse-nan", "Input X contains NaN", X=sp.csr_matrix(_with(np.nan))),
    case(
        "elkan",
        "algorithm='elkan' is not supported by ExactLloydTransformer: its transformer "
        "layers are Lloyd iterations. Use algorithm='lloyd'",
        algorithm="elkan",
    ),
    case(
        "algorithm",
        "The 'algorithm' parameter of ExactLloydTransformer must be a str among",
        algorithm="auto",
    ),
    case(
        "init-rows",
        "The shape of the initial centers (2, 4) does not match the number of clusters 3",
        n_clusters=3,
        init=_X()[:2],
    ),
    case(
        "init-columns",
        "The shape of the initial centers (3, 3) does not match the number of features "
        "of the data 4",
        n_clusters=3,
        init=_X()[:3, :3],
    ),
    case(
        "negative-weights",
        "Negative values in data passed to `sample_weight`",
        fit={"sample_weight": -np.ones(20)},
        n_clusters=3,
    ),
    case(
        "embedding",
        "The 'embedding' parameter of ExactLloydTransformer must be a str among",
        embedding="ternary",
    ),
    case("path", "The 'path' parameter of ExactLloydTransformer must be a str among", path="x"),
    case("device", "device='gpu0' is not a valid torch device.", device="gpu0"),
    case("no-cuda", "CUDA is not available", device="cuda", marks=CUDA_MISSING),
    case(
        "n-clusters-0",
        "The 'n_clusters' parameter of ExactLloydTransformer must be an int in the range "
        "[1, inf). Got 0 instead.",
        n_clusters=0,
    ),
]


@pytest.mark.parametrize("params, X, fit_kwargs, error, message", ERRORS)
def test_errors(params, X, fit_kwargs, error, message):
    est = ExactLloydTransformer(**params)
    fit_kwargs = dict(fit_kwargs)
    if fit_kwargs.pop("predict", False):
        est.fit(_X())
        with pytest.raises(error, match=re.escape(message)):
            est.predict(X)
    else:
        with pytest.raises(error, match=re.escape(message)):
            est.fit(X, **fit_kwargs)


def test_predict_before_fit_raises():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="This ExactLloydTransformer instance is not fitted"):
        ExactLloydTransformer().predict(_X())


# -- a fit loses nothing ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fit_does_not_modify_inputs(rng, dtype):
    X = rng.normal(size=(30, 4)).astype(dtype)
    init = X[:3].copy()
    sw = rng.random(30).astype(dtype) + 0.5
    X_before, init_before, sw_before = X.copy(), init.copy(), sw.copy()
    est = ExactLloydTransformer(n_clusters=3, init=init).fit(X, sample_weight=sw)
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(init, init_before)
    np.testing.assert_array_equal(sw, sw_before)
    assert not np.shares_memory(est.cluster_centers_, init)
    ExactLloydTransformer(n_clusters=3, random_state=0).fit(X)
    est.predict(X), est.transform(X), est.score(X)
    np.testing.assert_array_equal(X, X_before)


def test_failed_fit_does_not_modify_input():
    X = _with(np.nan)
    X_before = X.copy()
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ExactLloydTransformer(n_clusters=3).fit(X)
    np.testing.assert_array_equal(X, X_before)  # NaN == NaN here


def test_failed_fit_keeps_previous_fit():
    est = ExactLloydTransformer(n_clusters=3, random_state=0).fit(_X())
    centres = est.cluster_centers_.copy()
    with pytest.raises(ValueError, match="n_samples=2 should be >= n_clusters=3."):
        est.fit(_X(n=2))
    np.testing.assert_array_equal(est.cluster_centers_, centres)


@pytest.mark.parametrize("path", ["fused", "dense"])
def test_fit_leaves_the_global_torch_generator_alone(path):
    # The literal layer's weights are set by the construction: building it must not draw
    # PyTorch's default initialisation from the global generator (issue 21).
    X = np.random.default_rng(0).normal(size=(60, 3))
    before = torch.get_rng_state()
    ExactLloydTransformer(3, random_state=0, path=path).fit(X)
    assert torch.equal(torch.get_rng_state(), before)
