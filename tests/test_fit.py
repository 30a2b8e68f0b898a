"""The private fit layer: frame, sources, Lloyd partials and their merge, run comparison.

Oracle first: a Lloyd step over any split of the rows equals the NumPy reference step;
the inertia derived from a step's statistics equals the literal one. Then the frame's
exactness and the sources' summary.
"""

import warnings

import numpy as np
import pytest
import torch

from skformer import TransformerKMeans
from skformer._fit.engine import (
    LloydStats,
    choose_backend,
    contingency,
    end_step,
    same_partition,
)
from skformer._fit.frame import Frame, ModelFrame
from skformer._fit.sources import ArraySource, grid_rows, sum_parts
from skformer.reference import lloyd_step as reference_step


def lloyd_step(src, c: np.ndarray):
    """One step of the fit's backend from centres ``c`` (k, d): new centres and the
    assignment's statistics."""
    new, stats = choose_backend(src, c.shape[0]).stepper()(c)
    new, _, _ = end_step(c, stats, None, new)
    return new, stats


def source(X, w=None, block_rows=None, cache=True):
    src = ArraySource(X, w, torch.device("cpu"), cache=cache, block_rows=block_rows)
    summary = src.summary()
    src.set_frame(summary.frame(src.unit_within))
    return src, summary


@pytest.mark.parametrize("block_rows", [7, 64, 10_000])
@pytest.mark.parametrize("weighted", [False, True])
def test_step_over_blocks_is_the_reference_step(global_random_seed, block_rows, weighted):
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(300, 3)) * 5 + 100
    w = rng.uniform(0.1, 2, 300) if weighted else None
    src, _ = source(X, w, block_rows)
    x_fit, _ = src.gather(None)
    c0 = x_fit[:4].copy()
    new, stats = lloyd_step(src, c0)
    ref, labels = reference_step(x_fit, c0, sample_weight=w)
    np.testing.assert_allclose(new, ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(stats.mass > 0, np.bincount(labels, minlength=4) > 0)
    # The inertia from the statistics is the literal one, for the step's input centres.
    backend = choose_backend(src, 4)
    literal, _ = backend.score(c0)
    assert stats.inertia(c0, backend.norms()) == pytest.approx(literal, rel=1e-9)


def test_cached_and_streamed_sources_agree():
    X = np.random.default_rng(0).normal(size=(1000, 4)).astype(np.float32)
    a, sa = source(X, block_rows=100, cache=True)
    b, sb = source(X, block_rows=333, cache=False)
    # The in-memory summary's frame and extremes (of its copy) are the streamed one's.
    assert sa.lo is None
    np.testing.assert_array_equal(a.frame.offset, b.frame.offset)
    assert a.frame.power == b.frame.power
    rows = a.gather(None)[0]
    np.testing.assert_array_equal(rows.min(0), b.frame.apply(sb.lo))
    np.testing.assert_array_equal(rows.max(0), b.frame.apply(sb.hi))
    truth = np.var(X.astype(np.float64), axis=0).mean()
    assert sb.variance == pytest.approx(truth, rel=1e-9)
    # float32 sums over blocks of 4096 rows (KMeans' own np.var is float32 throughout)
    assert sa.variance == pytest.approx(truth, rel=1e-6)
    np.testing.assert_array_equal(a.gather(np.arange(10))[0], b.gather(np.arange(10))[0])
    c = a.gather(np.arange(5))[0]
    sta, stb = lloyd_step(a, c)[1], lloyd_step(b, c)[1]
    # Blocks of other sizes: the float32 sums within a block round differently.
    np.testing.assert_allclose(sta.sums, stb.sums, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(sta.mass, stb.mass)
    # On the grid every container shares, a cached and a streamed pass are the same.
    grid_a, _ = source(X, cache=True)
    grid_b, _ = source(X, cache=False)
    assert grid_a.block_rows == grid_b.block_rows == grid_rows(*X.shape)
    sta, stb = lloyd_step(grid_a, c)[1], lloyd_step(grid_b, c)[1]
    assert sta.same(stb)


def test_frame_is_exact_and_recovers_the_units():
    X = np.array([[1e8, -3.0], [1e8 + 8, 5.0], [1e8 + 2, 1.0]])
    frame = Frame.of(X.min(0), X.max(0))
    np.testing.assert_array_equal(frame.offset, [1e8 + 4, 1.0])
    Xf = frame.apply(X)
    assert np.abs(Xf).max() < 2 and np.abs(Xf).max() >= 1
    np.testing.assert_array_equal(frame.to_user(Xf), X)  # a power of two: exact
    assert frame.squared_to_user(frame.squared_from_user(3.0)) == 3.0


def test_model_frame_maps_into_the_unit_box():
    lo, hi = np.array([-1.0, 0.0]), np.array([1.0, 0.5])
    mf = ModelFrame.of(lo, hi, padding=2, device="cpu")
    z = mf.to_model(torch.tensor([[-1.0, 0.0], [1.0, 0.5]], dtype=torch.float64))
    assert z.shape == (2, 4) and float(z.min()) == 0.0 and float(z.max()) == 1.0
    torch.testing.assert_close(mf.to_fit(z, torch.float64),
                               torch.tensor([[-1.0, 0.0], [1.0, 0.5]], dtype=torch.float64))
    assert ModelFrame.of(np.array([-np.inf]), np.array([np.inf]), 0, "cpu") is None


def test_same_clustering_from_a_contingency_table():
    a = np.array([0, 0, 1, 2])
    renamed = np.array([2, 2, 0, 1])
    other = np.array([0, 1, 1, 2])
    assert bool(same_partition(contingency(a, renamed, 3), 3))
    assert not bool(same_partition(contingency(a, other, 3), 3))
    # Many at once, padding (-1) not counted.
    pairs = torch.tensor(np.stack([a, a])), torch.tensor(np.stack([renamed, other]))
    tables = contingency(*pairs, 3, valid=pairs[0] >= 0)
    assert same_partition(tables, 3).tolist() == [True, False]


def test_sum_parts_keeps_named_tuples():
    parts = [LloydStats(np.ones((2, 2)), np.ones(2)), LloydStats(np.ones((2, 2)), np.ones(2))]
    merged = sum_parts(parts)
    assert isinstance(merged, LloydStats) and float(merged.mass.sum()) == 4.0


@pytest.mark.parametrize(
    "returned, match",
    [
        (np.array([1.5, 2.5, 3.5]), r"array=\[1\.5 2\.5 3\.5\]"),
        (np.full((3, 2), 7.0), r"initial centers \(3, 2\) does not match the number of "
                               r"clusters 2"),
        (np.full((2, 3), 7.0), r"initial centers \(2, 3\) does not match the number of "
                               r"features of the data 2"),
    ],
)
@pytest.mark.parametrize("estimator", ["TransformerKMeans", "ExactLloydTransformer"])
def test_callable_init_errors_show_the_users_values(estimator, returned, match):
    # The data are rescaled by a power of two inside the fit; a callable's wrong output
    # was reported rescaled (array=[0.00073 ...]) (issue 21).
    import skformer

    X = np.random.default_rng(0).normal(size=(50, 2)) * 1000

    def init(X, n_clusters, random_state):
        return returned

    with pytest.raises(ValueError, match=match):
        getattr(skformer, estimator)(2, init=init, n_init=1).fit(X)


@pytest.mark.parametrize("dtype, power", [(np.float32, 66), (np.float32, -66),
                                           (np.float64, 520)])
def test_a_power_of_two_changes_no_fit(dtype, power):
    # Data scaled by 2**power (squares beyond the dtype's range at 2**66 in float32):
    # the same labels, iterations and scaled centres, and a finite tolerance.
    from skformer import ExactLloydTransformer

    rng = np.random.default_rng(0)
    X = (rng.normal(size=(600, 3)) + np.repeat(rng.normal(size=(3, 3)) * 4, 200, 0))
    X = X.astype(dtype)
    init = X[[0, 200, 400]]
    a = ExactLloydTransformer(3, init=init, n_init=1).fit(X)
    b = ExactLloydTransformer(3, init=np.ldexp(init, power), n_init=1).fit(np.ldexp(X, power))
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.n_iter_ == b.n_iter_ > 1
    np.testing.assert_array_equal(np.ldexp(a.cluster_centers_, power), b.cluster_centers_)


def test_a_context_far_below_the_fit_frames_scale_is_stepped():
    """Issue 41: two sentinels at +-1e200 set the fit frame's scale, and the context (a
    sample without them) spans 1e-200 of it: its squared range underflowed to 0 and the
    tolerance's division raised ZeroDivisionError; the fast mode finished."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 2))
    X[5], X[6] = 1e200, -1e200
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fewer distinct clusters, as in the fast mode
        fast = TransformerKMeans(4, random_state=0, device="cpu").fit(X)
        est = TransformerKMeans(4, random_state=0, learned_starts=1, max_context=2048,
                                device="cpu").fit(X)
    assert est.learned_used_ and np.isfinite(est.inertia_)
    assert est.inertia_ <= fast.inertia_
