"""Global moves (breathing k-means): the centre costs of every backend against the NumPy
oracle, the moves, the search against the oracle's, then the estimator's contract."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.datasets import make_blobs

from skformer import TransformerKMeans
from skformer import kmeans as kmeans_module
from skformer import reference as ref
from skformer._fit import kernels
from skformer._fit.engine.base import CentreCosts
from skformer._fit.engine.compiled import CompiledBackend, Grid
from skformer._fit.engine.sparse import SparseBackend
from skformer._fit.engine.torch import TorchBackend
from skformer._fit.frame import Frame
from skformer._fit.learned import learned_pace
from skformer._fit.moves import BREATHING_DEPTH, breathe_in, breathe_out, breathing
from skformer._fit.sources import ArraySource
from skformer._fit.sparse import SparseSource

CPU = torch.device("cpu")


def _source(X, w=None, kind="array"):
    if kind == "sparse":
        src = SparseSource(sp.csr_matrix(X), w, CPU)
    else:
        src = ArraySource(X, w, CPU, cache=kind == "array", block_rows=97)
    src.set_frame(Frame(np.zeros(X.shape[1], X.dtype), 0))
    return src


# ------------------------------------------------------------------------ centre costs


@pytest.mark.parametrize("k", [1, 2, 9])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("backend", ["compiled", "compiled-blocks", "torch", "sparse"])
def test_costs_equal_the_oracle(rng, k, weighted, backend):
    if backend.startswith("compiled") and kernels.load() is None:
        pytest.skip("numba is not available")
    X = rng.normal(size=(500, 3))
    if backend == "sparse":
        X[rng.random(X.shape) < 0.5] = 0.0
    w = rng.uniform(0.5, 2.0, size=500) if weighted else None
    c = X[rng.choice(500, k, replace=False)] + 0.01
    if backend == "compiled":
        costs = CompiledBackend(_source(X, w), k, grid=Grid(chunk=k * 300)).costs(c)
    elif backend == "compiled-blocks":
        costs = CompiledBackend(_source(X, w, "memmap"), k).costs(c)
    elif backend == "torch":
        costs = TorchBackend(_source(X, w), k).costs(c)
    else:
        costs = SparseBackend(_source(X, w, "sparse"), k).costs(c)
    error, utility = ref.centre_costs(X, c, w)
    np.testing.assert_allclose(costs.error, error, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(costs.utility, utility, rtol=1e-10, atol=1e-12)
    assert costs.inertia == pytest.approx(error.sum(), rel=1e-12)


def test_dense_costs_float32_within_its_rounding(rng):
    """The two nearest centres are found in float32, their distances summed from the
    differences in float64."""
    X = (rng.normal(size=(400, 5)) * 10.0).astype(np.float32)
    c = X[:7].copy()
    want = ref.centre_costs(X, c)
    backends = [TorchBackend] + ([CompiledBackend] if kernels.load() is not None else [])
    for backend in backends:
        error, utility = backend(_source(X), 7).costs(c)
        np.testing.assert_allclose(error, want[0], rtol=1e-9)
        np.testing.assert_allclose(utility, want[1], rtol=1e-9)


# ---------------------------------------------------------------------------- the moves


def test_breathe_in_adds_beside_the_largest_errors():
    c = np.array([[0.0, 0.0], [10.0, 0.0], [20.0, 0.0], [30.0, 0.0]])
    costs = CentreCosts(np.array([4.0, 1.0, 9.0, 4.0]), np.zeros(4))
    new = breathe_in(c, costs, 3, total_weight=18.0, rng=np.random.default_rng(0))
    assert new.shape == (7, 2) and new.dtype == c.dtype
    np.testing.assert_array_equal(new[:4], c)
    # 2 first, then 0 and 3 (equal errors: the first first), offsets within 1 % rmse / 2
    np.testing.assert_allclose(new[4:], c[[2, 0, 3]], atol=0.005 * np.sqrt(18.0 / 18.0))
    assert not np.array_equal(new[4:], c[[2, 0, 3]])


def test_breathe_out_freezes_the_neighbours_of_the_removed():
    c = np.array([[0.0], [0.1], [0.2], [5.0], [9.0]])
    costs = CentreCosts(np.zeros(5), np.array([0.1, 0.2, 0.3, 5.0, 4.0]))
    # 0 goes and freezes 1; 1 is frozen; 2 goes (its neighbour 1 is frozen already)
    np.testing.assert_array_equal(breathe_out(c, costs, 2), [1, 3, 4])


def test_breathe_out_stops_freezing_when_too_few_would_stay_free():
    c = np.array([[0.0], [1.0], [5.0], [6.0]])
    costs = CentreCosts(np.zeros(4), np.array([0.0, 3.0, 1.0, 2.0]))
    # removing 3 of 4: 0 goes and freezes 1; 2 goes but may not freeze 3 (only 3 would
    # remain free for 2 more removals), so 3 goes too
    np.testing.assert_array_equal(breathe_out(c, costs, 3), [1])


def _breathe_out_literally(c, utility, m):
    """Fritzke's breathe-out, written out: pair by pair distances, loops, sets."""
    n = len(c)
    nearest = []
    for i in range(n):
        d2 = [sum((float(a) - float(b)) ** 2 for a, b in zip(c[i], c[j], strict=True))
              if j != i else np.inf for j in range(n)]
        nearest.append(int(np.argmin(d2)))
    removed, frozen = [], set()
    for j in sorted(range(n), key=lambda j: (utility[j], j)):
        if j in frozen:
            continue
        removed.append(j)
        if len(frozen) + m < n:
            frozen.add(nearest[j])
        if len(removed) == m:
            break
    return [j for j in range(n) if j not in removed]


@pytest.mark.parametrize("d", [1, 3, 12, 58])
@pytest.mark.parametrize("m", [1, 5, 20])
def test_breathe_out_is_the_literal_algorithm(rng, d, m):
    # Centres on a coarse grid (ties among distances) and utilities with ties: the first
    # of equal utilities goes first, and the first of equally near neighbours is frozen.
    c = rng.integers(0, 4, (30, d)).astype(np.float64)
    utility = rng.integers(0, 6, 30).astype(np.float64)
    costs = CentreCosts(np.zeros(30), utility)
    np.testing.assert_array_equal(breathe_out(c, costs, m),
                                  _breathe_out_literally(c, utility, m))
    np.testing.assert_array_equal(breathe_out(c.astype(np.float32), costs, m),
                                  _breathe_out_literally(c.astype(np.float32), utility, m))


# ------------------------------------------------------------------ the search, oracle


def _poor_start(seed, n_clusters=12):
    """Blobs and a fixed point of Lloyd's algorithm from a start that misses some."""
    X, _ = make_blobs(600, 2, centers=n_clusters, cluster_std=0.6, random_state=seed)
    rng = np.random.default_rng(seed)
    start = X[rng.choice(600, n_clusters, replace=False)]
    c, _ = ref.lloyd_to_fixed_point(X, start, 300)
    return X, c


@pytest.mark.parametrize("depth", [1, 3, 5])
def test_breathing_on_the_engine_equals_the_oracle(global_random_seed, depth):
    X, c0 = _poor_start(global_random_seed)
    want_c, want_inertia, want_cycles = ref.breathing(X, c0, depth)
    src = _source(X)
    backend = CompiledBackend(src, 12) if kernels.load() is not None else TorchBackend(src, 12)

    def lloyd(c):
        return ref.lloyd_to_fixed_point(X, c, 300)

    found = breathing(c0, lloyd=lloyd, costs=backend.costs, depth=depth, total_weight=600.0,
                      tol=1e-9, max_cycles=300)
    assert found.n_cycles == want_cycles
    # the same centres; their order may differ where two utilities tie to rounding
    np.testing.assert_allclose(found.centers[np.lexsort(found.centers.T)],
                               want_c[np.lexsort(want_c.T)], rtol=1e-9, atol=1e-9)
    assert found.inertia == pytest.approx(want_inertia, rel=1e-9)


def test_breathing_never_ends_above_its_start(global_random_seed):
    X, c0 = _poor_start(global_random_seed)
    start = float(ref.centre_costs(X, c0)[0].sum())
    found = breathing(c0, lloyd=lambda c: ref.lloyd_to_fixed_point(X, c, 300),
                      costs=lambda c: CentreCosts(*ref.centre_costs(X, c)), depth=5,
                      total_weight=600.0, tol=1e-4, max_cycles=300)
    assert found.inertia <= start
    assert found.centers.shape == c0.shape


def test_breathing_depth_zero_is_no_move():
    X, c0 = _poor_start(0)
    found = breathing(c0, lloyd=None, costs=lambda c: CentreCosts(*ref.centre_costs(X, c)),
                      depth=0, total_weight=600.0, tol=1e-4, max_cycles=10)
    assert found.n_cycles == 0 and found.centers is c0


# ---------------------------------------------------------------------- the estimator


def test_estimator_breathing_equals_the_oracle(global_random_seed):
    """tol=0: Lloyd runs to a fixed point in the fit and in the oracle alike."""
    X, c0 = _poor_start(global_random_seed)
    est = TransformerKMeans(12, init=c0, n_init=1, tol=0.0, breathing_depth=4,
                            hartigan=False, device="cpu").fit(X)
    want_c, want_inertia, want_cycles = ref.breathing(X, c0, 4)
    assert est.n_breathing_cycles_ == want_cycles
    got = est.cluster_centers_
    np.testing.assert_allclose(got[np.lexsort(got.T)], want_c[np.lexsort(want_c.T)],
                               rtol=1e-9, atol=1e-9)
    assert est.inertia_ == pytest.approx(want_inertia, rel=1e-9)


@pytest.mark.parametrize("learned_starts", [0, 1])
def test_breathing_is_never_above_the_run_it_starts_from(global_random_seed, learned_starts,
                                                          monkeypatch):
    X, _ = make_blobs(1500, 4, centers=20, cluster_std=1.5, random_state=global_random_seed)
    # The learned steps are paced for the moves that follow them (one temperature scale):
    # the fit without moves is paced alike, so both start from the same run.
    monkeypatch.setattr(kmeans_module, "learned_pace", lambda _: learned_pace(True))
    plain = TransformerKMeans(20, random_state=global_random_seed, learned_starts=learned_starts,
                              breathing_depth=0, device="cpu").fit(X)
    moved = TransformerKMeans(20, random_state=global_random_seed, learned_starts=learned_starts,
                              breathing_depth=5, hartigan=False, device="cpu").fit(X)
    assert moved.inertia_ <= plain.inertia_
    assert moved.n_breathing_cycles_ >= 1 and plain.n_breathing_cycles_ == 0
    assert moved.selected_run_ == plain.selected_run_
    assert moved.breathing_improved_ == (moved.inertia_ < plain.inertia_)
    assert not plain.breathing_improved_


def test_breathing_finds_the_missing_centre():
    """Two centres share one blob and one blob has none: no Lloyd step can fix that."""
    X, _ = make_blobs(300, 2, centers=[[0, 0], [10, 0], [20, 0]], cluster_std=0.5,
                      random_state=0)
    init = np.array([[-0.5, 0.0], [0.5, 0.0], [15.0, 0.0]])
    stuck = TransformerKMeans(3, init=init, n_init=1, device="cpu").fit(X)
    moved = TransformerKMeans(3, init=init, n_init=1, breathing_depth=1, device="cpu").fit(X)
    assert np.bincount(stuck.labels_).max() == 200
    assert sorted(np.bincount(moved.labels_).tolist()) == [100, 100, 100]
    assert moved.inertia_ < 0.2 * stuck.inertia_


def test_auto_depth_breathes_in_the_learned_mode_only():
    X, _ = make_blobs(400, 2, centers=8, random_state=0)
    assert TransformerKMeans(8, random_state=0).fit(X).n_breathing_cycles_ == 0
    learned = TransformerKMeans(8, random_state=0, learned_starts=1).fit(X)
    assert learned.n_breathing_cycles_ >= 1
    off = TransformerKMeans(8, random_state=0, learned_starts=1, breathing_depth=0).fit(X)
    assert off.n_breathing_cycles_ == 0


@pytest.mark.parametrize("caller", ["estimator", "batch"])
def test_learned_steps_hand_over_sooner_where_moves_follow(monkeypatch, caller):
    """Before breathing, the learned steps end once they gain less than BREATHING_GAIN in
    PATIENCE steps (Lloyd's steps finish); without moves, at the fit's tol."""
    import skformer._fit.learned as fit_learned
    import skformer.batch._learned as batch_learned
    from skformer import batch_k_means
    from skformer._fit.learned import BREATHING_GAIN

    module = fit_learned if caller == "estimator" else batch_learned
    seen, real = [], module.learned_search

    def spy(*args, **kwargs):
        seen.append(kwargs["rel_tol"])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "learned_search", spy)
    X, _ = make_blobs(300, 2, centers=6, random_state=0)
    for depth in ["auto", 0]:
        if caller == "estimator":
            TransformerKMeans(6, learned_starts=1, breathing_depth=depth, tol=1e-5,
                              random_state=0).fit(X)
        else:
            batch_k_means([X], 6, learned_starts=1, tol=1e-5, random_state=0,
                          breathing_depth=BREATHING_DEPTH if depth == "auto" else 0)
    assert seen == [BREATHING_GAIN, 1e-5]


@pytest.mark.parametrize("container", ["memmap", "sparse", "float32"])
def test_breathing_gives_one_result_in_every_container(tmp_path, container):
    X, _ = make_blobs(700, 3, centers=10, cluster_std=1.2, random_state=3)
    X = np.abs(X)
    # Single-point moves are made on dense rows only (test_hartigan.py checks memmaps).
    est = dict(n_clusters=10, random_state=0, breathing_depth=3, hartigan=False, device="cpu")
    base = X.astype(np.float32) if container == "float32" else X
    want = TransformerKMeans(**est).fit(base)
    if container == "memmap":
        path = tmp_path / "x.npy"
        np.save(path, X)
        data = np.load(path, mmap_mode="r")
        got = TransformerKMeans(**est).fit(data)
    elif container == "sparse":
        got = TransformerKMeans(**est).fit(sp.csr_matrix(X))
    else:
        got = TransformerKMeans(**est).fit(base.copy())
    np.testing.assert_array_equal(got.labels_, want.labels_)
    assert got.n_breathing_cycles_ == want.n_breathing_cycles_
    np.testing.assert_allclose(got.cluster_centers_, want.cluster_centers_, rtol=1e-5)


@pytest.mark.parametrize("params, match", [
    (dict(breathing_depth=-1), "breathing_depth"),
    (dict(breathing_depth="deep"), "breathing_depth"),
    (dict(breathing_depth=2.5), "breathing_depth"),
    (dict(breathing_depth=3, learned_starts=1, finish="none"),
     r"breathing_depth=3 needs finish='lloyd'"),
])
def test_breathing_depth_errors(params, match):
    X, _ = make_blobs(100, 2, centers=3, random_state=0)
    with pytest.raises(ValueError, match=match):
        TransformerKMeans(3, **params).fit(X)


def test_depth_above_k_is_k():
    X, _ = make_blobs(200, 2, centers=3, random_state=0)
    est = TransformerKMeans(3, random_state=0, breathing_depth=50).fit(X)
    assert est.cluster_centers_.shape == (3, 2)


# ---------------------------------------------------------------- many problems at once


def test_batch_breathes_each_problem_as_the_estimator(global_random_seed):
    from skformer import batch_k_means

    rng = np.random.default_rng(global_random_seed)
    X = [make_blobs(int(m), 3, centers=9, cluster_std=1.0, random_state=int(s))[0]
         for m, s in zip(rng.integers(200, 400, size=4), rng.integers(0, 1000, size=4),
                         strict=True)]
    starts = [x[rng.choice(len(x), 9, replace=False)] for x in X]
    result = batch_k_means(X, 9, init=starts, breathing_depth=3)
    moved = 0
    for i, x in enumerate(X):
        est = TransformerKMeans(9, init=starts[i], n_init=1, breathing_depth=3,
                                device="cpu").fit(x)
        np.testing.assert_array_equal(result.labels[i], est.labels_)
        np.testing.assert_allclose(result.cluster_centers[i], est.cluster_centers_,
                                   rtol=1e-9, atol=1e-12)
        assert result.inertia[i] == pytest.approx(est.inertia_, rel=1e-12)
        assert result.n_iter[i] == est.n_iter_
        moved += est.n_breathing_cycles_ > 0
    assert moved == len(X)


@pytest.mark.parametrize("depth", [-1, 1.5, "deep", True])
def test_batch_breathing_depth_errors(depth):
    from skformer import batch_k_means

    with pytest.raises(ValueError, match="breathing_depth must be 'auto' or an int >= 0"):
        batch_k_means(np.zeros((2, 10, 2)), 2, breathing_depth=depth)


# ------------------------------------------- issue 41: the promise where a cluster empties


def test_learned_mode_not_above_kmeans_where_clusters_empty():
    """Repeated rows and random starts leave clusters empty: KMeans moves them, the exact
    Lloyd steps keep them, so a learned run without global moves ended above KMeans on 7
    of these 40 starts (up to 14 %); the global moves move the empty centres."""
    from sklearn.cluster import KMeans

    X = np.repeat(np.random.default_rng(0).normal(size=(30, 2)), 5, axis=0)
    above = {0: 0, "auto": 0}
    for seed in range(40):
        km = KMeans(8, init="random", n_init=1, random_state=seed).fit(X)
        for depth in above:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # fewer distinct clusters, as KMeans warns
                est = TransformerKMeans(8, init="random", n_init=1, random_state=seed,
                                        learned_starts=1, breathing_depth=depth).fit(X)
            above[depth] += est.inertia_ > km.inertia_ * (1 + 1e-9)
    assert above[0] > 0          # the case is one where clusters empty
    assert above["auto"] == 0

