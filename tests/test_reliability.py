"""Property tests (hypothesis) of both estimators on arbitrary finite data.

Generated problems (:func:`problems`): float64 and float32 arrays of ``n`` in 1..60 rows
and ``d`` in 1..6 columns, made of ``m <= n`` distinct rows (so duplicates are common),
some columns constant, all multiplied by ``10**e`` with ``e`` in [-30, 30] (four ranges
of ``e`` drawn equally often), and sometimes a common offset of up to 1e9 times the
range of the values (``|X| < 3e33``, finite in float32). The rows are drawn
from one of two element sets:

* ``MODERATE``: 0 or a float of magnitude in [1e-3, 1e3], so a nonzero spread of the
  scaled data is far above 1e-154 and its square a normal float64;
* ``ARBITRARY``: any finite float in [-1e3, 1e3], subnormals included, so the spread
  may be as small as ``5e-324`` and its square underflow to zero.

``n_clusters`` is drawn from {1, 2, 3, 4, 5, 6, 8} with ``n_clusters <= n``: every such
k has a shipped model of width >= 6 (TransformerKMeans pads d up to it), so nothing is
pretrained (``pretrain=False`` makes that an error). ``init`` is ``n_clusters``
distinct rows of X, so the initial centres and their inertia are known.

Three properties, each on ``ExactLloydTransformer`` and on ``TransformerKMeans`` with
``finish="lloyd"`` and ``finish="none"``:

* :func:`check_properties`: no exception (the ConvergenceWarning for duplicate points is
  filtered), finite ``cluster_centers_`` of X's dtype, ``labels_`` of dtype int32 in
  ``[0, k)`` equal to ``predict(X)``, a finite ``inertia_ >= 0``;
* :func:`check_not_worse`: the k-means objective of ``cluster_centers_`` is at most that
  of the initial centres (up to the rounding slack of :func:`_slack`);
* :func:`check_nearest`: ``labels_`` name a nearest centre and ``inertia_`` is the
  objective of the centres.

Each property is tested on the whole domain; the explicit ``@example``s are the
reproducers of the bugs this suite found (fixed since), and run first. Tests on a
narrower domain (moderate elements, float64) were the passing part while those bugs
were open; they stay, with more cases.
``docs/reliability.rst`` reports what was generated and found; rerun with
``pytest tests/test_reliability.py --hypothesis-show-statistics``.
"""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.exceptions import ConvergenceWarning

from skformer import ExactLloydTransformer, TransformerKMeans

K_SET = (1, 2, 3, 4, 5, 6, 8)  # shipped for every width: no pretraining (k=7 would train)
MAX_N, MAX_D = 60, 6
DTYPES = (np.float64, np.float32)
E_BUCKETS = ((-30, -20), (-19, -1), (0, 19), (20, 30))  # X is scaled by 10**e

SETTINGS = dict(
    deadline=None,
    derandomize=True,  # the same examples on every run: CI is deterministic
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

MODERATE = st.one_of(st.just(0.0), st.floats(1e-3, 1e3), st.floats(-1e3, -1e-3))
ARBITRARY = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)

@pytest.fixture(autouse=True, scope="module")
def _empty_cache(tmp_path_factory):
    """An empty user cache: the models used are the shipped ones, whatever is cached."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKFORMER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


@st.composite
def problems(draw, elements=ARBITRARY, dtypes=DTYPES):
    """``(X, k, init)``: X finite, ``1 <= k <= n``, ``init`` k distinct rows of X."""
    dtype = draw(st.sampled_from(dtypes))
    lo, hi = draw(st.sampled_from(E_BUCKETS))  # each range of magnitudes equally often
    e = draw(st.integers(lo, hi))
    k = draw(st.sampled_from(K_SET))
    n = draw(st.integers(k, MAX_N))
    d = draw(st.integers(1, MAX_D))
    m = draw(st.integers(1, n)) if draw(st.booleans()) else n  # distinct rows
    base = draw(arrays(np.float64, (m, d), elements=elements, fill=st.nothing()))
    rows = draw(st.permutations(np.resize(np.arange(m), n)))  # each row at least once
    X = base[np.asarray(rows)]
    if draw(st.booleans()):  # some constant columns
        constant = draw(arrays(np.bool_, d))
        X[:, constant] = base[0, constant]
    X = X * 10.0**e
    if draw(st.booleans()):  # a common offset, up to 1e9 times the data's range, |X| < 3e33
        f = draw(st.integers(0, 9))
        X = X + draw(st.floats(-1, 1)) * 10.0 ** min(e + 3 + f, 33)
        event(f"offset up to 10**{f} times the range")
    X = X.astype(dtype)
    init = X[draw(st.permutations(range(n)))[:k]].copy()
    event(f"dtype={np.dtype(dtype).name}")
    event(f"10**e, e in [{lo}, {hi}]")
    event(f"k={k}")
    event("n in " + ("[1, 10]" if n <= 10 else "[11, 30]" if n <= 30 else "[31, 60]"))
    event("duplicate rows" if np.unique(X, axis=0).shape[0] < n else "all rows distinct")
    if n > 1 and (np.ptp(X, axis=0) == 0).any():
        event("a constant column")
    return X, k, init


def _case(rows, dtype, init_rows):
    """An explicit example: X from ``rows``, init = the rows of X at ``init_rows``."""
    X = np.array(rows, dtype=dtype)
    return X, len(init_rows), X[list(init_rows)].copy()


def _sq_dist(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """(n, k) squared distances in float64, the differences summed literally."""
    X, C = X.astype(np.float64), C.astype(np.float64)
    return np.square(X[:, None, :] - C[None, :, :]).sum(-1)


def _slack(X: np.ndarray, eps: float | None = None) -> float:
    """Absolute slack on inertia comparisons: the rounding that no implementation avoids.

    * The fit works in precision ``eps`` (X's dtype; float32 for the learned steps) on
      centred data of radius R, with distances ``|c|^2 - 2 x.c``: their error is a few
      ulps of R^2, so a point may go to a centre whose float64 distance exceeds the
      nearest by that much (``16 (d + 2) eps R^2`` per point is a generous bound).
    * Centres are stored in X's dtype: each coordinate may be off by an ulp of the
      largest |X| (``(4 eps max|X|)^2`` per point and feature).
    * The float64 objective itself underflows below the float64 subnormal range.

    Nothing here tolerates squared distances lost to the *fit's* underflow or overflow
    (float32 data beyond ~1e19 or below ~1e-19), nor the cancellation of ``|c|^2 - 2 x.c``
    on data far from the origin: a fit can scale and centre the data first.
    """
    X64 = X.astype(np.float64)
    eps = float(np.finfo(X.dtype).eps) if eps is None else eps
    n, d = X.shape
    r2 = float(np.square(X64 - X64.mean(0)).sum(1).max())
    big = float(np.abs(X64).max())
    tiny = float(np.finfo(np.float64).smallest_subnormal)
    return n * (16 * (d + 2) * eps * r2 + d * (4 * eps * big) ** 2 + 4 * (d + 2) * tiny)


def _objective(X: np.ndarray, C: np.ndarray) -> float:
    """The k-means objective of centres C on X, in float64, each point at its nearest."""
    return float(_sq_dist(X, C).min(1).sum())


def _fit(est, X: np.ndarray):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # fewer distinct points than k
        return est.fit(X)


def check_properties(est, X: np.ndarray, k: int) -> None:
    """Finite centres, int32 labels in [0, k) equal to predict(X), finite inertia >= 0."""
    centers = est.cluster_centers_
    assert centers.shape == (k, X.shape[1]) and centers.dtype == X.dtype
    assert np.isfinite(centers).all(), "non-finite cluster centres"
    labels = est.labels_
    assert labels.dtype == np.int32 and labels.shape == (X.shape[0],)
    assert labels.min() >= 0 and labels.max() < k
    np.testing.assert_array_equal(labels, est.predict(X))
    inertia = est.inertia_
    assert isinstance(inertia, float) and np.isfinite(inertia) and inertia >= 0


def check_nearest(est, X: np.ndarray) -> None:
    """labels_ name a nearest centre and inertia_ is the objective of the centres."""
    dist = _sq_dist(X, est.cluster_centers_)
    best = dist.min(1)
    slack = _slack(X)
    chosen = dist[np.arange(X.shape[0]), est.labels_]
    assert np.all(chosen <= best * (1 + 1e-12) + slack / X.shape[0]), "not a nearest centre"
    assert est.inertia_ == pytest.approx(best.sum(), rel=1e-9, abs=slack)


def check_not_worse(est, X: np.ndarray, init: np.ndarray, eps: float | None = None) -> None:
    """The objective of the fitted centres is at most that of the initial centres.

    Relative slack 1e-6: two sums of n float64 terms; absolute slack: :func:`_slack`.
    The objective is recomputed from ``cluster_centers_`` (that ``inertia_`` equals it
    is :func:`check_nearest`'s business), so a wrong label does not count twice.
    """
    fitted, initial = _objective(X, est.cluster_centers_), _objective(X, init)
    assert fitted <= initial * (1 + 1e-6) + _slack(X, eps), (fitted, initial)


def exact(k, init):
    return ExactLloydTransformer(n_clusters=k, init=init, device="cpu")


def learned(k, init, finish):
    return TransformerKMeans(n_clusters=k, init=init, device="cpu", finish=finish,
                             learned_starts=1, pretrain=False)


def make(kind, k, init):
    return exact(k, init) if kind == "exact" else learned(k, init, kind)


# The learned steps run in float32 (documented), whatever X's dtype.
LEARNED_EPS = float(np.finfo(np.float32).eps)


# ------------------------------------- regression cases: bugs this suite found, fixed

# BUG 1 (fixed: the fit scales the centred data by a power of two): float32 fits
# computed squared distances in float32 without scaling the data:
# beyond |x| ~ 1.8e19 they overflow, below ~1e-19 they underflow (ties), so a Lloyd
# step sends points to the wrong centre and ends worse than its start.
FLOAT32_OVERFLOW = _case([[1e18], [4.2e19], [0.0]], np.float32, [0, 1, 2])
FLOAT32_UNDERFLOW = _case([[0.0], [1e-30]], np.float32, [0, 1])
# BUG 2 (fixed by the same scaling): TransformerKMeans divided by scale**2, which
# underflowed to 0.0 when the data's
# spread is below ~1e-154: ZeroDivisionError.
TINY_SPREAD = _case([[0.0], [1e-200], [3e-200]], np.float64, [0, 1])
# BUG 5 (fixed: labels_inertia translates both sides by the centres' mean): labels_ /
# inertia_ / predict used |c|^2 - 2 x.c on the *uncentred* data: far
# from the origin the cancellation picks a centre that is not the nearest (a point
# equal to a centre gets another label, inertia_ = 1.0 where the optimum is 0).
FAR_FROM_ORIGIN = _case([[1e8], [1e8 + 1]], np.float64, [0, 1])
# Regression guards (BUGS 3 and 4, found on c26117a, fixed by 3bd49b0, whose learned
# steps keep the centres of least objective among the start and the steps): data of
# zero spread were stepped with the scale 1.0 in the data's units (the centres of
# [[1e-30]] * 5 came out at 0.0045 and 0.013), and learned steps started at the
# optimum blurred the centres together (inertia 5581 instead of 0).
CONSTANT = _case([[1e-30]] * 5, np.float64, [0, 1])
OPTIMAL_START = _case([[0.0], [0.0], [1e3], [1e3], [2e3], [2e3]], np.float64, [0, 2, 4])


# -------------------------------------------------------------- ExactLloydTransformer


@settings(max_examples=1000, **SETTINGS)
@given(problems())
def test_exact_properties(problem):
    X, k, init = problem
    check_properties(_fit(exact(k, init), X), X, k)


@settings(max_examples=600, **SETTINGS)
@given(problems(dtypes=(np.float64,)))
def test_exact_float64_no_worse_than_its_start(problem):
    X, k, init = problem
    check_not_worse(_fit(exact(k, init), X), X, init)


@settings(max_examples=300, **SETTINGS)
@given(problems())
@example(FLOAT32_OVERFLOW)
@example(FLOAT32_UNDERFLOW)
def test_exact_no_worse_than_its_start(problem):
    X, k, init = problem
    check_not_worse(_fit(exact(k, init), X), X, init)


# ----------------------------------------------------------------- TransformerKMeans

FINISHES = ["lloyd", "none"]


@pytest.mark.parametrize("finish", FINISHES)
@settings(max_examples=300, **SETTINGS)
@given(problem=problems(elements=MODERATE))
def test_learned_properties_moderate_elements(finish, problem):
    X, k, init = problem
    check_properties(_fit(learned(k, init, finish), X), X, k)


@pytest.mark.parametrize("finish", FINISHES)
@settings(max_examples=150, **SETTINGS)
@given(problem=problems())
@example(problem=TINY_SPREAD)
def test_learned_properties(finish, problem):
    X, k, init = problem
    check_properties(_fit(learned(k, init, finish), X), X, k)


@settings(max_examples=300, **SETTINGS)
@given(problems(elements=MODERATE, dtypes=(np.float64,)))
@example(CONSTANT)
@example(OPTIMAL_START)
def test_learned_lloyd_float64_no_worse_than_its_start_moderate_elements(problem):
    X, k, init = problem
    est = _fit(learned(k, init, "lloyd"), X)
    check_not_worse(est, X, init, LEARNED_EPS)


@settings(max_examples=300, **SETTINGS)
@given(problems(elements=MODERATE))
@example(CONSTANT)
@example(OPTIMAL_START)
def test_learned_none_no_worse_than_its_start_moderate_elements(problem):
    X, k, init = problem
    est = _fit(learned(k, init, "none"), X)
    check_not_worse(est, X, init, LEARNED_EPS)


@settings(max_examples=150, **SETTINGS)
@given(problems())
@example(FLOAT32_OVERFLOW)
@example(FLOAT32_UNDERFLOW)
def test_learned_lloyd_no_worse_than_its_start(problem):
    X, k, init = problem
    est = _fit(learned(k, init, "lloyd"), X)
    check_not_worse(est, X, init, LEARNED_EPS)


@settings(max_examples=150, **SETTINGS)
@given(problems())
@example(TINY_SPREAD)
def test_learned_none_no_worse_than_its_start(problem):
    X, k, init = problem
    est = _fit(learned(k, init, "none"), X)
    check_not_worse(est, X, init, LEARNED_EPS)


# ------------------------------------------------------------------------ both kinds


@pytest.mark.parametrize("kind", ["exact", "lloyd", "none"])
@settings(max_examples=150, **SETTINGS)
@given(problem=problems(elements=MODERATE))
@example(problem=FAR_FROM_ORIGIN)
def test_labels_are_nearest_and_inertia_is_their_objective(kind, problem):
    X, k, init = problem
    check_nearest(_fit(make(kind, k, init), X), X)


@settings(max_examples=100, **SETTINGS)
@given(
    st.sampled_from(["exact", "lloyd", "none"]),
    st.integers(1, 7),
    st.integers(1, MAX_D),
    st.sampled_from(DTYPES),
    st.data(),
)
def test_fewer_samples_than_clusters_is_the_documented_error(kind, n, d, dtype, data):
    k = data.draw(st.sampled_from([k for k in K_SET if k > n]))
    X = data.draw(arrays(np.float64, (n, d), elements=ARBITRARY)).astype(dtype)
    with pytest.raises(ValueError, match=rf"^n_samples={n} should be >= n_clusters={k}\.$"):
        _fit(make(kind, k, "k-means++"), X)
