"""``batch_k_means``' inputs: problems cut into blocks, explicit ``init`` and weights.

A batch runs in blocks of about ``_BLOCK_VALUES`` values (``skformer/batch/_inputs.py``);
here the blocks are made small so that a few tiny problems span several of them, each
block with its own largest ``n_clusters``. Oracle: per problem, KMeans from the same
initial centres. Then the weights, checked as KMeans checks them once cast to X's dtype.
"""

import warnings

import numpy as np
import pytest
from sklearn.cluster import KMeans, kmeans_plusplus

from skformer import TransformerKMeans, batch_k_means
from skformer.batch import _inputs
from skformer.batch._inputs import as_problems

# Problems of different lengths and k (the largest k in the middle of the batch).
LENGTHS = np.array([60, 80, 50, 70, 40, 45])
KS = np.array([3, 10, 2, 4, 3, 3])
D = 3
# Two problems of the longest length per block: in order (a 3-D X) the blocks are
# k = (3, 10), (2, 4), (3, 3); sorted by length (a list) k = (3, 3, 2), (3, 4), (10,).
PAIRS = 2 * int(LENGTHS.max()) * D


def blobs(rng, n, d, k, spread=1.0):
    centres = rng.normal(size=(k, d)) * 4
    return centres[rng.integers(0, k, n)] + rng.normal(size=(n, d)) * spread


def padded(arrays, fill):
    out = np.full((len(arrays), max(len(a) for a in arrays), arrays[0].shape[1]), fill)
    for i, a in enumerate(arrays):
        out[i, : len(a)] = a
    return out


def block_ks(X, ks, lengths=None):
    """Each block's n_clusters, as batch_k_means cuts X."""
    problems = as_problems(X, ks, lengths=lengths, sample_weight=None, device="cpu")
    return [ks[index].tolist() for index in problems.blocks]


@pytest.mark.parametrize("block_values", [1, PAIRS])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("form", ["list", "padded"])
def test_explicit_init_per_problem_k_over_several_blocks(monkeypatch, global_random_seed,
                                                         block_values, dtype, form):
    # Issue 41: the zero rows of init past a problem's k were centres in a block whose
    # problems all had fewer clusters than the batch's largest (labels up to 9 for
    # k = 3), and a block of mixed smaller k raised a tensor size error.
    monkeypatch.setattr(_inputs, "_BLOCK_VALUES", block_values)
    rng = np.random.default_rng(global_random_seed)
    X = [blobs(rng, m, D, k).astype(dtype) + 20 * rng.normal()
         for m, k in zip(LENGTHS, KS, strict=True)]
    starts = [kmeans_plusplus(x, int(k), random_state=i)[0]
              for i, (x, k) in enumerate(zip(X, KS, strict=True))]
    if form == "list":
        args, kwargs = (X, KS), dict(init=starts)
    else:  # the NaN padding of X is never read
        args = (padded(X, np.nan).astype(dtype), KS)
        kwargs = dict(lengths=LENGTHS, init=padded(starts, 0.0))
    blocks = block_ks(*args, lengths=kwargs.get("lengths"))
    assert len(blocks) > 1 and any(max(ks) < KS.max() for ks in blocks)
    if block_values == PAIRS:
        assert any(len(set(ks)) > 1 and max(ks) < KS.max() for ks in blocks)
    result = batch_k_means(*args, **kwargs)
    rtol, rel = (1e-6, 1e-9) if dtype == np.float64 else (1e-5, 1e-5)
    for i, (x, k) in enumerate(zip(X, KS, strict=True)):
        km = KMeans(int(k), init=starts[i], n_init=1, algorithm="lloyd").fit(x)
        labels = np.asarray(result.labels[i])[: len(x)]
        centres = np.asarray(result.cluster_centers[i])[:k]
        assert labels.min() >= 0 and labels.max() < k
        np.testing.assert_array_equal(labels, km.labels_)
        np.testing.assert_allclose(centres, km.cluster_centers_, rtol=rtol, atol=rtol)
        assert result.inertia[i] == pytest.approx(km.inertia_, rel=rel)
        assert result.n_iter[i] == km.n_iter_


def test_learned_runs_over_several_blocks(monkeypatch):
    # The learned mode takes the same blocks' initial centres (one k per call): per
    # problem, TransformerKMeans' learned mode from those centres.
    monkeypatch.setattr(_inputs, "_BLOCK_VALUES", 1)
    rng = np.random.default_rng(0)
    X = np.stack([blobs(rng, 200, 8, 10, spread=2.0) for _ in range(3)])
    starts = np.stack([kmeans_plusplus(x, 10, random_state=i)[0] for i, x in enumerate(X)])
    assert len(block_ks(X, np.full(3, 10))) == 3
    result = batch_k_means(X, 10, init=starts, learned_starts=1)
    for i, x in enumerate(X):
        est = TransformerKMeans(10, init=starts[i], n_init=1, learned_starts=1,
                                device="cpu").fit(x)
        np.testing.assert_array_equal(result.labels[i], est.labels_)
        np.testing.assert_allclose(result.cluster_centers[i], est.cluster_centers_,
                                   rtol=1e-6, atol=1e-9)
        assert result.inertia[i] == pytest.approx(est.inertia_, rel=1e-9)


def test_a_results_centres_are_an_init():
    # The NaN rows of a result's cluster_centers (past each problem's k) are padding:
    # as init, they are never read (they were an error "contain NaN").
    rng = np.random.default_rng(1)
    X = np.stack([blobs(rng, 50, 2, 4) for _ in range(3)])
    ks = [2, 4, 3]
    first = batch_k_means(X, ks, random_state=0, max_iter=2)
    assert np.isnan(first.cluster_centers[0, 2:]).all()
    again = batch_k_means(X, ks, init=first.cluster_centers)
    zeros = batch_k_means(X, ks, init=np.nan_to_num(first.cluster_centers))
    for a, b in zip(again, zeros, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"contain NaN or infinity \(problem 1\)"):
        bad = first.cluster_centers.copy()
        bad[1, 0, 0] = np.nan  # within problem 1's k: an error
        batch_k_means(X, ks, init=bad)


TOO_LARGE = r"sample_weight contains infinity or a value too large for dtype\('float32'\)"


@pytest.mark.parametrize("form", ["array", "list"])
@pytest.mark.parametrize(("value", "match"), [
    (1e39, TOO_LARGE + r" \(problem 1\)"),
    (-1e39, TOO_LARGE + r" \(problem 1\)"),
    (1e-50, r"Sample weights must contain at least one non-zero number \(problem 1\)"),
])
def test_weights_checked_in_float32(form, value, match):
    # Issue 41: a float32 X's weights are cast to float32 (as KMeans casts them): one
    # above float32's maximum became inf there, and the centres and inertia NaN; weights
    # that all underflow to 0 left a problem weightless. Both are KMeans' errors.
    X = np.random.default_rng(2).normal(size=(3, 20, 2)).astype(np.float32)
    w = np.ones((3, 20))
    w[1, 3] = value
    if value == 1e-50:
        w[1] = value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy: overflow in the cast
        with pytest.raises(ValueError, match=match.split(r" \(problem")[0]):
            KMeans(2, n_init=1).fit(X[1], sample_weight=w[1])
        with pytest.raises(ValueError, match=match.split(r" \(problem")[0]):
            TransformerKMeans(2, n_init=1, device="cpu").fit(X[1], sample_weight=w[1])
    with pytest.raises(ValueError, match=match):
        if form == "array":
            batch_k_means(X, 2, sample_weight=w)
        else:
            batch_k_means(list(X), 2, sample_weight=list(w))
    # float64 holds them: the same weights are valid for a float64 X
    result = batch_k_means(X.astype(np.float64), 2, sample_weight=np.abs(w), random_state=0)
    assert np.isfinite(result.inertia).all()
