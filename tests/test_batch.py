"""``skformer.batch_k_means``: many problems in one call.

Oracle first: per problem, the batch's result equals ``KMeans(init=C_i, n_init=1,
algorithm="lloyd")`` on that problem from the same initial centres (labels identical,
centres to 1e-6 relative, inertia, n_iter), with ragged lengths, per-problem k and
sample weights; where a cluster empties, it equals ExactLloydTransformer (the
keep-the-centre rule). Then properties: batch invariance (to the bit), best of n_init,
the forms of input and output, seeding; then the error table.
"""

import warnings

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning

from skformer import ExactLloydTransformer, batch_k_means


def blobs(rng, n, d, k, spread=1.0):
    centres = rng.normal(size=(k, d)) * 4
    return centres[rng.integers(0, k, n)] + rng.normal(size=(n, d)) * spread


def ragged_problems(rng, b=6, n=80, d=3):
    """Problems of different lengths and k, their weights and k-means++ starts."""
    lengths = rng.integers(n // 2, n + 1, size=b)
    ks = rng.integers(2, 7, size=b)
    X = [blobs(rng, m, d, k) + rng.normal() * 50 for m, k in zip(lengths, ks, strict=True)]
    w = [rng.uniform(0.2, 3.0, size=m) for m in lengths]
    starts = [kmeans_plusplus(x, int(k), random_state=int(rng.integers(1000)))[0]
              for x, k in zip(X, ks, strict=True)]
    return X, ks, w, starts


def padded(X, fill=np.nan):
    n = max(len(x) for x in X)
    out = np.full((len(X), n, X[0].shape[1]), fill)
    for i, x in enumerate(X):
        out[i, : len(x)] = x
    return out, np.array([len(x) for x in X])


def assert_kmeans(result_i, X, init, w=None, tol=1e-4, max_iter=300):
    centres, labels, inertia, n_iter = result_i
    km = KMeans(len(init), init=init, n_init=1, algorithm="lloyd", tol=tol,
                max_iter=max_iter).fit(X, sample_weight=w)
    np.testing.assert_array_equal(labels, km.labels_)
    np.testing.assert_allclose(centres, km.cluster_centers_, rtol=1e-6, atol=1e-9)
    assert inertia == pytest.approx(km.inertia_, rel=1e-9)
    assert n_iter == km.n_iter_


def problem(result, i, k=None, n=None):
    c, lab, inertia, n_iter = result
    return c[i][:k], lab[i][:n], inertia[i], n_iter[i]


# ------------------------------------------------------------------------- oracles


@pytest.mark.parametrize("weighted", [False, True])
def test_ragged_list_equals_kmeans_per_problem(global_random_seed, weighted):
    rng = np.random.default_rng(global_random_seed)
    X, ks, w, starts = ragged_problems(rng)
    result = batch_k_means(X, ks, init=starts, sample_weight=w if weighted else None)
    for i in range(len(X)):
        assert_kmeans(problem(result, i), X[i], starts[i], w[i] if weighted else None)


@pytest.mark.parametrize("weighted", [False, True])
def test_padded_array_with_lengths_equals_kmeans_per_problem(global_random_seed, weighted):
    rng = np.random.default_rng(global_random_seed)
    X, ks, w, starts = ragged_problems(rng)
    Xp, lengths = padded(X)  # the padding is NaN: never read
    init = padded(starts, fill=0.0)[0]
    wp = padded([wi[:, None] for wi in w], fill=np.inf)[0][..., 0] if weighted else None
    result = batch_k_means(Xp, ks, lengths=lengths, init=init, sample_weight=wp)
    assert np.isnan(result.cluster_centers[ks < ks.max()][:, -1]).all()  # padded centres
    for i, m in enumerate(lengths):
        assert (result.labels[i, m:] == -1).all()
        assert_kmeans(problem(result, i, ks[i], m), X[i], starts[i],
                      w[i] if weighted else None)


def test_tolerance_and_max_iter_per_problem(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X, ks, _, starts = ragged_problems(rng, d=5)
    for tol, max_iter in ((1e-2, 300), (0.0, 300), (1e-4, 2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # KMeans' ConvergenceWarning at max_iter=2
            result = batch_k_means(X, ks, init=starts, tol=tol, max_iter=max_iter)
            for i in range(len(X)):
                assert_kmeans(problem(result, i), X[i], starts[i], tol=tol,
                              max_iter=max_iter)


def test_float32_stays_float32_and_equals_kmeans(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = np.stack([blobs(rng, 200, 4, 5) for _ in range(5)]).astype(np.float32)
    starts = np.stack([kmeans_plusplus(x, 5, random_state=0)[0] for x in X])
    centres, labels, inertia, n_iter = batch_k_means(X, 5, init=starts)
    assert centres.dtype == np.float32 and labels.dtype == np.int32
    for i in range(5):
        km = KMeans(5, init=starts[i], n_init=1).fit(X[i])
        np.testing.assert_array_equal(labels[i], km.labels_)
        np.testing.assert_allclose(centres[i], km.cluster_centers_, rtol=1e-5, atol=1e-5)
        assert inertia[i] == pytest.approx(km.inertia_, rel=1e-4)
        assert n_iter[i] == km.n_iter_


def test_empty_clusters_keep_their_centre():
    """A start far from every point: KMeans would move it; the project keeps it, as
    ExactLloydTransformer does."""
    rng = np.random.default_rng(0)
    X = [blobs(rng, 60, 2, 3), blobs(rng, 40, 2, 2)]
    starts = [np.r_[X[0][:2], [[1e3, 1e3]]], np.r_[X[1][:1], [[-1e3, 0.0]]]]
    with pytest.warns(ConvergenceWarning, match="in 2 of 2 problems: problem 0 "
                                                r"\(2 < 3\), problem 1 \(1 < 2\)"):
        result = batch_k_means(X, [3, 2], init=starts)  # as KMeans warns
    for i in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fewer distinct clusters than n_clusters
            ref = ExactLloydTransformer(len(starts[i]), init=starts[i], n_init=1).fit(X[i])
        c, lab, inertia, n_iter = problem(result, i)
        np.testing.assert_array_equal(lab, ref.labels_)
        np.testing.assert_allclose(c, ref.cluster_centers_, rtol=1e-12)
        np.testing.assert_array_equal(c[-1], starts[i][-1])
        assert inertia == pytest.approx(ref.inertia_, rel=1e-12) and n_iter == ref.n_iter_


@pytest.mark.parametrize(("ragged", "d", "k"), [(False, 8, 10), (True, 8, 10),
                                                (True, 80, 20)])
def test_learned_runs_equal_transformer_kmeans_per_problem(global_random_seed, ragged, d, k):
    """learned_starts=1: per problem, TransformerKMeans' learned mode from the same
    centres (the learned steps run on the batch, padded rows masked out). d = 80: the
    generic model, stepped in the top 64 principal directions of each problem."""
    from skformer import TransformerKMeans

    rng = np.random.default_rng(global_random_seed)
    X = [blobs(rng, int(m), d, k, spread=2.0)
         for m in (rng.integers(150, 300, size=5) if ragged else [250] * 5)]
    starts = [kmeans_plusplus(x, k, random_state=i)[0] for i, x in enumerate(X)]
    result = batch_k_means(X if ragged else np.stack(X), k, init=starts if ragged
                           else np.stack(starts), learned_starts=1)
    lloyd = batch_k_means(X if ragged else np.stack(X), k, init=starts if ragged
                          else np.stack(starts))
    kept = 0
    for i, x in enumerate(X):
        est = TransformerKMeans(k, init=starts[i], n_init=1, learned_starts=1,
                                device="cpu").fit(x)
        c, lab, inertia, n_iter = problem(result, i)
        np.testing.assert_array_equal(lab, est.labels_)
        np.testing.assert_allclose(c, est.cluster_centers_, rtol=1e-6, atol=1e-9)
        assert inertia == pytest.approx(est.inertia_, rel=1e-9)
        # The learned steps run in the batch's frame and in the fit's, whose roundings
        # differ: a run whose last shift lies on its tolerance to rounding may take one
        # step more in one of them, with the same centres.
        assert abs(int(n_iter) - est.n_iter_) <= 1
        assert inertia <= lloyd.inertia[i] * (1 + 1e-12)
        kept += est.selected_run_ == "learned"
    if d == 8:
        assert kept >= 1  # the learned run was better somewhere


def test_learned_runs_need_one_k_and_a_model():
    X = np.random.default_rng(0).normal(size=(3, 40, 2))
    with pytest.raises(ValueError, match="needs one n_clusters for every problem"):
        batch_k_means(X, [2, 3, 3], learned_starts=1)
    with pytest.warns(UserWarning, match="learned steps skipped, n_clusters=1"):
        result = batch_k_means(X, 1, learned_starts=1)
    np.testing.assert_allclose(result.cluster_centers[:, 0], X.mean(1))


# ---------------------------------------------------------------------- properties


def _equal(a, b):
    for x, y in zip(a, b, strict=True):
        if isinstance(x, list):
            for u, v in zip(x, y, strict=True):
                np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_a_problem_does_not_depend_on_its_batch(global_random_seed, init):
    """Per-problem seeds: problem i's result, to the bit, alone or among others of any
    size, in any order, padded or not."""
    rng = np.random.default_rng(global_random_seed)
    X, ks, w, _ = ragged_problems(rng, b=5)
    seeds = rng.integers(0, 2**31, size=5)
    whole = batch_k_means(X, ks, sample_weight=w, init=init, random_state=seeds)
    order = [3, 0, 4]
    part = batch_k_means([X[i] for i in order], ks[order], sample_weight=[w[i] for i in order],
                         init=init, random_state=seeds[order])
    for j, i in enumerate(order):
        _equal(problem(part, j), problem(whole, i))
    alone = batch_k_means(X[2][None], ks[2], sample_weight=w[2][None], init=init,
                          random_state=seeds[2:3])
    _equal(problem(alone, 0), problem(whole, 2))
    Xp, lengths = padded(X)
    wp = padded([wi[:, None] for wi in w], fill=0.0)[0][..., 0]
    arr = batch_k_means(Xp, ks, lengths=lengths, sample_weight=wp, init=init,
                        random_state=seeds)
    for i, m in enumerate(lengths):
        _equal(problem(arr, i, ks[i], m), problem(whole, i))


def test_one_root_seed_streams_by_index(global_random_seed):
    """With one root seed, problem i's stream is the i-th: replacing the other problems
    changes nothing of it."""
    rng = np.random.default_rng(global_random_seed)
    X = np.stack([blobs(rng, 100, 3, 4) for _ in range(4)])
    a = batch_k_means(X, 4, random_state=7)
    X2 = X.copy()
    X2[[0, 2]] = rng.normal(size=(2, 100, 3))
    b = batch_k_means(X2, 4, random_state=7)
    for i in (1, 3):
        _equal(problem(a, i), problem(b, i))


def test_best_of_n_init_per_problem(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = np.stack([blobs(rng, 150, 2, 6, spread=2.0) for _ in range(20)])
    one = batch_k_means(X, 6, random_state=3)
    five = batch_k_means(X, 6, n_init=5, random_state=3)
    assert (five.inertia <= one.inertia).all() and (five.inertia < one.inertia).any()
    # each problem's result is one of its runs, scored by its own inertia
    for i in range(20):
        sq = np.square(X[i] - five.cluster_centers[i][five.labels[i]]).sum()
        assert five.inertia[i] == pytest.approx(sq, rel=1e-10)


def test_kmeans_plusplus_start_is_as_good_as_sklearns(global_random_seed):
    """The batched k-means++ follows scikit-learn's rule: over many problems, its mean
    final inertia is within a few percent of a KMeans loop's (different random draws)."""
    rng = np.random.default_rng(global_random_seed)
    X = np.stack([blobs(rng, 120, 2, 8, spread=1.5) for _ in range(60)])
    ours = batch_k_means(X, 8, random_state=0).inertia.mean()
    loop = np.mean([KMeans(8, n_init=1, random_state=i).fit(x).inertia_
                    for i, x in enumerate(X)])
    assert ours / loop == pytest.approx(1.0, abs=0.05)


def test_torch_in_torch_out():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(8, 50, 3, generator=g, dtype=torch.float32)
    centres, labels, inertia, n_iter = batch_k_means(X, 3, random_state=0)
    assert isinstance(centres, torch.Tensor) and centres.dtype == torch.float32
    assert labels.dtype == torch.int64 and inertia.dtype == torch.float64
    assert centres.shape == (8, 3, 3) and labels.shape == (8, 50) and n_iter.shape == (8,)
    listed = batch_k_means(list(X), 3, random_state=0)
    assert isinstance(listed.cluster_centers[0], torch.Tensor)
    torch.testing.assert_close(torch.stack(listed.cluster_centers), centres)
    assert torch.equal(torch.stack(listed.labels), labels)


def test_integer_input_becomes_float64():
    X = np.random.default_rng(0).integers(0, 10, size=(3, 20, 2))
    assert batch_k_means(X, 2, random_state=0).cluster_centers.dtype == np.float64


# --------------------------------------------------------------------------- errors


X3 = np.random.default_rng(0).normal(size=(3, 10, 2))

ERRORS = [
    (dict(X=X3, n_clusters=11), r"n_samples=10 should be >= n_clusters=11 \(problem 0\)"),
    (dict(X=X3, n_clusters=[2, 12, 2]), r"n_samples=10 should be >= n_clusters=12 \(problem 1\)"),
    (dict(X=[X3[0], X3[1][:3]], n_clusters=4),
     r"n_samples=3 should be >= n_clusters=4 \(problem 1\)"),
    (dict(X=np.where(np.arange(3)[:, None, None] == 2, np.nan, X3), n_clusters=2),
     r"Input X contains NaN or infinity \(problem 2\)"),
    (dict(X=[X3[0], np.r_[X3[1], [[np.inf, 0]]]], n_clusters=2),
     r"Input X contains NaN or infinity \(problem 1\)"),
    (dict(X=X3, n_clusters=2, lengths=[10, 11, 3]),
     r"lengths must be within \[0, 10\] \(the rows of X\); problem 1 has 11"),
    (dict(X=X3, n_clusters=2, lengths=[10, 3]), r"lengths must hold 3 ints"),
    (dict(X=[X3[0]], n_clusters=2, lengths=[10]), "lengths is for a 3-D X"),
    (dict(X=X3, n_clusters=2, lengths=[10, 0, 3]), r"Found problem 1 with 0 sample\(s\)"),
    (dict(X=X3[0], n_clusters=2), "X must be a 3-D array"),
    (dict(X=[X3[0], X3[1][:, :1]], n_clusters=2), "Every problem must have the same number "
                                                  r"of features: X\[0\] has 2, X\[1\] has 1"),
    (dict(X=X3, n_clusters=0), r"n_clusters must be >= 1; problem 0 has 0"),
    (dict(X=X3, n_clusters=[2, 2]), r"n_clusters must be an int or 3 ints"),
    (dict(X=X3, n_clusters=2, init="kmeans"), "init must be 'k-means\\+\\+', 'random'"),
    (dict(X=X3, n_clusters=2, init=np.zeros((3, 3, 2))), r"initial centers \(3, 3, 2\)"),
    (dict(X=X3, n_clusters=2, init=[np.zeros((2, 2))] * 2), "init has 2 arrays for 3"),
    (dict(X=X3, n_clusters=2, n_init=0), "n_init must be an int >= 1"),
    (dict(X=X3, n_clusters=2, learned_starts=-1), "learned_starts must be an int >= 0"),
    (dict(X=X3, n_clusters=2, tol=-1.0), "tol must be a float >= 0"),
    (dict(X=X3, n_clusters=2, sample_weight=-np.ones((3, 10))),
     r"Negative values in data passed to `sample_weight` \(problem 0\)"),
    (dict(X=X3, n_clusters=2, sample_weight=np.where(np.arange(3)[:, None] == 1, 0.0,
                                                     np.ones((3, 10)))),
     r"at least one non-zero number \(problem 1\)"),
    (dict(X=X3, n_clusters=2, sample_weight=np.ones((3, 9))), r"sample_weight must have shape"),
    # a list of weights for a 3-D X: each checked against its problem's length, never
    # padded (a short one made real points weigh 0) nor cut
    (dict(X=X3, n_clusters=2, lengths=[8, 10, 10], sample_weight=[np.ones(5)] + [np.ones(10)] * 2),
     r"sample_weight\[0\] has 5 values, expected 8 \(lengths\[0\]\) or 10 \(the rows of X\) "
     r"\(problem 0\)"),
    (dict(X=X3, n_clusters=2, lengths=[8, 10, 10], sample_weight=[np.ones(8), np.ones(12),
                                                                 np.ones(10)]),
     r"sample_weight\[1\] has 12 values, expected 10 \(problem 1\)"),
    (dict(X=X3, n_clusters=2, sample_weight=[np.ones(10)] * 2),
     r"sample_weight must hold 3 arrays \(one per problem\), got 2"),
    (dict(X=X3, n_clusters=2, sample_weight=[np.ones((10, 1))] * 3),
     r"sample_weight\[0\] must be 1-D, got shape \(10, 1\) \(problem 0\)"),
    (dict(X=X3, n_clusters=2, random_state=[1, 2]), "an array of 3 ints"),
    (dict(X=X3, n_clusters=2, device="cuda:7" if not torch.cuda.is_available() else "bad"),
     "device="),
]


@pytest.mark.parametrize(("kwargs", "match"), ERRORS)
def test_errors(kwargs, match):
    kwargs = dict(kwargs)
    X = kwargs.pop("X")
    with pytest.raises(ValueError, match=match):
        batch_k_means(X, **kwargs)


def test_list_of_weights_for_a_3d_x_with_lengths():
    """One weight per point (``lengths[i]``) or per row of X (padding included, as a
    (b, n) array): the same result as the (b, n) array."""
    rng = np.random.default_rng(0)
    lengths = np.array([6, 10, 8])
    w = [rng.uniform(0.5, 2.0, size=m) for m in lengths]
    padded_w = np.zeros((3, 10))
    for i, m in enumerate(lengths):
        padded_w[i, :m] = w[i]
    ref = batch_k_means(X3, 2, lengths=lengths, sample_weight=padded_w, random_state=0)
    for weights in (w, list(padded_w), [w[0], padded_w[1], padded_w[2]]):
        got = batch_k_means(X3, 2, lengths=lengths, sample_weight=weights, random_state=0)
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_array_equal(a, b)


def test_explicit_init_with_n_init_warns_as_kmeans():
    init = X3[:, :2].copy()
    with pytest.warns(RuntimeWarning, match="performing only one init in batch_k_means"):
        batch_k_means(X3, 2, init=init, n_init=3)
