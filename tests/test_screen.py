"""The context screen of the learned mode: oracle first, then what it decides in a fit.

Oracle: the screen's fixed point is the NumPy Lloyd's (:mod:`skformer.reference`) run
on the context rows to convergence, and its inertia the oracle's. Then its rule (another
clustering of lower inertia, never the same one renamed), and in the estimator: a learned
run that ends where the plain run did gets no Lloyd steps on all the data, one that
escapes a poor start does, and the fit is never above KMeans'.
"""

import logging

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs

from skformer import TransformerKMeans
from skformer._fit.screen import ContextScreen, Settled
from skformer.reference import assign, lloyd


def _oracle_fixed_point(rows, start, weight=None, max_iter=200):
    """NumPy Lloyd steps until the centres stop moving."""
    c = np.asarray(start, dtype=np.float64)
    for _ in range(max_iter):
        new = lloyd(rows, c, 1, sample_weight=weight).centers
        if np.array_equal(new, c):
            break
        c = new
    return c


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_settle_is_the_numpy_lloyd_fixed_point(global_random_seed, weighted, dtype):
    rng = np.random.default_rng(global_random_seed)
    rows, _ = make_blobs(600, n_features=5, centers=6, cluster_std=2.5,
                         random_state=global_random_seed)
    weight = rng.integers(1, 4, size=600).astype(np.float64) if weighted else None
    start = rows[rng.choice(600, 6, replace=False)]
    settled = ContextScreen(rows.astype(dtype), weight, max_iter=300).settle(
        torch.from_numpy(start.astype(dtype)))
    expected = _oracle_fixed_point(rows.astype(dtype).astype(np.float64), start, weight)
    tol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(settled.centers, expected, rtol=tol, atol=tol)
    sq = assign(rows.astype(np.float64), expected)[1]
    inertia = float(sq.sum() if weight is None else weight @ sq)
    assert settled.inertia == pytest.approx(inertia, rel=tol)


def test_settle_stopped_by_max_iter_scores_its_centres():
    rows, _ = make_blobs(400, n_features=3, centers=5, cluster_std=3.0, random_state=0)
    start = rows[:5]
    settled = ContextScreen(rows, None, max_iter=1).settle(torch.from_numpy(start))
    one = lloyd(rows, start, 1).centers
    np.testing.assert_allclose(settled.centers, one, rtol=1e-12)
    assert settled.inertia == pytest.approx(assign(rows, one)[1].sum(), rel=1e-12)


# -- the rule --------------------------------------------------------------------------


@pytest.mark.parametrize("centres, inertia, expected", [
    ([[0.0], [10.0]], 1.0, True),     # another clustering, lower
    ([[0.0], [10.0]], 5.0, False),    # another clustering, higher
    ([[0.0], [10.0]], 2.0, False),    # another clustering, level
    ([[9.0], [1.0]], 1.0, False),     # the same centres renamed (even if lower by rounding)
])
def test_improves_needs_another_clustering_of_lower_inertia(centres, inertia, expected):
    best = Settled(np.array([[1.0], [9.0]]), 2.0)
    assert ContextScreen.improves(Settled(np.array(centres), inertia), best) is expected


# -- in the estimator --------------------------------------------------------------------


def _mixture(n, d, k, seed):
    """Overlapping normal components in the unit cube: k-means++ starts that Lloyd's
    algorithm leaves in a poor optimum now and then."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(size=(k, d))
    y = rng.integers(k, size=n)
    return means[y] + 0.1 * rng.normal(size=(n, d))


def _learned(**params):
    return TransformerKMeans(**{"device": "cpu", "learned_starts": 1, **params})


def test_a_learned_run_that_ends_where_lloyd_did_is_not_finished(caplog):
    X, _ = make_blobs(3000, n_features=4, centers=3, cluster_std=0.5, random_state=0)
    with caplog.at_level(logging.INFO, logger="skformer"):
        fit = _learned(n_clusters=3, max_context=500, random_state=0, verbose=1).fit(X)
    assert "(the same clustering): no Lloyd steps on all the data" in caplog.text
    # One run of Lloyd steps on all the data: the plain run's.
    assert caplog.text.count("strict convergence") == 1
    km = KMeans(3, random_state=0).fit(X)
    assert fit.selected_run_ == "lloyd" and fit.n_learned_steps_ == 0
    np.testing.assert_array_equal(fit.labels_, km.labels_)


@pytest.mark.parametrize("max_context, screened", [(1500, True), (1501, False)])
def test_the_screen_serves_a_context_of_at_most_half_the_rows(caplog, max_context, screened):
    # Settling two runs on a context of more than half the rows costs more than the
    # finish it may spare: there the learned run is finished on all the data, unscreened.
    X, _ = make_blobs(3000, n_features=4, centers=3, cluster_std=0.5, random_state=0)
    with caplog.at_level(logging.INFO, logger="skformer"):
        fit = _learned(n_clusters=3, max_context=max_context, random_state=0,
                       verbose=1).fit(X)
    assert ("Context screen" in caplog.text) is screened
    assert caplog.text.count("strict convergence") == (1 if screened else 2)
    km = KMeans(3, random_state=0).fit(X)
    assert fit.inertia_ <= km.inertia_ * (1 + 1e-9)


@pytest.mark.parametrize("n_init", [1, 2])
def test_never_above_kmeans_with_a_sampled_context(global_random_seed, n_init):
    X = _mixture(3000, 8, 10, global_random_seed)
    params = dict(n_clusters=10, n_init=n_init, random_state=global_random_seed)
    ours = _learned(max_context=400, **params).fit(X)
    km = KMeans(**params).fit(X)
    assert ours.inertia_ <= km.inertia_ * (1 + 1e-9)
    if ours.selected_run_ == "lloyd":
        np.testing.assert_array_equal(ours.labels_, km.labels_)


def test_a_learned_run_that_escapes_a_poor_start_is_finished(caplog):
    """Seed 7: KMeans' k-means++ start ends a third above the best clustering; the learned
    run from the same start finds it on the context, and Lloyd steps on all the data
    finish it (without global moves, which would repair the start themselves)."""
    X = _mixture(3000, 32, 10, 0)
    with caplog.at_level(logging.INFO, logger="skformer"):
        fit = _learned(n_clusters=10, max_context=500, random_state=7, verbose=1,
                       breathing_depth=0).fit(X)
    km = KMeans(10, random_state=7).fit(X)
    assert "no Lloyd steps on all the data" not in caplog.text
    assert caplog.text.count("strict convergence") == 2  # the plain run and the finish
    assert fit.selected_run_ == "learned" and fit.n_learned_steps_ >= 1
    assert fit.inertia_ < 0.7 * km.inertia_
