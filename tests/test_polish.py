"""The learned polish: the learned steps once more from the end of the global moves.

First the mechanics against an oracle (a known "learned" function, then NumPy's Lloyd
steps to a fixed point), then the properties (never above the moves' end, ``"auto"``),
then batch_k_means' parity per problem, then the errors.
"""

import warnings

import numpy as np
import pytest
from sklearn.cluster import kmeans_plusplus
from sklearn.utils._param_validation import InvalidParameterError

from skformer import TransformerKMeans, batch_k_means
from skformer import reference as ref
from skformer._fit import runs

# Two groups of four points on a line and a lone point far off.
X = np.array([[0.0], [1.0], [2.0], [3.0], [10.0], [11.0], [12.0], [13.0], [40.0]])
STUCK = np.array([[1.5], [11.5], [40.0]])  # a fixed point of Lloyd's steps: inertia 10


def _fixed_point(X, c):
    """NumPy's Lloyd steps from ``c`` until the centres stop moving."""
    for _ in range(100):
        new, _ = ref.lloyd_step(X, c)
        if np.array_equal(new, c):
            return c
        c = new
    raise AssertionError("no fixed point")


def _mixture(rng, n, d, k):
    """Clusters of unequal sizes (Dirichlet proportions) and unequal spreads."""
    means = rng.normal(size=(k, d)) * 3
    share = rng.dirichlet(np.ones(k))
    labels = rng.choice(k, n, p=share)
    spread = rng.uniform(0.3, 1.5, size=k)
    return means[labels] + rng.normal(size=(n, d)) * spread[labels, None]


@pytest.fixture
def polish_calls(monkeypatch):
    """Whether each fit's polish step had learned steps to run, in call order."""
    made = []
    original = runs._Fit.polish

    def spy(self, run):
        made.append(self.learned_end is not None)
        return original(self, run)

    monkeypatch.setattr(runs._Fit, "polish", spy)
    return made


# ------------------------------------------------------------------------- the oracle


def test_the_polish_keeps_the_fixed_point_of_lower_inertia():
    """Data whose poor fixed point splits a group in two: the "learned" centres put
    two centres in the first group; Lloyd's steps from them end at the oracle's fixed
    point, of lower inertia, which replaces the start."""
    rng = np.random.default_rng(0)
    Y = np.r_[rng.normal(0, 1, (40, 1)), rng.normal(20, 0.3, (40, 1)),
              rng.normal(21, 0.3, (40, 1))]
    start = np.array([[0.0], [20.5], [60.0]])  # one centre holds no point
    start = _fixed_point(Y, start)
    moved = np.array([[-1.0], [1.0], [20.5]])
    calls = []

    def learned(c):
        calls.append(c.copy())
        return moved, 7

    found, _ = runs.breathe_problem(Y, None, start, max_iter=300, tol=0.0, depth=0,
                                    device="cpu", learned=learned)
    want = _fixed_point(Y, moved)
    np.testing.assert_allclose(calls[0], start, rtol=1e-12)
    np.testing.assert_allclose(np.sort(found.centers, 0), np.sort(want, 0), rtol=1e-12)
    labels = np.square(Y - want.T).argmin(1)
    assert found.inertia == pytest.approx(np.square(Y[:, 0] - want[labels, 0]).sum(),
                                          rel=1e-12)


def test_the_polish_leaves_a_better_start_alone():
    """Learned centres that end higher than the start are dropped: nothing improved."""
    worse = np.array([[0.0], [1.0], [40.0]])
    found, _ = runs.breathe_problem(X, None, STUCK, max_iter=300, tol=0.0, depth=0,
                                    device="cpu", learned=lambda c: (worse, 3))
    assert found is None


# ------------------------------------------------------------------------- properties


def test_never_above_the_end_of_the_moves(global_random_seed):
    """Without Hartigan's moves after it, the polish only replaces the moves' end
    where it is lower, and the attribute says when it did."""
    rng = np.random.default_rng(global_random_seed)
    Y = _mixture(rng, 600, 2, 20)
    est = dict(n_clusters=20, learned_starts=1, hartigan=False, random_state=0)
    on = TransformerKMeans(**est, learned_polish=True).fit(Y)
    off = TransformerKMeans(**est, learned_polish=False).fit(Y)
    assert on.inertia_ <= off.inertia_
    assert on.learned_polish_improved_ == (on.inertia_ < off.inertia_)
    assert not off.learned_polish_improved_
    np.testing.assert_array_equal(on.labels_, on.predict(Y))
    assert on.inertia_ == pytest.approx(-on.score(Y), rel=1e-9)


def test_it_lowers_the_inertia_somewhere():
    improved = 0
    for seed in range(4):
        Y = _mixture(np.random.default_rng(seed), 600, 2, 20)
        est = TransformerKMeans(20, learned_starts=1, hartigan=False, learned_polish=True,
                                random_state=0).fit(Y)
        improved += est.learned_polish_improved_
    assert improved >= 1


@pytest.mark.parametrize(("k", "params", "polishes"), [
    (64, {}, False),  # the fast mode stays KMeans' run
    (64, {"learned_starts": 1}, True),
    (63, {"learned_starts": 1}, False),  # POLISH_MIN_CLUSTERS
    (64, {"learned_starts": 1, "breathing_depth": 0}, False),
    (8, {"learned_starts": 1, "learned_polish": True}, True),
    (8, {"learned_starts": 1, "breathing_depth": 0, "learned_polish": True}, True),
    (64, {"learned_starts": 1, "learned_polish": False}, False),
])
def test_auto_polishes_with_learned_runs_moves_and_many_clusters(polish_calls, k, params,
                                                                 polishes):
    Y = _mixture(np.random.default_rng(0), 400, 2, k)
    TransformerKMeans(k, random_state=0, **params).fit(Y)
    assert polish_calls == [polishes]


# ------------------------------------------------------------------- batch parity


@pytest.mark.parametrize("polish", [True, False])
def test_batch_polishes_each_problem_as_the_estimator(polish):
    """Per problem, batch_k_means' learned mode (moves, polish, single-point moves) is
    TransformerKMeans' from the same start."""
    rng = np.random.default_rng(0)
    problems = [_mixture(rng, 300, 2, 16) for _ in range(6)]
    starts = [kmeans_plusplus(x, 16, random_state=i)[0] for i, x in enumerate(problems)]
    result = batch_k_means(np.stack(problems), 16, init=np.stack(starts), learned_starts=1,
                           learned_polish=polish)
    improved = 0
    for i, x in enumerate(problems):
        est = TransformerKMeans(16, init=starts[i], n_init=1, learned_starts=1,
                                learned_polish=polish, device="cpu").fit(x)
        improved += est.learned_polish_improved_
        np.testing.assert_array_equal(result.labels[i], est.labels_)
        np.testing.assert_allclose(result.cluster_centers[i], est.cluster_centers_,
                                   rtol=1e-6, atol=1e-9)
        assert result.inertia[i] == pytest.approx(est.inertia_, rel=1e-9)
    assert improved >= 1 if polish else improved == 0


@pytest.mark.parametrize(("k", "polishes"), [(64, True), (8, False)])
def test_batch_auto_polishes_as_the_estimator(polish_calls, k, polishes):
    X = np.stack([_mixture(np.random.default_rng(i), 400, 2, k) for i in range(2)])
    batch_k_means(X, k, learned_starts=1, random_state=0)
    assert polish_calls == [polishes] * 2


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"learned_polish": True}, ValueError, "learned_polish=True needs learned_starts >= 1"),
    ({"learned_polish": True, "learned_starts": 1, "finish": "none",
      "breathing_depth": 0, "hartigan": False}, ValueError,
     "learned_polish=True needs finish='lloyd'"),
    ({"learned_polish": "yes"}, InvalidParameterError, "'learned_polish' parameter"),
])
def test_estimator_errors(params, error, match):
    with pytest.raises(error, match=match):
        TransformerKMeans(2, **params).fit(X)


@pytest.mark.parametrize(("params", "match"), [
    ({"learned_polish": True}, "learned_polish=True needs learned_starts >= 1"),
    ({"learned_polish": np.bool_(True)}, "learned_polish=True needs learned_starts >= 1"),
    ({"learned_polish": "yes"}, "learned_polish must be 'auto', True or False"),
])
def test_batch_errors(params, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=match):
            batch_k_means(np.stack([X, X]), 2, **params)
