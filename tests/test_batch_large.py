"""``batch_k_means``' large problems, each run by the one-problem driver.

Oracle first: a large problem's result equals ``KMeans(init=C, n_init=1,
algorithm="lloyd")`` and the estimators from the same start (weights, float32 too); the
routed runs of the batch's own seeding equal the batched path's (the threshold lowered
through :func:`~skformer.batch._large.large_problems`' parameters). Then properties: a
problem's result does not depend on its neighbours (large and small mixed, a list of
different lengths), and the routing rule itself.
"""

import json

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans, kmeans_plusplus

from skformer import ExactLloydTransformer, TransformerKMeans, batch_k_means
from skformer.batch import _seed
from skformer.batch._inputs import as_problems
from skformer.batch._large import (
    LARGE_ROWS,
    LARGE_WORK,
    fit_large,
    large_problems,
    split_blocks,
)
from skformer.seeding import ProblemStreams

# A large problem of the default rule: the fewest rows, and clusters to make the work.
N = LARGE_ROWS
K = max(16, -(-LARGE_WORK // LARGE_ROWS))


def blobs(rng, n, d, k, spread=1.0):
    centres = rng.normal(size=(k, d)) * 4
    return centres[rng.integers(0, k, n)] + rng.normal(size=(n, d)) * spread


def is_large(X, k, **rule):
    problems = as_problems(X, k, lengths=None, sample_weight=None, device="cpu")
    return large_problems(problems, 0, **rule)


def assert_same_as(result_i, est):
    centres, labels, inertia, n_iter = result_i
    np.testing.assert_array_equal(labels, est.labels_)
    np.testing.assert_allclose(centres, est.cluster_centers_, rtol=1e-6, atol=1e-9)
    assert inertia == pytest.approx(est.inertia_, rel=1e-6)
    assert n_iter == est.n_iter_


def problem(result, i):
    return tuple(v[i] for v in result)


@pytest.mark.parametrize("weighted", [False, True])
def test_large_problem_equals_kmeans_and_the_estimators(weighted):
    rng = np.random.default_rng(0)
    X = np.stack([blobs(rng, N, 2, 12) + 30 * rng.normal(size=2) for _ in range(2)])
    assert is_large(X, K).all()
    w = rng.uniform(0.2, 3.0, size=X.shape[:2]) if weighted else None
    starts = np.stack([kmeans_plusplus(x, K, random_state=i)[0] for i, x in enumerate(X)])
    result = batch_k_means(X, K, init=starts, sample_weight=w, tol=1e-5, device="cpu")
    assert result.labels.dtype == np.int32 and result.cluster_centers.dtype == np.float64
    for i in range(2):
        wi = None if w is None else w[i]
        common = dict(init=starts[i], n_init=1, tol=1e-5)
        for est in (KMeans(K, algorithm="lloyd", **common),
                    ExactLloydTransformer(K, device="cpu", **common),
                    TransformerKMeans(K, device="cpu", **common)):
            assert_same_as(problem(result, i), est.fit(X[i], sample_weight=wi))


def test_large_float32_problem_equals_kmeans():
    rng = np.random.default_rng(1)
    X = blobs(rng, N + 100, 3, 10).astype(np.float32)[None]
    start = kmeans_plusplus(X[0], K, random_state=0)[0]
    result = batch_k_means(X, K, init=start[None], device="cpu")
    assert result.cluster_centers.dtype == np.float32
    km = KMeans(K, init=start, n_init=1, algorithm="lloyd").fit(X[0])
    centres, labels, inertia, n_iter = problem(result, 0)
    np.testing.assert_array_equal(labels, km.labels_)
    np.testing.assert_allclose(centres, km.cluster_centers_, rtol=1e-5, atol=1e-5)
    assert inertia == pytest.approx(km.inertia_, rel=1e-5)
    assert n_iter == km.n_iter_


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_explicit_init_with_a_large_problem_and_fewer_clusters_beside(dtype):
    # Issue 41: a large problem cuts the batch into parts whose largest k is the small
    # problems' own (3 and 2 here, K for the batch): the zero rows of init past a small
    # problem's k were centres (labels beyond k) or raised a tensor size error.
    rng = np.random.default_rng(5)
    sizes = [(60, 3), (N, K), (80, 2), (70, 3)]
    X = [blobs(rng, m, 2, k).astype(dtype) for m, k in sizes]
    ks = [k for _, k in sizes]
    assert is_large(X, ks).tolist() == [False, True, False, False]
    starts = [kmeans_plusplus(x, k, random_state=i)[0]
              for i, (x, k) in enumerate(zip(X, ks, strict=True))]
    init = np.zeros((len(X), K, 2))
    for i, c in enumerate(starts):
        init[i, : len(c)] = c
    rtol = 1e-6 if dtype == np.float64 else 1e-5
    for form in (dict(X=X, init=starts), dict(X=X, init=init)):
        result = batch_k_means(form["X"], ks, init=form["init"], device="cpu")
        for i, x in enumerate(X):
            km = KMeans(ks[i], init=starts[i], n_init=1, algorithm="lloyd").fit(x)
            assert result.labels[i].max() < ks[i]
            np.testing.assert_array_equal(result.labels[i], km.labels_)
            np.testing.assert_allclose(result.cluster_centers[i], km.cluster_centers_,
                                       rtol=rtol, atol=rtol)
            assert result.inertia[i] == pytest.approx(km.inertia_, rel=rtol)
            assert result.n_iter[i] == km.n_iter_


def _routed(X, k, *, init, n_init, random_state, sample_weight=None, tol=1e-4):
    """batch_k_means with every problem run by the one-problem driver (the rule's
    threshold lowered to one row), as the driver calls it."""
    problems = as_problems(X, k, lengths=None, sample_weight=sample_weight, device="cpu")
    small, large = split_blocks(problems.blocks, large_problems(problems, 0, rows=1, work=1))
    assert not small
    streams = ProblemStreams.from_random_state(random_state, problems.n_problems)
    b, d = problems.n_problems, problems.n_features
    centres = torch.full((b, int(problems.ks.max()), d), float("nan"), dtype=torch.float64)
    labels = torch.full((b, int(problems.lengths.max())), -1, dtype=torch.int64)
    inertia, n_iter = torch.empty(b, dtype=torch.float64), torch.empty(b, dtype=torch.int64)
    fit_large(problems, large, explicit=None,
              seed=lambda block, r: _seed(block, init, streams.child(r)), n_init=n_init,
              max_iter=300, tol=tol, centres=centres, labels=labels, inertia=inertia,
              n_iter=n_iter)
    return centres.numpy(), labels.numpy(), inertia.numpy(), n_iter.numpy()


@pytest.mark.parametrize("init, n_init", [("k-means++", 3), ("random", 2)])
def test_routed_runs_equal_the_batched_path(init, n_init):
    # Small problems take the batched path; routed, from the batch's own starts, they
    # give the same result: the same seeding, best run and units.
    rng = np.random.default_rng(2)
    X = [blobs(rng, m, 2, 4) + 10 * rng.normal(size=2) for m in (60, 90, 75, 120)]
    w = [rng.uniform(0.5, 2.0, size=len(x)) for x in X]
    ks = [3, 5, 4, 6]
    assert not is_large(X, ks).any()
    batched = batch_k_means(X, ks, init=init, n_init=n_init, sample_weight=w,
                            random_state=7, device="cpu")
    routed = _routed(X, ks, init=init, n_init=n_init, random_state=7, sample_weight=w)
    for i, k in enumerate(ks):
        np.testing.assert_array_equal(routed[1][i, : len(X[i])], batched.labels[i])
        np.testing.assert_allclose(routed[0][i, :k], batched.cluster_centers[i],
                                   rtol=1e-9, atol=1e-12)
        assert routed[2][i] == pytest.approx(batched.inertia[i], rel=1e-9)
        assert routed[3][i] == batched.n_iter[i]


def test_result_does_not_depend_on_neighbours():
    # Large and small problems in one list of different lengths and k, against each
    # problem alone (its own seed): the same to the bit.
    rng = np.random.default_rng(3)
    sizes = [(50, 3), (N + 7, K), (200, 5), (N, K + 3), (90, 2)]
    X = [blobs(rng, m, 2, 6).astype(np.float32) for m, _ in sizes]
    ks = [k for _, k in sizes]
    large = is_large(X, ks)
    assert large.tolist() == [False, True, False, True, False]
    seeds = np.arange(10, 15)
    together = batch_k_means(X, ks, n_init=2, random_state=seeds, device="cpu")
    for i, x in enumerate(X):
        alone = batch_k_means([x], ks[i], n_init=2, random_state=seeds[i:i + 1],
                              device="cpu")
        assert together.cluster_centers[i].dtype == np.float32
        np.testing.assert_array_equal(together.cluster_centers[i], alone.cluster_centers[0])
        np.testing.assert_array_equal(together.labels[i], alone.labels[0])
        assert together.inertia[i] == alone.inertia[0]
        assert together.n_iter[i] == alone.n_iter[0]
    # The large problems, padded in a 3-D array with lengths, and as tensors.
    padded = np.zeros((2, N + 7, 2), dtype=np.float32)
    padded[0], padded[1, :N] = X[1], X[3]
    for form in (padded, torch.from_numpy(padded)):
        three = batch_k_means(form, [ks[1], ks[3]], lengths=[N + 7, N], n_init=2,
                              random_state=seeds[[1, 3]], device="cpu")
        for j, i in enumerate((1, 3)):
            c = np.asarray(three.cluster_centers[j])[: ks[i]]
            np.testing.assert_array_equal(c, together.cluster_centers[i])
            np.testing.assert_array_equal(np.asarray(three.labels[j])[: len(X[i])],
                                          together.labels[i])
        assert (np.asarray(three.labels[1])[N:] == -1).all()


def test_the_rule():
    X = [np.zeros((m, 1)) for m in (10, 20, 30, 40)]
    assert is_large(X, 2, rows=20, work=1).tolist() == [False, True, True, True]
    assert is_large(X, [2, 2, 1, 3], rows=20, work=60).tolist() == [False, False, False,
                                                                     True]
    problems = as_problems(X, 2, lengths=None, sample_weight=None, device="cpu")
    assert not large_problems(problems, 1, rows=1, work=1).any()  # learned runs stay
    assert large_problems(problems, 0, rows=1, work=1).all()


def test_split_blocks_keeps_order_and_consecutive_parts():
    blocks = [np.arange(0, 5), np.arange(5, 8)]
    large = np.array([0, 1, 1, 0, 0, 1, 0, 1], dtype=bool)
    small, big = split_blocks(blocks, large)
    assert [p.tolist() for p in small] == [[0], [3, 4], [6]]
    assert [p.tolist() for p in big] == [[1, 2], [5], [7]]
    assert split_blocks(blocks, np.zeros(8, dtype=bool)) == (blocks, [])


def test_blocks_with_fewer_clusters_than_the_batch():
    # Each problem a block of its own (over 2**22 values), the first with fewer clusters
    # than the batch's largest: its centres fill their rows only.
    rng = np.random.default_rng(4)
    X = [rng.normal(size=(2100, 2000)).astype(np.float32) for _ in range(2)]
    result = batch_k_means(X, [2, 3], random_state=0, max_iter=2, device="cpu")
    assert [c.shape for c in result.cluster_centers] == [(2, 2000), (3, 2000)]
    assert all(np.isfinite(c).all() for c in result.cluster_centers)


def test_pq_benchmark_runs(tmp_path):
    # ``skformer bench pq`` at a toy size (faiss left out: an optional peer): the batch
    # and the loop start from the same centres and reach the same codebooks.
    from skformer.cli import main

    out = tmp_path / "pq.json"
    assert main(["bench", "pq", "--n", "600", "--dim", "8", "--m", "2", "--k", "8",
                 "--reps", "1", "--no-faiss", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["methods"] == ["batch", "loop", "batch_own_starts"]
    assert rec["batch_over_loop_error"] == pytest.approx(1.0, rel=1e-5)
    assert rec["batch_loop_max_centre_difference"] < 1e-4
    assert "faiss: not measured (--no-faiss)" in out.with_suffix(".log").read_text()
