"""Hartigan and Wong's single-point moves: the compiled passes against the NumPy oracle,
then their properties (a fixed point of Lloyd's steps, never above the start), then the
estimators' contract and errors."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs

from skformer import TransformerKMeans, batch_k_means
from skformer import reference as ref
from skformer._fit import kernels
from skformer._fit.engine import choose_backend
from skformer._fit.engine import sparse as sparse_engine
from skformer._fit.engine.compiled import CompiledBackend
from skformer._fit.engine.single import single_moves
from skformer._fit.engine.torch import TorchBackend
from skformer._fit.frame import Frame
from skformer._fit.sources import ArraySource, Block
from skformer._fit.sparse import SparseSource

CPU = torch.device("cpu")
FLOOR = 1e-9

pytestmark = pytest.mark.skipif(kernels.load() is None, reason="numba is not available")


def _lloyd_fixed_point(X, k, seed, w=None):
    """A fixed point of Lloyd's steps from a random start (KMeans, one run)."""
    km = KMeans(k, init="random", n_init=1, random_state=seed, tol=0).fit(X, sample_weight=w)
    return km.cluster_centers_


def _blocks(X, w, rows):
    """``X`` as blocks of ``rows`` rows (the walk of a memmap)."""
    x = torch.from_numpy(X)
    wt = None if w is None else torch.from_numpy(w)
    return lambda: [Block(x[s : s + rows], None if wt is None else wt[s : s + rows])
                    for s in range(0, X.shape[0], rows)]


# --------------------------------------------------------------------------- the oracle


@pytest.mark.parametrize("k", [2, 9, 40])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("rows", [10_000, 97])
def test_single_moves_equal_the_oracle(global_random_seed, k, weighted, rows):
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(600, 3))
    w = rng.uniform(0.5, 2.0, size=600) if weighted else None
    start = _lloyd_fixed_point(X, k, global_random_seed, w)
    want_c, want_labels, want_moves = ref.hartigan(X, start, sample_weight=w, floor=FLOOR)
    got = single_moves(kernels.load(), _blocks(X, w, rows), 600, start, max_passes=100,
                       floor=FLOOR)
    assert got.n_moves == want_moves
    np.testing.assert_array_equal(got.centers, want_c)
    assert want_moves > 0 or k == 2  # the oracle's loop does move rows here


def test_single_moves_on_float32_rows_equal_the_oracle(rng):
    X = rng.normal(size=(500, 2)).astype(np.float32)
    start = _lloyd_fixed_point(X.astype(np.float64), 25, 0)
    want_c, _, want_moves = ref.hartigan(X.astype(np.float64), start, floor=FLOOR)
    got = single_moves(kernels.load(), _blocks(X, None, 128), 500, start, max_passes=100,
                       floor=FLOOR)
    assert got.n_moves == want_moves > 0
    np.testing.assert_array_equal(got.centers, want_c)


def test_max_passes_stops_the_moves(rng):
    X = rng.normal(size=(400, 2))
    start = _lloyd_fixed_point(X, 30, 1)
    one = single_moves(kernels.load(), _blocks(X, None, 400), 400, start, max_passes=1,
                       floor=FLOOR)
    full = single_moves(kernels.load(), _blocks(X, None, 400), 400, start, max_passes=100,
                        floor=FLOOR)
    assert one.n_passes == 1 and full.n_passes > 1
    assert 0 < one.n_moves < full.n_moves


# --------------------------------------------------------------------------- properties


@pytest.mark.parametrize("weighted", [False, True])
def test_the_end_is_a_fixed_point_of_lloyd_below_the_start(global_random_seed, weighted):
    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(size=(800, 2))
    w = rng.uniform(0.5, 2.0, size=800) if weighted else None
    start = _lloyd_fixed_point(X, 50, global_random_seed, w)
    end = single_moves(kernels.load(), _blocks(X, w, 800), 800, start, max_passes=100,
                       floor=FLOOR)
    labels, sq = ref.assign(X, end.centers)
    wt = np.ones(800) if w is None else w
    # Each row is nearest its own mean: the means of the nearest-centre partition are
    # the centres again.
    means = np.stack([np.average(X[labels == j], axis=0, weights=wt[labels == j])
                      for j in range(50)])
    np.testing.assert_allclose(means, end.centers, rtol=1e-12, atol=1e-12)
    before = (wt * ref.assign(X, start)[1]).sum()
    assert (wt * sq).sum() < before * (1 - 1e-6)


def test_a_row_alone_in_its_cluster_stays():
    X = np.array([[0.0], [1.0], [2.0], [50.0]])
    end = single_moves(kernels.load(), _blocks(X, None, 4), 4, np.array([[1.0], [50.0]]),
                       max_passes=10, floor=FLOOR)
    assert end.n_moves == 0
    assert end.centers.ravel().tolist() == [1.0, 50.0]


# ------------------------------------------------------------------- backends, estimator

STUCK = np.array([[0.0], [3.0], [6.0], [8.0], [9.0], [11.0]])  # Lloyd stops at [3, 28/3]


@pytest.mark.parametrize("make", [CompiledBackend, TorchBackend])
def test_backends_offer_the_moves_on_dense_rows(make):
    src = ArraySource(STUCK, None, CPU)
    src.set_frame(Frame(np.zeros(1), 0))
    backend = make(src, 2)
    backend.kernels = kernels.load()
    end = backend.single_moves(np.array([[3.0], [28.0 / 3.0]]), max_passes=10, floor=FLOOR)
    assert end.centers.ravel().tolist() == [1.5, 8.5]


def test_the_estimator_leaves_the_fixed_point_that_kmeans_keeps():
    init = np.array([[3.0], [28.0 / 3.0]])
    km = KMeans(2, init=init, n_init=1).fit(STUCK)
    est = TransformerKMeans(2, init=init, n_init=1, hartigan=True).fit(STUCK)
    plain = TransformerKMeans(2, init=init, n_init=1).fit(STUCK)
    assert km.inertia_ == pytest.approx(22.0 + 2.0 / 3.0)
    assert plain.inertia_ == pytest.approx(km.inertia_) and plain.n_hartigan_moves_ == 0
    assert est.inertia_ == pytest.approx(17.5)
    assert est.cluster_centers_.ravel().tolist() == [1.5, 8.5]
    assert est.n_hartigan_moves_ == 1
    np.testing.assert_array_equal(est.labels_, est.predict(STUCK))


def test_auto_follows_the_global_moves():
    X, _ = make_blobs(300, 2, centers=30, cluster_std=1.5, random_state=0)
    on = TransformerKMeans(30, random_state=0, breathing_depth=3).fit(X)
    off = TransformerKMeans(30, random_state=0, breathing_depth=3, hartigan=False).fit(X)
    fast = TransformerKMeans(30, random_state=0).fit(X)
    assert on.n_hartigan_moves_ > 0 and off.n_hartigan_moves_ == 0
    assert fast.n_hartigan_moves_ == 0  # the fast mode stays KMeans' run
    assert on.inertia_ < off.inertia_
    np.testing.assert_array_equal(on.labels_, on.predict(X))


def test_never_above_the_fit_without_them(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(size=(400, 2))
    est = dict(n_clusters=25, random_state=global_random_seed, breathing_depth=2)
    on = TransformerKMeans(**est).fit(X)
    off = TransformerKMeans(**est, hartigan=False).fit(X)
    assert on.inertia_ <= off.inertia_


def test_a_memmap_gives_the_in_memory_result(tmp_path):
    X, _ = make_blobs(700, 3, centers=30, cluster_std=2.0, random_state=3)
    np.save(tmp_path / "x.npy", X)
    est = dict(n_clusters=30, random_state=0, breathing_depth=2, hartigan=True)
    want = TransformerKMeans(**est).fit(X)
    got = TransformerKMeans(**est).fit(np.load(tmp_path / "x.npy", mmap_mode="r"))
    assert want.n_hartigan_moves_ > 0
    assert got.n_hartigan_moves_ == want.n_hartigan_moves_
    np.testing.assert_array_equal(got.labels_, want.labels_)
    np.testing.assert_array_equal(got.cluster_centers_, want.cluster_centers_)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("values", [None, 50])
def test_sparse_rows_move_as_their_dense_rows(global_random_seed, dtype, weighted, values,
                                              monkeypatch):
    # The sparse backend reads its rows dense a chunk at a time (values=50: chunks of 8
    # rows, several per CSR block): the moves are those of the dense rows, to the bit.
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(500, 6)).astype(dtype)
    X[rng.uniform(size=X.shape) < 0.6] = 0  # sparse, with empty rows
    w = rng.uniform(0.5, 2.0, size=500) if weighted else None
    start = _lloyd_fixed_point(X.astype(np.float64), 12, global_random_seed, w)
    if values is not None:
        monkeypatch.setattr(sparse_engine, "DENSE_VALUES", values)
    backends = []
    for source in (SparseSource(sp.csr_matrix(X), w, CPU), ArraySource(X, w, CPU)):
        source.set_frame(Frame(np.zeros(6, dtype), 0))
        backends.append(choose_backend(source, 12))
    assert isinstance(backends[1], CompiledBackend)  # the dense rows' compiled moves
    sparse, dense = (b.single_moves(start, max_passes=100, floor=FLOOR) for b in backends)
    assert sparse.n_moves > 0
    assert (sparse.n_moves, sparse.n_passes) == (dense.n_moves, dense.n_passes)
    np.testing.assert_array_equal(sparse.centers, dense.centers)


def test_a_sparse_fit_makes_the_moves():
    X, _ = make_blobs(300, 3, centers=20, cluster_std=2.0, random_state=0)
    est = dict(n_clusters=20, random_state=0, breathing_depth=2)
    on = TransformerKMeans(**est).fit(sp.csr_matrix(X))
    off = TransformerKMeans(**est, hartigan=False).fit(sp.csr_matrix(X))
    assert on.n_hartigan_moves_ > 0 and off.n_hartigan_moves_ == 0
    assert on.inertia_ < off.inertia_
    np.testing.assert_array_equal(on.labels_, on.predict(sp.csr_matrix(X)))


def test_dask_arrays_are_not_moved():
    da = pytest.importorskip("dask.array")
    X, _ = make_blobs(300, 3, centers=20, cluster_std=2.0, random_state=0)
    est = dict(n_clusters=20, random_state=0, breathing_depth=2)
    got = TransformerKMeans(**est).fit(da.from_array(X, chunks=100))
    want = TransformerKMeans(**est, hartigan=False).fit(X)
    assert got.n_hartigan_moves_ == 0
    np.testing.assert_allclose(got.cluster_centers_, want.cluster_centers_, rtol=1e-9)


def test_batch_moves_each_problem_as_the_estimator(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = [rng.uniform(size=(int(m), 2)) for m in rng.integers(200, 300, size=3)]
    starts = [x[rng.choice(len(x), 20, replace=False)] for x in X]
    result = batch_k_means(X, 20, init=starts, breathing_depth=0, hartigan=True)
    moved = 0
    for i, x in enumerate(X):
        est = TransformerKMeans(20, init=starts[i], n_init=1, breathing_depth=0,
                                hartigan=True).fit(x)
        np.testing.assert_array_equal(result.labels[i], est.labels_)
        np.testing.assert_allclose(result.cluster_centers[i], est.cluster_centers_,
                                   rtol=1e-9, atol=1e-12)
        assert result.inertia[i] == pytest.approx(est.inertia_, rel=1e-12)
        moved += est.n_hartigan_moves_ > 0
    assert moved == len(X)


# ------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("params, error, match", [
    (dict(hartigan="yes"), ValueError, "hartigan"),
    (dict(hartigan=1.5), ValueError, "hartigan"),
    (dict(hartigan=True, learned_starts=1, finish="none"), ValueError,
     r"hartigan=True needs finish='lloyd'"),
])
def test_hartigan_errors(params, error, match):
    X, _ = make_blobs(100, 2, centers=3, random_state=0)
    with pytest.raises(error, match=match):
        TransformerKMeans(3, **params).fit(X)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_batch_hartigan_errors(value):
    with pytest.raises(ValueError, match="hartigan must be 'auto', True or False"):
        batch_k_means(np.zeros((2, 10, 2)), 2, hartigan=value)
