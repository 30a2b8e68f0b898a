"""The nearest-fitted-centre arithmetic of ``labels_``, ``predict``, ``inertia_`` and
``score`` (``skformer._fit.assign``).

Oracle first: every row's label is its nearest centre by the literal differences
``x - c`` in float64, and the inertia is the sum of those literal squared distances,
whatever the magnitudes (far outliers, centres near 1e300, data far from the origin),
for dense rows (by either arithmetic: literal differences for small data, certified
products beyond) and sparse rows; then the estimators end to end against KMeans where KMeans'
own arithmetic is exact.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from skformer import ExactLloydTransformer, TransformerKMeans
from skformer._fit import assign, kernels
from skformer._fit.assign import labels_inertia


@pytest.fixture(params=["literal", "literal-numpy", "certified", "certified-numpy"])
def dense_path(request, monkeypatch):
    """Run a dense test through either arithmetic: every answer from the literal
    differences (small data), or certified products (larger data); each compiled, or
    in NumPy."""
    if request.param.endswith("numpy"):
        request.getfixturevalue("without_kernels")
    elif kernels.load() is None:
        pytest.skip("numba is not importable here")
    monkeypatch.setattr(assign, "_LITERAL",
                        -1 if request.param.startswith("certified") else 2**62)
    return request.param


def literal(X, centers):
    """Squared distances (n, k) from the literal float64 differences (inf where a
    square overflows: such a centre is not the nearest)."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    c = np.asarray(centers, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.square(X[:, None, :] - c[None]).sum(-1)


def check_nearest(X, centers, labels, inertia, w=None, rtol=1e-6):
    sq = literal(X, centers)
    chosen = sq[np.arange(len(labels)), labels]
    # The label is a nearest centre (equal distances: any of them).
    np.testing.assert_array_equal(chosen, sq.min(1))
    w = np.ones(len(labels)) if w is None else w
    truth = float((chosen * w).sum())
    assert inertia == pytest.approx(truth, rel=rtol, abs=1e-300)


def outlier_data(at):
    rng = np.random.RandomState(0)
    return np.r_[rng.randn(100, 2), rng.randn(100, 2) + 10, [[at, at]]]


OUTLIERS = [1e6, 1e9, 3e9, 1e10, 1e12]


@pytest.mark.parametrize("at", OUTLIERS)
def test_labels_are_nearest_despite_a_far_centre(at, dense_path):
    X = outlier_data(at)
    centers = np.array([X[:100].mean(0), X[100:200].mean(0), X[200]])
    labels, inertia = labels_inertia(X, centers)
    check_nearest(X, centers, labels, inertia)
    assert np.bincount(labels).tolist() == [100, 100, 1]
    assert inertia == pytest.approx(385.5296948589, rel=1e-9)


@pytest.mark.parametrize("at", [1e100, 1e300, -1e300])
def test_centres_near_1e300_keep_the_small_distances(at, dense_path):
    X = outlier_data(at)
    centers = np.array([X[:100].mean(0), X[100:200].mean(0), X[200]])
    labels, inertia = labels_inertia(X, centers)
    check_nearest(X, centers, labels, inertia)
    assert inertia == pytest.approx(385.5296948589, rel=1e-9)


@pytest.mark.parametrize("scale", [1e-160, 1e-250])  # squares near and below underflow
def test_tiny_distances_keep_their_labels(scale, dense_path):
    X = outlier_data(1e3)
    centers = np.array([X[:100].mean(0), X[100:200].mean(0), X[200]])
    labels, inertia = labels_inertia(X * scale, centers * scale)
    assert np.bincount(labels).tolist() == [100, 100, 1]
    np.testing.assert_array_equal(labels, labels_inertia(X, centers)[0])
    with np.errstate(under="ignore"):
        assert inertia == pytest.approx(385.5296948589 * scale * scale, rel=1e-9, abs=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("offset", [0.0, 1e8, -3e12])
def test_labels_inertia_is_the_literal_oracle(global_random_seed, dtype, offset, dense_path):
    rng = np.random.default_rng(global_random_seed)
    X = (rng.normal(size=(3000, 5)) + offset).astype(dtype)
    centers = X[rng.choice(3000, 7, replace=False)].astype(dtype)
    w = rng.uniform(0, 3, 3000)
    labels, inertia = labels_inertia(X, centers, w)
    assert labels.dtype == np.int32
    check_nearest(X, centers, labels, inertia, w, rtol=1e-9)


def test_sparse_rows_far_from_their_centres():
    rng = np.random.default_rng(0)
    dense = np.where(rng.uniform(size=(300, 20)) < 0.2, rng.normal(size=(300, 20)), 0.0)
    dense[0, 3] = 1e10  # one far outlier row
    X = sp.csr_matrix(dense)
    centers = np.r_[dense[1:3], dense[:1]]
    labels, inertia = labels_inertia(X, centers)
    check_nearest(dense, centers, labels, inertia, rtol=1e-9)


@pytest.mark.parametrize("Estimator", [ExactLloydTransformer, TransformerKMeans])
@pytest.mark.parametrize("at", [1e6, 1e9, 1e10, 1e12, 1e300])
def test_estimators_labels_inertia_and_score_with_an_outlier(Estimator, at):
    X = outlier_data(at)
    with warnings.catch_warnings():
        # From 1e12 on, the fit (as KMeans') cannot tell the two small clusters apart in
        # the mean-centred frame: fewer distinct clusters is expected there.
        warnings.simplefilter("ignore" if at >= 1e12 else "error", ConvergenceWarning)
        est = Estimator(3, random_state=0).fit(X)
    check_nearest(X, est.cluster_centers_, est.labels_, est.inertia_)
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    assert -est.score(X) == pytest.approx(est.inertia_, rel=1e-12)
    if at <= 1e10:  # where KMeans' own arithmetic is exact, its result
        km = KMeans(3, random_state=0).fit(X)
        np.testing.assert_array_equal(est.labels_, km.labels_)
        np.testing.assert_allclose(est.cluster_centers_, km.cluster_centers_, rtol=1e-6)
        assert est.inertia_ == pytest.approx(km.inertia_, rel=1e-6)


def test_compiled_certificates_never_certify_a_tie_and_agree_with_numpy(monkeypatch):
    compiled = kernels.load()
    if compiled is None:
        pytest.skip("numba is not importable here")
    rng = np.random.default_rng(7)
    c = rng.normal(size=(40, 5)) * 3
    c[0], c[1] = 0.0, [2.0, 0, 0, 0, 0]
    c[2:, 0] += 50.0
    x = rng.normal(size=(1000, 5)) * 3
    x[:50, 0] = 1.0  # exactly as near centre 0 as centre 1, in floating point too
    x[:50, 1:] = rng.integers(-2, 3, size=(50, 4)) / 8.0
    labels = np.empty(1000, dtype=np.int64)
    certain, exact = np.empty(1000, dtype=bool), np.empty(1000, dtype=bool)
    c_sq = (c * c).sum(1)
    total = compiled.certified_nearest(x, 1.0, np.zeros(5), np.ascontiguousarray(c.T), c_sq,
                                      np.sqrt(c_sq), np.empty(0), 13 * assign._ROUNDING,
                                      13 * assign._UNDERFLOW, labels, certain, exact)
    sq = literal(x, c)
    assert not certain[:50].any() and certain[50:].mean() > 0.9
    np.testing.assert_array_equal(labels[certain], sq.argmin(1)[certain])
    np.testing.assert_array_equal(labels[:50], np.zeros(50))  # the first of a tie
    assert exact.sum() > 900 and not (exact & ~certain).any()
    assert total == pytest.approx(sq.min(1)[exact].sum(), rel=1e-12)
    monkeypatch.setattr(assign, "_LITERAL", -1)
    got = labels_inertia(x, c)
    kernels.load.cache_clear()
    monkeypatch.setenv("SKFORMER_COMPILED", "0")
    want = labels_inertia(x, c)
    kernels.load.cache_clear()
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[0], sq.argmin(1))
    assert got[1] == pytest.approx(want[1], rel=1e-12)
