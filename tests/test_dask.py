"""skformer on dask arrays: what is particular to them.

The fit is the one every container gets (tests/test_containers.py compares NumPy,
memmap and dask fits); here: the context and initialisation samples, what the methods
return for dask input (lazy arrays), the schedulers, the joblib backend, errors.

Everything runs on one LocalCluster of two worker processes, as a user's cluster would.
"""

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402
import joblib  # noqa: E402
from sklearn.datasets import make_blobs  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402

from skformer import ExactLloydTransformer, TransformerKMeans  # noqa: E402


def blobs(seed, n=2000, d=4, k=4, std=1.0, dtype=np.float64):
    X, _ = make_blobs(n, n_features=d, centers=k, cluster_std=std, center_box=(-20, 20),
                      random_state=seed)
    return X.astype(dtype)


def chunked(X, rows=(700, 500, 800)):
    """Unequal row blocks (their sums are not the in-memory chunks' sums)."""
    rows = list(rows)
    rows[-1] += X.shape[0] - sum(rows)
    return da.from_array(X, chunks=(tuple(rows), X.shape[1]))


def start(X, k, seed):
    return X[np.random.default_rng(seed).choice(X.shape[0], k, replace=False)]


# -- the fit: the in-memory one (tests/test_containers.py holds the full comparison) -----


def test_transformer_kmeans_context_sample_with_weights(client, global_random_seed):
    """More points than max_context: the same seeded context (and its weights)."""
    X = blobs(global_random_seed, n=1500, d=2, k=3, std=1.5)
    w = np.random.default_rng(global_random_seed).uniform(0.5, 2, X.shape[0])
    params = dict(init=start(X, 3, global_random_seed), max_context=64, finish="none",
                  learned_starts=1, max_iter=4, device="cpu")
    ours = TransformerKMeans(3, **params).fit(chunked(X), sample_weight=w)
    ref = TransformerKMeans(3, **params).fit(X, sample_weight=w)
    # The same context and steps; the frames' means differ by rounding (dask's blocks).
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-12,
                               atol=1e-12 * np.ptp(X))


def test_large_data_init_on_a_seeded_sample(client):
    """Above 10_000 rows k-means++ runs on a seeded sample of the rows (documented)."""
    X = blobs(5, n=12_000, d=3, k=4, std=1.0)
    a = ExactLloydTransformer(4, random_state=0).fit(chunked(X, rows=(5000, 4000, 3000)))
    b = ExactLloydTransformer(4, random_state=0).fit(chunked(X, rows=(6000, 6000)))
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-10)
    assert a.inertia_ == pytest.approx(ExactLloydTransformer(4, random_state=0).fit(X).inertia_,
                                       rel=1e-6)


# -- the methods on dask input -------------------------------------------------------


def test_predict_transform_score_are_blockwise(client, global_random_seed):
    X = blobs(global_random_seed)
    Xd = chunked(X)
    est = ExactLloydTransformer(4, random_state=global_random_seed).fit(X)
    labels, dist = est.predict(Xd), est.transform(Xd)
    assert isinstance(labels, da.Array) and labels.dtype == np.int32
    assert isinstance(dist, da.Array) and dist.shape == (X.shape[0], 4)
    np.testing.assert_array_equal(labels.compute(), est.predict(X))
    np.testing.assert_allclose(dist.compute(), est.transform(X), rtol=1e-12)
    score = est.score(Xd)
    assert isinstance(score, float) and score == pytest.approx(est.score(X), rel=1e-12)
    w = np.linspace(0, 2, X.shape[0])
    for weights in (w, da.from_array(w, chunks=600)):
        assert est.score(Xd, sample_weight=weights) == pytest.approx(
            est.score(X, sample_weight=w), rel=1e-12)


def test_fit_predict_and_fit_transform_are_lazy(client):
    X = blobs(0)
    init = start(X, 4, 0)
    labels = ExactLloydTransformer(4, init=init).fit_predict(chunked(X))
    dist = ExactLloydTransformer(4, init=init).fit_transform(chunked(X))
    assert isinstance(labels, da.Array) and isinstance(dist, da.Array)
    ref = ExactLloydTransformer(4, init=init).fit(X)
    np.testing.assert_array_equal(labels.compute(), ref.labels_)
    np.testing.assert_allclose(dist.compute(), ref.transform(X), atol=1e-10)


def test_any_scheduler(client):
    """One graph per pass, computed by the active scheduler: the same fit without the
    cluster (threads, or the synchronous scheduler)."""
    X = blobs(3)
    params = dict(init=start(X, 4, 3), device="cpu", max_iter=3, finish="none",
                  learned_starts=1)
    ref = TransformerKMeans(4, **params).fit(chunked(X))
    for scheduler in ("threads", "synchronous"):
        with dask.config.set(scheduler=scheduler):
            ours = TransformerKMeans(4, **params).fit(chunked(X))
        np.testing.assert_array_equal(ours.cluster_centers_, ref.cluster_centers_)


def test_float32_is_kept(client):
    X = blobs(1, dtype=np.float32)
    est = TransformerKMeans(4, random_state=0, learned_starts=1, device="cpu").fit(chunked(X))
    assert est.cluster_centers_.dtype == np.float32
    assert est.transform(chunked(X)).dtype == np.float32
    ref = TransformerKMeans(4, random_state=0, learned_starts=1, device="cpu").fit(X)
    np.testing.assert_array_equal(est.labels_.compute(), ref.labels_)


def test_grid_search_on_the_joblib_dask_backend(client):
    """GridSearchCV's joblib tasks go to the cluster's workers."""
    X = blobs(2, n=300)
    search = GridSearchCV(ExactLloydTransformer(random_state=0), {"n_clusters": [2, 4]},
                          cv=2, n_jobs=2)
    with distributed.get_task_stream(client) as stream:
        with joblib.parallel_config(backend="dask"):
            search.fit(X)
    assert len(stream.data) >= 4  # 2 candidates x 2 folds ran as dask tasks
    ref = GridSearchCV(ExactLloydTransformer(random_state=0), {"n_clusters": [2, 4]},
                       cv=2).fit(X)
    assert search.best_params_ == ref.best_params_ == {"n_clusters": 4}
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               ref.cv_results_["mean_test_score"])


# -- errors ---------------------------------------------------------------------------


def test_errors(client):
    X = chunked(blobs(0))
    with pytest.raises(ValueError, match=r"n_samples=3 should be >= n_clusters=4\."):
        ExactLloydTransformer(4).fit(da.zeros((3, 2), chunks=2))
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array instead"):
        ExactLloydTransformer(2).fit(da.zeros(10, chunks=5))
    with pytest.raises(ValueError, match="Expected 2D array, got 3D array instead"):
        ExactLloydTransformer(2).fit(da.zeros((10, 2, 2), chunks=5))
    with pytest.raises(ValueError, match="Negative values in data passed to `sample_weight`"):
        ExactLloydTransformer(2).fit(X, sample_weight=-da.ones(X.shape[0], chunks=500))
    n = X.shape[0]
    for weights, message in [
        (da.full(n, np.nan, chunks=500), "Input sample_weight contains NaN"),
        (da.ones(n, chunks=500).map_blocks(lambda b: np.r_[np.inf, b[1:]]),
         "Input sample_weight contains infinity"),
        (da.zeros(n, chunks=500), "Sample weights must contain at least one non-zero number"),
    ]:
        for Estimator in (ExactLloydTransformer, TransformerKMeans):
            with pytest.raises(ValueError, match=message):
                Estimator(2).fit(X, sample_weight=weights)
        with pytest.raises(ValueError, match=message):
            ExactLloydTransformer(2).fit(X).score(X, sample_weight=weights)
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(5,\), expected"):
        ExactLloydTransformer(2).fit(X, sample_weight=da.ones(5))
    with pytest.raises(ValueError, match="NaN or infinity"):
        ExactLloydTransformer(2).fit(da.from_array(np.array([[0.0], [np.nan], [1.0]])))
    with pytest.raises(ValueError, match="max_context=None"):
        # a shape whose model runs
        TransformerKMeans(4, max_context=None, learned_starts=1, device="cpu").fit(X)
    with pytest.raises(ValueError, match="has 2 features, but ExactLloydTransformer is "
                                         "expecting 4 features"):
        ExactLloydTransformer(2).fit(X).predict(da.zeros((5, 2)))
    with pytest.raises(ValueError, match="The 'n_clusters' parameter"):
        ExactLloydTransformer(n_clusters=0).fit(X)


def test_unknown_chunk_sizes_are_refused():
    """An unknown width (NaN) reached int() deep in the fit; unknown rows too: both are
    refused up front, with the fix."""
    X = da.from_array(blobs(0, n=40), chunks=(10, 4))
    fitted = ExactLloydTransformer(2, random_state=0).fit(X)
    fix = r"call X.compute_chunk_sizes\(\) first, or convert a dask DataFrame with " \
          r"\.to_dask_array\(lengths=True\)"
    for unknown, what in [
        (X.map_blocks(lambda b: b, chunks=((10,) * 4, (np.nan,))), "columns"),
        (X.map_blocks(lambda b: b, chunks=((np.nan,) * 4, (4,))), "rows"),
        (X.map_blocks(lambda b: b, chunks=((np.nan,) * 4, (np.nan,))), "rows and columns"),
    ]:
        message = f"X has an unknown number of {what} \\(chunk sizes NaN, shape=.*\\): {fix}"
        with pytest.raises(ValueError, match=message):
            ExactLloydTransformer(2).fit(unknown)
        for method in (fitted.predict, fitted.transform, fitted.score):
            with pytest.raises(ValueError, match=message):
                method(unknown)
    known = X.map_blocks(lambda b: b, chunks=((np.nan,) * 4, (np.nan,)))
    known.compute_chunk_sizes()  # the fix the message names
    np.testing.assert_array_equal(fitted.predict(known).compute(),
                                  fitted.predict(X).compute())


def test_weights_overflowing_float32_name_float32():
    """Weights are cast to X's dtype (as KMeans casts them): a weight too large for
    float32 is reported against float32, not float64."""
    X = da.from_array(blobs(0, n=40, dtype=np.float32), chunks=(10, 4))
    w = da.from_array(np.r_[1e39, np.ones(39)], chunks=10)
    message = r"Input sample_weight contains infinity or a value too large for " \
              r"dtype\('float32'\)\."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the cast's own overflow warning
        for Estimator in (ExactLloydTransformer, TransformerKMeans):
            with pytest.raises(ValueError, match=message):
                Estimator(2, device="cpu").fit(X, sample_weight=w)
        with pytest.raises(ValueError, match=message):
            ExactLloydTransformer(2).fit(X).score(X, sample_weight=w)
