"""Sparse (CSR) input: the exact fit against KMeans on the same sparse X, against the
dense fit of the same data, then properties (never densified, dtypes, containers),
then the KMeans parameters copy_x and algorithm."""

import logging

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from skformer import ExactLloydTransformer, TransformerKMeans
from skformer.datasets import make_documents


def _tfidf(n=300, topics=4, seed=0, dtype=np.float64):
    docs, labels = make_documents(n, topics, vocabulary_size=600, words_per_topic=80,
                                  random_state=seed)
    return TfidfVectorizer(dtype=dtype).fit_transform(docs), labels


def _blocks(seed, n=400, d=60, k=4, dtype=np.float64):
    """Random sparse rows plus one strong feature per cluster."""
    rng = np.random.default_rng(seed)
    noise = sp.random(n, d, density=0.08, format="csr", random_state=seed, dtype=dtype)
    owner = rng.integers(k, size=n)
    strong = sp.csr_matrix((np.full(n, 3.0, dtype=dtype), (np.arange(n), owner)),
                           shape=(n, d))
    return sp.csr_matrix(noise + strong)


def _close(a, b, rtol):
    return np.max(np.abs(a - b)) <= rtol * max(1.0, np.max(np.abs(b)))


# -- the oracle: KMeans on the same sparse X ------------------------------------------


@pytest.mark.parametrize("init", ["k-means++", "random", "array"])
@pytest.mark.parametrize("data", ["tfidf", "blocks"])
def test_exact_equals_kmeans_on_sparse(init, data, global_random_seed):
    X = _tfidf(seed=global_random_seed)[0] if data == "tfidf" else _blocks(global_random_seed)
    k = 4
    if init == "array":
        init = X[np.random.default_rng(global_random_seed).choice(X.shape[0], k)].toarray()
    params = dict(init=init, n_init=2 if isinstance(init, str) else 1,
                  random_state=global_random_seed)
    km = KMeans(k, **params).fit(X)
    est = ExactLloydTransformer(k, **params).fit(X)
    np.testing.assert_array_equal(est.labels_, km.labels_)
    assert _close(est.cluster_centers_, km.cluster_centers_, 1e-9)
    assert est.inertia_ == pytest.approx(km.inertia_, rel=1e-9)
    assert est.n_iter_ == km.n_iter_


def test_exact_equals_kmeans_on_sparse_float32(global_random_seed):
    X = _blocks(global_random_seed, dtype=np.float32)
    km = KMeans(4, random_state=global_random_seed).fit(X)
    est = ExactLloydTransformer(4, random_state=global_random_seed).fit(X)
    assert est.cluster_centers_.dtype == np.float32
    np.testing.assert_array_equal(est.labels_, km.labels_)
    assert _close(est.cluster_centers_, km.cluster_centers_, 1e-5)


def test_exact_equals_kmeans_on_sparse_with_weights(global_random_seed):
    X = _blocks(global_random_seed)
    w = np.random.default_rng(global_random_seed).uniform(0.1, 3.0, X.shape[0])
    km = KMeans(4, random_state=global_random_seed).fit(X, sample_weight=w)
    est = ExactLloydTransformer(4, random_state=global_random_seed).fit(X, sample_weight=w)
    np.testing.assert_array_equal(est.labels_, km.labels_)
    assert _close(est.cluster_centers_, km.cluster_centers_, 1e-9)
    assert est.inertia_ == pytest.approx(km.inertia_, rel=1e-9)
    assert est.score(X, sample_weight=w) == pytest.approx(km.score(X, sample_weight=w),
                                                          rel=1e-9)


@pytest.mark.parametrize("Estimator", [ExactLloydTransformer, TransformerKMeans])
def test_sparse_equals_dense_fit(Estimator, global_random_seed):
    X, _ = _tfidf(seed=global_random_seed)
    params = dict(random_state=global_random_seed, device="cpu")
    sparse = Estimator(4, **params).fit(X)
    dense = Estimator(4, **params).fit(X.toarray())
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)
    assert _close(sparse.cluster_centers_, dense.cluster_centers_, 1e-9)
    assert sparse.inertia_ == pytest.approx(dense.inertia_, rel=1e-9)
    np.testing.assert_array_equal(sparse.predict(X), dense.predict(X.toarray()))
    np.testing.assert_allclose(sparse.transform(X), dense.transform(X.toarray()), rtol=1e-9)


# -- properties -----------------------------------------------------------------------


def test_sparse_methods_agree_with_kmeans():
    X, _ = _tfidf()
    km = KMeans(4, random_state=0).fit(X)
    est = ExactLloydTransformer(4, random_state=0)
    np.testing.assert_array_equal(est.fit_predict(X), km.labels_)
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    np.testing.assert_allclose(est.fit_transform(X), km.transform(X), rtol=1e-9)
    np.testing.assert_allclose(est.transform(X[:7]), km.transform(X[:7]), rtol=1e-9)
    assert est.score(X) == pytest.approx(km.score(X), rel=1e-9)
    assert est.score(X) == pytest.approx(-est.inertia_, rel=1e-12)


@pytest.mark.parametrize("container", [sp.csr_array, sp.csc_matrix, sp.coo_array])
def test_sparse_containers(container):
    X, _ = _tfidf()
    reference = ExactLloydTransformer(4, random_state=0).fit(X)
    est = ExactLloydTransformer(4, random_state=0).fit(container(X))
    np.testing.assert_array_equal(est.labels_, reference.labels_)
    np.testing.assert_array_equal(est.predict(container(X)), reference.labels_)


def test_sparse_never_densified(monkeypatch):
    """No dense array of more than k rows is made from the data (the random init's
    centres are k rows)."""
    X, _ = _tfidf(n=400)
    made = []
    original = sp._compressed._cs_matrix.toarray

    def spy(self, *args, **kwargs):
        made.append(self.shape[0])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(sp._compressed._cs_matrix, "toarray", spy)
    est = ExactLloydTransformer(5, init="random", n_init=2, random_state=0).fit(X)
    est.predict(X), est.transform(X), est.score(X)
    TransformerKMeans(5, random_state=0, device="cpu").fit(X)
    assert max(made, default=0) <= 5


def test_non_canonical_input_is_summed_and_not_modified():
    X, _ = _tfidf()
    coo = X.tocoo()
    # Every stored value split in two halves: the same matrix, with duplicate entries.
    dup = sp.csr_matrix((np.r_[coo.data / 2, coo.data / 2], (np.r_[coo.row, coo.row],
                         np.r_[coo.col, coo.col])), shape=X.shape)
    dup.has_canonical_format = False
    data = dup.data.copy()
    reference = ExactLloydTransformer(4, random_state=0).fit(X)
    est = ExactLloydTransformer(4, random_state=0).fit(dup)
    np.testing.assert_array_equal(est.labels_, reference.labels_)
    assert est.inertia_ == pytest.approx(reference.inertia_, rel=1e-9)
    np.testing.assert_array_equal(dup.data, data)


def test_all_zero_rows_and_scale():
    """Empty rows, and values far from 1 (the power-of-two frame) are fine."""
    X = _blocks(1) * 1e6
    X = sp.vstack([X, sp.csr_matrix((20, X.shape[1]))]).tocsr()
    km = KMeans(4, random_state=0).fit(X)
    est = ExactLloydTransformer(4, random_state=0).fit(X)
    np.testing.assert_array_equal(est.labels_, km.labels_)
    assert _close(est.cluster_centers_, km.cluster_centers_, 1e-9)
    assert np.isfinite(est.inertia_)
    # Tiny values: the frame scales them by a power of two (a copy), the same clustering.
    tiny = ExactLloydTransformer(4, random_state=0).fit(X * 1e-290)
    np.testing.assert_array_equal(tiny.labels_, est.labels_)
    assert _close(tiny.cluster_centers_ * 1e290, est.cluster_centers_, 1e-9)


def test_transformer_kmeans_learned_on_narrow_sparse():
    """Narrow sparse data (a shipped model's width) get their learned run; it never
    ends above KMeans."""
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(600, 8)) + 4 * np.eye(8)[rng.integers(5, size=600)]
    dense[np.abs(dense) < 0.8] = 0
    X = sp.csr_matrix(dense)
    km = KMeans(5, random_state=0).fit(X)
    est = TransformerKMeans(5, learned_starts=1, random_state=0, device="cpu").fit(X)
    assert est.learned_used_ and est.learned_skipped_ is None
    assert est.inertia_ <= km.inertia_ * (1 + 1e-12)


def test_transformer_kmeans_wide_sparse_runs_the_generic_model(caplog):
    """Wide sparse data: the generic model, stepped in 64 principal directions of the
    (dense) context; never above KMeans."""
    X, _ = _tfidf()
    assert X.shape[1] > 300
    km = KMeans(4, random_state=0).fit(X)
    with caplog.at_level(logging.INFO, logger="skformer"):
        est = TransformerKMeans(4, learned_starts=1, random_state=0, device="cpu",
                                verbose=1).fit(X)
    assert est.learned_used_ and est.learned_skipped_ is None
    assert "the generic model" in caplog.text and "64 principal directions" in caplog.text
    assert est.inertia_ <= km.inertia_ * (1 + 1e-12)
    assert TransformerKMeans(4, device="cpu").fit(X).learned_skipped_.startswith(
        "learned_starts=0")


def test_a_sparse_context_too_large_to_make_dense_skips_with_a_warning(monkeypatch):
    from skformer._fit import runs

    monkeypatch.setattr(runs, "DENSE_CONTEXT_CELLS", 1000)
    X, _ = _tfidf()
    km = KMeans(4, random_state=0).fit(X)
    with pytest.warns(UserWarning, match=r"No learned run is made: the context of \d+ "
                                         r"sparse rows .* pass a smaller max_context"):
        est = TransformerKMeans(4, learned_starts=1, random_state=0, device="cpu").fit(X)
    assert not est.learned_used_ and "pass a smaller max_context" in est.learned_skipped_
    np.testing.assert_array_equal(est.labels_, km.labels_)


def test_pipeline_on_text():
    docs, topics = make_documents(300, 3, vocabulary_size=500, random_state=0)
    pipe = make_pipeline(TfidfVectorizer(), TransformerKMeans(3, random_state=0,
                                                               device="cpu"))
    labels = pipe.fit_predict(docs)
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(topics, labels) > 0.8


# -- KMeans' parameters copy_x and algorithm ------------------------------------------


@pytest.mark.parametrize("Estimator", [ExactLloydTransformer, TransformerKMeans])
def test_grid_search_over_kmeans_parameter_names(Estimator):
    X, _ = _tfidf()
    grid = {"n_clusters": [3, 4], "copy_x": [True, False], "algorithm": ["lloyd"],
            "init": ["k-means++", "random"], "n_init": [1], "max_iter": [50],
            "tol": [1e-4], "random_state": [0]}
    search = GridSearchCV(Estimator(device="cpu"), grid, cv=2, error_score="raise")
    search.fit(X)
    assert search.best_params_["algorithm"] == "lloyd"


@pytest.mark.parametrize("copy_x", [True, False])
def test_copy_x_never_modifies_x(copy_x):
    X = np.random.default_rng(0).normal(size=(100, 3)) + 50
    X_before = X.copy()
    a = ExactLloydTransformer(3, copy_x=copy_x, random_state=0).fit(X)
    b = KMeans(3, random_state=0).fit(X_before.copy())
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(a.labels_, b.labels_)


def test_elkan_in_a_grid_fails_with_what_to_do():
    X, _ = _tfidf()
    search = GridSearchCV(ExactLloydTransformer(3), {"algorithm": ["lloyd", "elkan"]},
                          cv=2, error_score="raise")
    with pytest.raises(ValueError, match="Use algorithm='lloyd'"):
        search.fit(X)


def _fit_inertia(X):
    return ExactLloydTransformer(3, random_state=0).fit(X).inertia_


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_sparse_fit_in_a_forked_child_after_one_in_the_parent():
    """The block threads are made per process: a child forked after a sparse fit in the
    parent (multiprocessing, joblib) fits too, instead of waiting on the parent's pool."""
    import multiprocessing

    X = sp.random(20_000, 50, density=0.2, format="csr", random_state=0)  # two blocks
    expected = _fit_inertia(X)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        result = pool.apply_async(_fit_inertia, (X,))
        assert result.get(timeout=60) == expected
