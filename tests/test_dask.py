"""skformer on dask arrays: the block-by-block fit against the in-memory fit.

Oracle first: from the same explicit initial centres the exact model's dask fit *is* the
in-memory fit (the same labels and steps; centres equal up to the order of the sums), and
TransformerKMeans' matches it within float32 rounding of the learned steps. Then what the
methods return for dask input, sample weights, float32, the joblib backend, errors.

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
from skformer.dask import fit_dask  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # port choice, event-loop noise of a local cluster
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit="1GiB",
            dashboard_address=None,
        )
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


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


# -- oracle: the in-memory fit -----------------------------------------------------------


@pytest.mark.parametrize("k", [1, 4, 7])
def test_exact_equals_in_memory(client, global_random_seed, k):
    X = blobs(global_random_seed, std=3.0)
    init = start(X, k, global_random_seed)
    ours = ExactLloydTransformer(k, init=init, n_init=1).fit(chunked(X))
    ref = ExactLloydTransformer(k, init=init, n_init=1).fit(X)
    np.testing.assert_array_equal(ours.labels_.compute(), ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0, atol=1e-10)
    assert ours.n_iter_ == ref.n_iter_
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)
    assert ours.n_features_in_ == 4


def test_exact_equals_in_memory_with_weights(client, global_random_seed):
    X = blobs(global_random_seed, std=3.0)
    w = np.random.default_rng(global_random_seed).uniform(0, 3, X.shape[0])
    init = start(X, 5, global_random_seed)
    ref = ExactLloydTransformer(5, init=init).fit(X, sample_weight=w)
    for weights in (w, da.from_array(w, chunks=900)):  # NumPy, or dask with other blocks
        ours = ExactLloydTransformer(5, init=init).fit(chunked(X), sample_weight=weights)
        np.testing.assert_array_equal(ours.labels_.compute(), ref.labels_)
        np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, atol=1e-10)
        assert ours.n_iter_ == ref.n_iter_
        assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)


def test_small_data_same_init_as_in_memory(client, global_random_seed):
    """Up to 10_000 rows the init sample is all rows: k-means++ draws the same centres."""
    X = blobs(global_random_seed, std=3.0)
    ours = ExactLloydTransformer(4, random_state=global_random_seed, n_init=3).fit(chunked(X))
    ref = ExactLloydTransformer(4, random_state=global_random_seed, n_init=3).fit(X)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, atol=1e-10)
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)


def test_transformer_kmeans_matches_in_memory(client, global_random_seed):
    """Learned steps in float32, A3 merged in another order: equal within rounding; the
    Lloyd finish reaches the same fixed point."""
    X = blobs(global_random_seed, d=8, k=5, std=1.0)
    init = start(X, 5, global_random_seed) + 1.0
    params = dict(init=init, random_state=global_random_seed, device="cpu")
    ours = TransformerKMeans(5, **params).fit(chunked(X))
    ref = TransformerKMeans(5, **params).fit(X)
    np.testing.assert_array_equal(ours.labels_.compute(), ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, atol=1e-10)
    assert (ours.n_learned_steps_, ours.n_lloyd_steps_) == (
        ref.n_learned_steps_, ref.n_lloyd_steps_)

    # The learned steps alone: within 1e-5 of the data's range.
    ours = TransformerKMeans(5, finish="none", max_iter=5, **params).fit(chunked(X))
    ref = TransformerKMeans(5, finish="none", max_iter=5, **params).fit(X)
    scale = np.ptp(X, axis=0).max()
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0,
                               atol=1e-5 * scale)
    assert ours.n_learned_steps_ == ref.n_learned_steps_


def test_learned_steps_see_the_in_memory_objective(client, caplog, global_random_seed):
    """The objective that picks the learned steps' best centres, summed over blocks, is
    the in-memory one (as logged at each step)."""
    X = blobs(global_random_seed, d=4, k=3, std=4.0)
    w = np.random.default_rng(global_random_seed).uniform(0.5, 2, X.shape[0])
    params = dict(init=start(X, 3, global_random_seed), finish="none", max_iter=4,
                  verbose=1, device="cpu")

    def objectives(data, weights):
        caplog.clear()
        with caplog.at_level("INFO", logger="skformer"):
            TransformerKMeans(3, **params).fit(data, sample_weight=weights)
        return [float(r.getMessage().rsplit(" ", 1)[1].rstrip("."))
                for r in caplog.records if r.getMessage().startswith("Learned step ")]

    for weights in (None, w):
        ours, ref = objectives(chunked(X), weights), objectives(X, weights)
        assert len(ours) == len(ref) >= 2
        np.testing.assert_allclose(ours, ref, rtol=1e-5)


def test_transformer_kmeans_context_sample_with_weights(client, global_random_seed):
    """More points than max_context: the same seeded context (and its weights)."""
    X = blobs(global_random_seed, n=1500, d=2, k=3, std=1.5)
    w = np.random.default_rng(global_random_seed).uniform(0.5, 2, X.shape[0])
    params = dict(init=start(X, 3, global_random_seed), max_context=64, finish="none",
                  max_iter=4, device="cpu")
    ours = TransformerKMeans(3, **params).fit(chunked(X), sample_weight=w)
    ref = TransformerKMeans(3, **params).fit(X, sample_weight=w)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0,
                               atol=1e-5 * np.ptp(X, axis=0).max())


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
    params = dict(init=start(X, 4, 3), device="cpu", max_iter=3, finish="none")
    ref = TransformerKMeans(4, **params).fit(chunked(X))
    for scheduler in ("threads", "synchronous"):
        with dask.config.set(scheduler=scheduler):
            ours = TransformerKMeans(4, **params).fit(chunked(X))
        np.testing.assert_array_equal(ours.cluster_centers_, ref.cluster_centers_)


def test_float32_is_kept(client):
    X = blobs(1, dtype=np.float32)
    est = TransformerKMeans(4, random_state=0, device="cpu").fit(chunked(X))
    assert est.cluster_centers_.dtype == np.float32
    assert est.transform(chunked(X)).dtype == np.float32
    ref = TransformerKMeans(4, random_state=0, device="cpu").fit(X)
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
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(5,\), expected"):
        ExactLloydTransformer(2).fit(X, sample_weight=da.ones(5))
    with pytest.raises(ValueError, match="NaN or infinity"):
        ExactLloydTransformer(2).fit(da.from_array(np.array([[0.0], [np.nan], [1.0]])))
    with pytest.raises(ValueError, match="max_context=None"):
        TransformerKMeans(2, max_context=None, device="cpu").fit(X)
    with pytest.raises(ValueError, match="has 2 features, but ExactLloydTransformer is "
                                         "expecting 4 features"):
        ExactLloydTransformer(2).fit(X).predict(da.zeros((5, 2)))
    with pytest.raises(ValueError, match="Invalid parameter|must be an int"):
        fit_dask(ExactLloydTransformer(n_clusters=0), X)
