"""Repeated rows: the distinct rows weighted by their copies against NumPy's unique rows,
the warm runs on them against the runs on every row, then the estimator's use of them."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.cluster import KMeans

from skformer import TransformerKMeans
from skformer._fit import kernels
from skformer._fit import runs as fit_runs
from skformer._fit.engine import choose_backend, run_lloyd
from skformer._fit.frame import Frame
from skformer._fit.repeats import distinct_source
from skformer._fit.sources import ArraySource
from skformer._fit.sparse import SparseSource

CPU = torch.device("cpu")


def _source(X, w=None, kind="array"):
    if kind == "sparse":
        src = SparseSource(sp.csr_matrix(X), w, CPU)
    else:
        src = ArraySource(X, w, CPU, cache=kind == "array")
    src.set_frame(Frame(np.zeros(X.shape[1], X.dtype), 0))
    return src


def _pixels(rng, n=3000, values=6, d=3, dtype=np.float64):
    """Rows of a few values per feature: most rows repeat another."""
    return rng.integers(0, values, size=(n, d)).astype(dtype)


# ----------------------------------------------------------------- against NumPy


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_distinct_rows_are_numpys_unique_rows_with_their_weights(rng, weighted, dtype):
    X = _pixels(rng, dtype=dtype)
    w = rng.uniform(0.5, 2.0, size=len(X)) if weighted else None
    found = distinct_source(_source(X, w))
    rows, inverse = np.unique(X, axis=0, return_inverse=True)
    want_w = np.bincount(inverse.ravel(), weights=w, minlength=len(rows))
    got_rows, got_w = found.gather(None)
    order = np.lexsort(got_rows.T[::-1])
    np.testing.assert_array_equal(got_rows[order], rows)
    np.testing.assert_allclose(got_w[order], want_w, rtol=1e-12)
    assert got_rows.dtype == dtype and found.n_samples == len(rows)


def test_rows_that_repeat_too_little_are_kept():
    X = np.arange(40.0).reshape(20, 2)
    assert distinct_source(_source(np.concatenate([X, X[:1]]))) is None  # 20 of 21 distinct
    assert distinct_source(_source(np.concatenate([X, X[:3]]))) is not None  # 20 of 23


def test_the_probe_spares_the_sort_of_distinct_rows(rng, monkeypatch):
    """Repeats the probe does not see leave the rows whole, without a sort of them all."""
    X = rng.normal(size=(5000, 2))
    X[:2500] = X[0]  # half the rows one row: a probe of 100 sees it
    assert distinct_source(_source(X), probe=100) is not None
    sorted_sizes = []
    real = np.unique

    def spy(a, *args, **kwargs):
        sorted_sizes.append(len(a))
        return real(a, *args, **kwargs)

    monkeypatch.setattr(np, "unique", spy)
    assert distinct_source(_source(rng.normal(size=(5000, 2))), probe=100) is None
    assert sorted_sizes == [100]


@pytest.mark.parametrize("kind", ["memmap", "sparse"])
def test_rows_not_held_as_one_array_are_not_collapsed(rng, kind):
    assert distinct_source(_source(_pixels(rng), kind=kind)) is None


# ------------------------------------------------------------ the warm runs on them


@pytest.mark.parametrize("weighted", [False, True])
def test_a_run_on_the_distinct_rows_is_the_run_on_every_row(rng, weighted):
    X = _pixels(rng, n=4000, values=8)
    w = rng.uniform(0.5, 2.0, size=len(X)) if weighted else None
    every, distinct = _source(X, w), distinct_source(_source(X, w))
    start = torch.from_numpy(X[rng.choice(len(X), 12, replace=False)] + 0.1)
    want = run_lloyd(choose_backend(every, 12), start, 300, 0.0, log=False)
    got = run_lloyd(choose_backend(distinct, 12, warm=True), start, 300, 0.0, log=False)
    np.testing.assert_allclose(got.centers.numpy(), want.centers.numpy(), rtol=1e-12)
    assert got.n_iter == want.n_iter
    c = want.centers.numpy()
    if kernels.load() is not None:
        want_costs = choose_backend(every, 12).costs(c)
        got_costs = choose_backend(distinct, 12).costs(c)
        np.testing.assert_allclose(got_costs.error, want_costs.error, rtol=1e-10)
        np.testing.assert_allclose(got_costs.utility, want_costs.utility, rtol=1e-10)


# ------------------------------------------------------------------- the estimator


def test_the_moves_walk_the_distinct_rows(rng, monkeypatch):
    X = _pixels(rng, n=3000, values=7)
    walked = []
    real = fit_runs.choose_backend

    def spy(source, k, *args, **kwargs):
        walked.append((source.n_samples, kwargs.get("warm", False)))
        return real(source, k, *args, **kwargs)

    monkeypatch.setattr(fit_runs, "choose_backend", spy)
    est = TransformerKMeans(20, random_state=0, learned_starts=1, device="cpu").fit(X)
    n_distinct = len(np.unique(X, axis=0))
    assert (len(X), False) in walked  # KMeans' own run: every row
    assert {n for n, warm in walked if warm} == {n_distinct}
    assert est.n_breathing_cycles_ >= 1
    # the fit reports every row: labels, inertia and sizes as predict and score see them
    assert est.labels_.shape == (len(X),)
    np.testing.assert_array_equal(est.labels_, est.predict(X))
    assert est.inertia_ == pytest.approx(-est.score(X), rel=1e-12)
    plain = KMeans(20, random_state=0, n_init=1).fit(X)
    assert est.inertia_ <= plain.inertia_ * (1 + 1e-12)


def test_the_fast_mode_walks_every_row(rng, monkeypatch):
    X = _pixels(rng, n=2000, values=5)
    want = KMeans(10, random_state=0, n_init=1).fit(X)
    monkeypatch.setattr(fit_runs, "distinct_source",
                        lambda source: pytest.fail("the fast mode collapsed rows"))
    got = TransformerKMeans(10, random_state=0, n_init=1, device="cpu").fit(X)
    np.testing.assert_array_equal(got.labels_, want.labels_)
    np.testing.assert_allclose(got.cluster_centers_, want.cluster_centers_, rtol=1e-12)
    assert got.n_iter_ == want.n_iter_
