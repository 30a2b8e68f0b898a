"""The estimator TransformerKMeans: oracle, properties, scikit-learn integration, errors.

Oracle first: with ``finish="lloyd"`` the result is a fixed point of the NumPy Lloyd
step (a local optimum, as KMeans returns), reached from the same initial centres as
KMeans with the same ``random_state``, and never of higher inertia than KMeans' (the
plain Lloyd run from the same start competes with the learned one). Then the properties
(normalisation invariance, weights, edge shapes, pickling), the integration with
Pipelines and GridSearchCV, and the error messages.
"""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import InvalidParameterError

from skformer import ExactLloydTransformer, TransformerKMeans
from skformer._fit.learned import context_indices as _context_indices
from skformer.reference import lloyd_step


def blobs(seed, n=300, d=4, k=3, std=1.5):
    return make_blobs(n, n_features=d, centers=k, cluster_std=std, random_state=seed)


def est(**params):
    """The learned mode (``learned_starts=1``) unless the test says otherwise."""
    return TransformerKMeans(**{"device": "cpu", "learned_starts": 1, **params})


# -- oracle --------------------------------------------------------------------------


@pytest.mark.parametrize("d, k", [(2, 3), (4, 5), (13, 3), (32, 10)])
def test_result_is_a_lloyd_fixed_point(global_random_seed, d, k):
    X, _ = blobs(global_random_seed, n=400, d=d, k=k, std=3.0)
    fit = est(n_clusters=k, random_state=global_random_seed, tol=0).fit(X)
    centers, labels = lloyd_step(X, fit.cluster_centers_)
    np.testing.assert_allclose(centers, fit.cluster_centers_, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(labels, fit.labels_)
    assert fit.n_iter_ == fit.n_learned_steps_ + fit.n_lloyd_steps_
    assert fit.n_lloyd_steps_ >= 1
    assert (fit.n_learned_steps_ >= 1) == (fit.selected_run_ == "learned")


def test_same_initial_centres_as_kmeans(global_random_seed):
    """One learned step from KMeans' start; then Lloyd: the random stream is KMeans'."""
    X, _ = blobs(global_random_seed, n=200, std=0.3)
    ours = est(n_clusters=3, random_state=global_random_seed).fit(X)
    km = KMeans(3, random_state=global_random_seed).fit(X)
    np.testing.assert_allclose(ours.cluster_centers_, km.cluster_centers_, atol=1e-9)
    np.testing.assert_array_equal(ours.labels_, km.labels_)


def test_context_sample_leaves_the_random_stream_alone():
    random_state = check_random_state(0)
    before = random_state.get_state()[1].copy()
    idx = _context_indices(1000, 64, random_state)
    np.testing.assert_array_equal(random_state.get_state()[1], before)
    assert idx.shape == (64,) and np.all(np.diff(idx) > 0)
    np.testing.assert_array_equal(idx, _context_indices(1000, 64, check_random_state(0)))
    assert _context_indices(64, 64, random_state) is None
    assert _context_indices(10**6, None, random_state) is None


def test_inertia_no_worse_than_kmeans_on_iris():
    X, y = load_iris(return_X_y=True)
    for seed in range(5):
        ours = est(n_clusters=3, random_state=seed).fit(X)
        km = KMeans(3, random_state=seed).fit(X)
        assert ours.inertia_ <= km.inertia_ * (1 + 1e-12)
        assert adjusted_rand_score(y, ours.labels_) > 0.7


@pytest.mark.parametrize("init, n_init", [("k-means++", 1), ("random", 3)])
@pytest.mark.parametrize("d, k", [(2, 5), (8, 6), (16, 10)])
def test_never_worse_than_kmeans_with_the_same_starts(global_random_seed, init, n_init, d, k):
    """Each start's plain Lloyd run is KMeans' run from it, and competes."""
    X, _ = blobs(global_random_seed, n=500, d=d, k=k, std=3.0)
    params = dict(n_clusters=k, init=init, n_init=n_init, random_state=global_random_seed)
    ours = est(**params).fit(X)
    km = KMeans(**params).fit(X)
    assert ours.inertia_ <= km.inertia_ * (1 + 1e-9)
    if ours.selected_run_ == "lloyd" and not ours.breathing_improved_:  # KMeans' own run
        np.testing.assert_array_equal(ours.labels_, km.labels_)
        assert ours.n_learned_steps_ == 0 and ours.n_iter_ == ours.n_lloyd_steps_


def test_the_default_fast_mode_is_kmeans(global_random_seed):
    """Default ``learned_starts=0``: KMeans' run, by the exact transformer."""
    X, _ = blobs(global_random_seed, n=400, d=6, k=5, std=3.0)
    ours = TransformerKMeans(n_clusters=5, random_state=global_random_seed, device="cpu").fit(X)
    assert ours.learned_starts == 0
    km = KMeans(5, random_state=global_random_seed).fit(X)
    np.testing.assert_allclose(ours.cluster_centers_, km.cluster_centers_, atol=1e-9)
    np.testing.assert_array_equal(ours.labels_, km.labels_)
    assert ours.n_iter_ == km.n_iter_
    assert not ours.learned_used_ and ours.selected_run_ == "lloyd"


@pytest.mark.parametrize("load, k", [(load_digits, 10), (load_breast_cancer, 2)])
def test_the_default_fast_mode_is_kmeans_on_bundled_data(load, k):
    """Near ties in real data fall as in KMeans' loop: the distances' norms are KMeans'
    (a fit that summed them in another order ended elsewhere on one seed of digits)."""
    X = load().data
    for seed in range(5):
        ours = TransformerKMeans(n_clusters=k, random_state=seed).fit(X)
        km = KMeans(k, random_state=seed).fit(X)
        np.testing.assert_array_equal(ours.labels_, km.labels_)
        np.testing.assert_allclose(ours.cluster_centers_, km.cluster_centers_, rtol=1e-9,
                                   atol=1e-9)
        assert ours.n_iter_ == km.n_iter_


def test_more_learned_starts_never_end_higher(global_random_seed):
    X, _ = blobs(global_random_seed, n=400, d=8, k=8, std=3.0)
    one = est(n_clusters=8, random_state=global_random_seed).fit(X)
    three = est(n_clusters=8, learned_starts=3, random_state=global_random_seed).fit(X)
    assert three.inertia_ <= one.inertia_ * (1 + 1e-9)


def test_expected_ratio_reads_the_index_then_the_metadata():
    from skformer.store.selection import expected_ratio as _expected_ratio

    entry = {"heldout": {"normal/random": {"ratio20": 0.8}, "laplace/random": {"ratio20": 0.9},
                         "normal/k-means++": {"ratio20": 0.99},
                         "laplace/k-means++": {"ratio20": 0.97}, "tasks": 48}}
    meta = {"training": {"val_multistep": 0.95}}
    assert _expected_ratio(meta, entry, "random") == pytest.approx(0.85)
    assert _expected_ratio(meta, entry, "k-means++") == pytest.approx(0.98)
    assert _expected_ratio(meta, entry, np.zeros((2, 2))) == pytest.approx(0.98)
    assert _expected_ratio(meta, None, "random") == 0.95
    assert _expected_ratio({"training": {}}, None, "random") is None


def test_model_without_gain_gives_way_to_the_generic_model(monkeypatch, caplog):
    """A model trained for the shape whose held-out figures do not beat Lloyd's algorithm
    is not run: with the binary code the shape-generic model runs instead."""
    from skformer.store import selection

    monkeypatch.setattr(selection, "expected_ratio", lambda metadata, entry, init: 1.0)
    X, _ = blobs(0, n=300, d=4, k=3)
    with caplog.at_level("INFO", logger="skformer"):
        fit = est(n_clusters=3, random_state=0, verbose=1).fit(X)
    assert fit.learned_used_ and fit.learned_skipped_ is None
    assert "the generic model for d=4, k=3" in caplog.text


def test_onehot_model_without_gain_is_not_run_and_says_so(monkeypatch):
    """With the one-hot code there is no generic model: KMeans' fit, and a warning that
    says why and what would make a learned run."""
    from skformer.store import selection

    monkeypatch.setattr(selection, "expected_ratio", lambda metadata, entry, init: 1.0)
    X, _ = blobs(0, n=300, d=4, k=3)
    with pytest.warns(UserWarning, match=r"no learned run is made: .*not expected to beat "
                                         r".*embedding='binary' runs the generic model"):
        fit = est(n_clusters=3, random_state=0, embedding="onehot").fit(X)
    assert not fit.learned_used_ and fit.n_learned_steps_ == 0
    assert "not expected to beat" in fit.learned_skipped_
    km = KMeans(3, random_state=0).fit(X)
    np.testing.assert_array_equal(fit.labels_, km.labels_)


# -- properties ------------------------------------------------------------------------


@pytest.mark.parametrize("scale, shift", [(1e-3, 5.0), (1e4, -3e4), (7.0, 1e6)])
def test_translation_and_scale_invariance(scale, shift):
    """The model sees the data in one normalised frame: an affine change of units (one
    positive scale for all features) gives the same partition and mapped centres."""
    X, _ = blobs(0, std=2.5)
    a = est(n_clusters=3, random_state=0).fit(X)
    b = est(n_clusters=3, random_state=0).fit(scale * X + shift)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(scale * a.cluster_centers_ + shift, b.cluster_centers_,
                               rtol=1e-7, atol=1e-7 * abs(scale) * np.abs(X).max())
    assert b.inertia_ == pytest.approx(scale**2 * a.inertia_, rel=1e-7)


def test_learned_steps_alone_are_close_to_lloyd():
    X, _ = blobs(1, n=500, d=8, k=4, std=2.0)
    learned = est(n_clusters=4, random_state=0, finish="none").fit(X)
    finished = est(n_clusters=4, random_state=0).fit(X)
    assert learned.n_lloyd_steps_ == 0 and learned.n_iter_ == learned.n_learned_steps_
    assert finished.inertia_ <= learned.inertia_ <= 1.05 * finished.inertia_


def test_max_context_exact_below_it_and_seeded_above():
    X, _ = blobs(2, n=300, d=4, k=3, std=3.0)
    none = est(n_clusters=3, random_state=0, finish="none", max_context=None).fit(X)
    above = est(n_clusters=3, random_state=0, finish="none", max_context=300).fit(X)
    np.testing.assert_array_equal(none.cluster_centers_, above.cluster_centers_)
    small = est(n_clusters=3, random_state=0, finish="none", max_context=50)
    c1, c2 = small.fit(X).cluster_centers_, clone(small).fit(X).cluster_centers_
    np.testing.assert_array_equal(c1, c2)
    assert not np.array_equal(c1, none.cluster_centers_)


def test_auto_context_grows_with_the_clusters_within_its_budget():
    from skformer._fit import auto_context

    X, _ = blobs(3, n=3000, d=2, k=8, std=3.0)
    for k, rows in [(4, 2048), (32, None)]:  # 2048 rows; 128 per cluster: all 3000
        auto = est(n_clusters=k, random_state=0, finish="none", max_iter=3).fit(X)
        same = est(n_clusters=k, random_state=0, finish="none", max_iter=3,
                   max_context=rows).fit(X)
        np.testing.assert_array_equal(auto.cluster_centers_, same.cluster_centers_)
    for k in (2, 16, 64, 256, 300, 1024, 4096):
        for width in (5, 20, 74, 600):
            rows, floor = auto_context(k, width), max(2048, 16 * k)
            # Never below the floor, never above 128 a cluster, within the budget
            # unless at the floor.
            assert floor <= rows <= max(floor, 128 * k)
            assert rows == floor or rows * k * width <= 2**28


def test_integer_weights_match_repeated_points(global_random_seed):
    X, _ = blobs(global_random_seed, n=60, d=3, k=3, std=2.0)
    w = check_random_state(global_random_seed).randint(1, 4, size=60)
    init = X[:3]
    weighted = est(n_clusters=3, init=init, max_context=None).fit(X, sample_weight=w)
    repeated = est(n_clusters=3, init=init, max_context=None).fit(np.repeat(X, w, axis=0))
    np.testing.assert_allclose(weighted.cluster_centers_, repeated.cluster_centers_,
                               atol=1e-6 * np.ptp(X))
    assert weighted.inertia_ == pytest.approx(repeated.inertia_, rel=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_kept(dtype):
    X, _ = blobs(3)
    fit = est(n_clusters=3, random_state=0).fit(X.astype(dtype))
    assert fit.cluster_centers_.dtype == dtype
    assert fit.labels_.dtype == np.int32
    assert fit.transform(X.astype(dtype)).dtype == dtype


@pytest.mark.parametrize(
    "X, k",
    [
        (np.array([[3.0]]), 1),                          # n = 1, d = 1, k = 1
        (np.arange(10.0).reshape(-1, 1), 1),               # k = 1: the mean
        (np.arange(20.0).reshape(-1, 1), 3),               # d = 1 (padded model)
        (np.c_[np.arange(30.0), np.full(30, 7.0)], 2),     # a constant feature
        (np.repeat([[0.0, 1.0], [5.0, 5.0]], 10, axis=0), 2),  # duplicates
        (np.random.default_rng(0).normal(size=(40, 3)) * 1e-30, 4),
        (np.random.default_rng(0).normal(size=(40, 3)) * 1e30, 4),
    ],
)
def test_odd_shapes_and_values(X, k):
    fit = est(n_clusters=k, random_state=0).fit(X)
    assert np.isfinite(fit.cluster_centers_).all()
    assert set(fit.labels_) <= set(range(k))
    np.testing.assert_array_equal(lloyd_step(X, fit.cluster_centers_)[1], fit.labels_)
    if k == 1:
        np.testing.assert_allclose(fit.cluster_centers_[0], X.mean(0), rtol=1e-12)


def test_fewer_distinct_points_than_clusters_warns():
    X = np.repeat([[0.0, 0.0], [1.0, 1.0]], 5, axis=0)
    with pytest.warns(ConvergenceWarning, match=r"Number of distinct clusters \(2\)"):
        fit = est(n_clusters=3, random_state=0).fit(X)
    assert np.isfinite(fit.cluster_centers_).all()


def test_pickle_is_small_and_holds_no_model():
    X, _ = blobs(4, n=2000, d=8, k=4)
    fit = est(n_clusters=4, random_state=0).fit(X)
    data = pickle.dumps(fit)
    assert b"torch" not in data
    assert len(data) < 2 * X.shape[0] * 4 + 4096  # the int32 labels_ and a little more
    back = pickle.loads(data)
    np.testing.assert_array_equal(back.predict(X), fit.labels_)


def test_device_auto_is_cpu_without_cuda():
    X, _ = blobs(5)
    fit = TransformerKMeans(n_clusters=3, random_state=0, learned_starts=1).fit(X)  # "auto"
    same = est(n_clusters=3, random_state=0).fit(X)
    np.testing.assert_array_equal(fit.cluster_centers_, same.cluster_centers_)


def test_shape_without_model_and_no_pretraining():
    """pretrain=False: the one-hot code needs a stored model; the binary code's generic
    model is stored (nothing is trained)."""
    X = np.random.default_rng(0).normal(size=(50, 65))
    with pytest.raises(LookupError, match="No pretrained skformer model for d=65, k=3"):
        est(n_clusters=3, pretrain=False, embedding="onehot").fit(X)
    assert est(n_clusters=3, pretrain=False).fit(X).learned_used_


@pytest.mark.parametrize(("n", "d", "k"), [
    (120, 1, 2), (300, 1, 7), (400, 3, 64), (700, 2, 300), (150, 1000, 3), (200, 130, 33),
])
def test_learned_steps_run_at_every_shape(n, d, k):
    """Shapes no model was trained for (d = 1, d = 1000, k = 300, ...): the generic model
    of the code width runs (wide data in principal directions), nothing is trained, and
    the result is never above KMeans' at the same seed."""
    rng = np.random.default_rng(d * 1000 + k)
    X = rng.normal(size=(n, d)) + 4 * rng.normal(size=(k, d))[rng.integers(k, size=n)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no skip, no pretraining
        fit = est(n_clusters=k, random_state=0).fit(X)
    assert fit.learned_used_ and fit.learned_skipped_ is None and fit.n_learned_steps_ >= 0
    km = KMeans(k, n_init=1, random_state=0).fit(X)
    assert fit.inertia_ <= km.inertia_ * (1 + 1e-9)
    assert np.isfinite(fit.cluster_centers_).all() and fit.cluster_centers_.shape == (k, d)


def test_a_learned_run_not_made_says_why(monkeypatch, tmp_path):
    from skformer.store import selection

    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(selection, "on_demand_feasible", lambda d, k: False)
    X, _ = blobs(0, n=200, d=70, k=3)
    with pytest.warns(UserWarning, match=r"learned_starts=1: no learned run is made: no "
                                         r"model is stored .*skformer pretrain --d 70"):
        fit = est(n_clusters=3, random_state=0, embedding="onehot").fit(X)
    assert not fit.learned_used_ and "over 90 s" in fit.learned_skipped_


def test_pretraining_on_demand_is_said_at_default_verbosity(monkeypatch, caplog, tmp_path):
    """A WARNING record: Python prints it on stderr with no logging set up (verbose=0)."""
    from skformer.store import pretraining

    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path))
    real = pretraining._on_demand_config
    monkeypatch.setattr(pretraining, "_on_demand_config", lambda *a: real(*a).__class__(
        **{**real(*a).to_dict(), "steps": 1, "schedule_search": 1, "n_val_tasks": 4,
           "n_points": 16, "eval_every": 1}))
    X, _ = blobs(0, n=60, d=3, k=3)
    est(n_clusters=3, random_state=0, embedding="onehot").fit(X)
    said = [r for r in caplog.records if "pretraining one on demand" in r.getMessage()]
    assert len(said) == 1 and said[0].levelname == "WARNING"


def test_narrower_data_use_a_padded_model(caplog):
    X, _ = blobs(6, d=13, k=3)
    with caplog.at_level("INFO", logger="skformer"):
        fit = est(n_clusters=3, random_state=0, verbose=1).fit(X)
    assert "using the shipped d=16 model with 3 zero features" in caplog.text
    assert fit.learned_used_ and "Learned step 0" in caplog.text


# -- scikit-learn integration ------------------------------------------------------------


def test_pipeline_in_grid_search_and_cross_val_score():
    X, _ = blobs(7, n=240, d=5, k=4, std=1.0)
    pipe = Pipeline([("scale", StandardScaler()), ("cluster", est(random_state=0))])
    search = GridSearchCV(pipe, {"cluster__n_clusters": [2, 3, 4]}, cv=3, n_jobs=2)
    search.fit(X)
    assert search.best_params_ == {"cluster__n_clusters": 4}
    scores = cross_val_score(clone(pipe).set_params(cluster__n_clusters=4), X, cv=3, n_jobs=2)
    assert np.all(np.isfinite(scores)) and np.all(scores < 0)
    fitted = pickle.loads(pickle.dumps(search.best_estimator_))
    np.testing.assert_array_equal(fitted.predict(X), search.best_estimator_.predict(X))


def test_same_interface_as_exact_and_kmeans():
    X, _ = blobs(8)
    ours, exact = est(n_clusters=3).fit(X), ExactLloydTransformer(3).fit(X)
    km = KMeans(3).fit(X)
    for attr in ("cluster_centers_", "labels_", "inertia_", "n_iter_", "n_features_in_"):
        assert hasattr(ours, attr) and hasattr(exact, attr) and hasattr(km, attr)
    assert ours.get_feature_names_out().tolist() == [f"transformerkmeans{i}" for i in range(3)]
    assert ours.score(X) == pytest.approx(-ours.inertia_)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours.predict(X[:5])


# -- errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, match",
    [
        ({"finish": "kmeans"}, "The 'finish' parameter of TransformerKMeans must be"),
        ({"max_context": 0}, "The 'max_context' parameter of TransformerKMeans must be"),
        ({"embedding": "none"}, "The 'embedding' parameter of TransformerKMeans must be"),
        ({"loss": "mse"}, "The 'loss' parameter of TransformerKMeans must be"),
        ({"pretrain": "yes"}, "The 'pretrain' parameter of TransformerKMeans must be"),
        ({"learned_starts": -1}, "The 'learned_starts' parameter of TransformerKMeans"),
    ],
)
def test_invalid_parameters(params, match):
    with pytest.raises(InvalidParameterError, match=match):
        est(**params).fit(np.zeros((10, 2)))


@pytest.mark.parametrize(
    "X, params, match",
    [
        (np.zeros((2, 2)), {"n_clusters": 3}, r"n_samples=2 should be >= n_clusters=3\."),
        (np.array([[np.nan, 1.0], [0, 1]]), {"n_clusters": 1}, "Input X contains NaN"),
        (np.zeros((0, 2)), {"n_clusters": 1}, "Found array with 0 sample"),
        (np.ones((5, 2)), {"n_clusters": 2, "init": np.zeros((3, 2))},
         r"The shape of the initial centers \(3, 2\) does not match the number of clusters 2"),
        (np.ones((5, 2)), {"n_clusters": 2, "device": "cuda:7"}, "CUDA is not available"),
        (np.ones((5, 2)), {"n_clusters": 2, "finish": "none", "learned_starts": 0},
         r"finish='none' needs learned_starts >= 1"),
        (np.arange(40.0).reshape(20, 2), {"n_clusters": 4, "learned_starts": 1,
                                          "max_context": 3},
         r"max_context=3 should be >= n_clusters=4"),
    ],
)
def test_bad_input_errors(X, params, match):
    with pytest.raises(ValueError, match=match):
        TransformerKMeans(**{"device": "cpu", **params}).fit(X)


@pytest.mark.parametrize("estimator", [TransformerKMeans, ExactLloydTransformer])
def test_n_init_runs_follow_the_joblib_backend(estimator):
    """The n_init runs go through joblib: a threading backend gives the sequential result."""
    from joblib import parallel_config

    X, _ = blobs(9, n=400, d=4, k=4, std=2.5)
    params = dict(n_clusters=4, init="random", n_init=4, random_state=0, device="cpu")
    sequential = estimator(**params).fit(X)
    with parallel_config(backend="threading", n_jobs=2):
        parallel = estimator(**params).fit(X)
    np.testing.assert_array_equal(parallel.cluster_centers_, sequential.cluster_centers_)
    np.testing.assert_array_equal(parallel.labels_, sequential.labels_)
    assert parallel.n_iter_ == sequential.n_iter_


def test_learned_fits_leave_the_global_torch_generator_alone():
    # The first learned fit reads the stored model (issue 21): no default initialisation
    # may be drawn from the global generator, then or in any later fit.
    import torch

    from skformer.store import selection

    selection.stored_model.cache_clear()
    X, _ = make_blobs(120, n_features=3, centers=4, random_state=0)
    for _ in range(2):
        before = torch.get_rng_state()
        TransformerKMeans(4, learned_starts=1, random_state=0).fit(X)
        assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("finish", ["lloyd", "none"])
@pytest.mark.parametrize("weight", [1e-40, 1e40, 1e300])
def test_uniform_weights_however_large_change_nothing(finish, weight):
    # Weights beyond float32's range overflowed in the learned steps (issue 21): a
    # RuntimeWarning, and with finish="none" the starting centres came back.
    X, _ = make_blobs(200, n_features=2, centers=4, random_state=0)
    est = dict(n_clusters=4, learned_starts=1, random_state=0, finish=finish)
    ref = TransformerKMeans(**est).fit(X, sample_weight=np.ones(len(X)))
    fit = TransformerKMeans(**est).fit(X, sample_weight=np.full(len(X), weight))
    np.testing.assert_array_equal(fit.labels_, ref.labels_)
    np.testing.assert_allclose(fit.cluster_centers_, ref.cluster_centers_, rtol=1e-12)
    assert fit.n_learned_steps_ == ref.n_learned_steps_
    assert fit.selected_run_ == ref.selected_run_
    assert fit.inertia_ == pytest.approx(weight * ref.inertia_, rel=1e-9)


@pytest.mark.parametrize("X, n_clusters, init, cause", [
    # three distinct rows for four clusters: KMeans' words
    (np.repeat(np.arange(3.0)[:, None], 4, axis=0), 4, "k-means++",
     "Possibly due to duplicate points in X"),
    # distinct rows, a random start that leaves a cluster without points (issue 41)
    (np.repeat(np.random.default_rng(0).normal(size=(30, 2)), 5, axis=0), 8, "random",
     "A cluster was left without points: the exact Lloyd steps keep its centre"),
])
def test_fewer_clusters_warning_names_its_cause(X, n_clusters, init, cause):
    for seed in range(40):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            TransformerKMeans(n_clusters, init=init, n_init=1, random_state=seed,
                              device="cpu").fit(X)
        messages = [str(w.message) for w in caught if w.category is ConvergenceWarning]
        if messages:
            assert cause in messages[0]
            assert "distinct clusters" in messages[0]
            return
    pytest.fail("no start left fewer distinct clusters")
