"""The Lloyd engine's backends (``skformer/_fit/engine``) and the compiled kernels
(``skformer/_fit/kernels``).

Oracle first: every backend's step (compiled, torch) has the sums and masses of the NumPy
reference step and of the fused kernel on the same rows, with weights, ties and a single
row. Then properties of the compiled grid: its sums do not depend on the number of
threads or tasks; each block of data held in memory, stepped in one call with the
others, sums as if stepped alone; row bounds skip products but change no bit and hold
the exact distances; the compiled end of a step is NumPy's. Then fits: by each backend
equal to KMeans from the same centres, and in memory (bounds kept or paused) equal to
the pass block by block. Tests choose a backend and its grid by parameter.
"""

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits

from skformer._fit import FitSpec, as_source, fit, kernels
from skformer._fit.engine import choose_backend
from skformer._fit.engine.base import LloydStats, end_step
from skformer._fit.engine.compiled import (
    WARM_GRID,
    WARM_GRID_LOW,
    CompiledBackend,
    Grid,
    GridStep,
    augmented,
    grid_sums,
)
from skformer._fit.engine.loop import run_lloyd
from skformer._fit.engine.sparse import SparseBackend
from skformer._fit.engine.torch import TorchBackend
from skformer._fit.frame import Frame
from skformer._fit.kernels.bounds import RowBounds
from skformer._fit.sources import ArraySource
from skformer.nn.kernel import exact_step
from skformer.reference import lloyd_step as reference_step

pytestmark = pytest.mark.skipif(kernels.load() is None, reason="numba is not importable")

# Chunks of 256 rows whatever k: a few hundred rows make several chunks.
SMALL_CHUNKS = Grid(chunk=1)

BACKENDS = {
    "compiled": lambda source, k: CompiledBackend(source, k),
    "compiled-chunked": lambda source, k: CompiledBackend(source, k, grid=SMALL_CHUNKS),
    "compiled-blocks": lambda source, k: CompiledBackend(source, k,
                                                         grid=Grid(resident=False)),
    "torch": lambda source, k: TorchBackend(source, k),
}


def tokens_of(x):
    return np.concatenate([x, np.ones((x.shape[0], 1), dtype=x.dtype)], axis=1)


def source_of(x, w=None, block_rows=None):
    """``x`` as an in-memory source in its own units (the identity frame)."""
    src = ArraySource(x, w, torch.device("cpu"), block_rows=block_rows)
    src.set_frame(Frame(np.zeros(x.shape[1], dtype=x.dtype), 0))
    return src


def step_once(backend: str, x, w, c):
    _, stats = BACKENDS[backend](source_of(x, w), c.shape[0]).stepper()(c.astype(x.dtype))
    return stats


def fit_by(backend, X, k, init=None, w=None, block_rows=None, **spec):
    """A fit by ``backend`` (a factory): its centres (user units), labels, inertia and
    number of iterations."""
    source = as_source(X, w, torch.device("cpu"))
    if block_rows is not None:
        source = ArraySource(X, w, torch.device("cpu"), block_rows=block_rows)
    spec = dict(init="k-means++" if init is None else init, n_init=1, max_iter=300,
                tol=1e-4) | spec
    result = fit(source, FitSpec(n_clusters=k, random_state=np.random.RandomState(0),
                                 backend=backend, **spec))
    centers = result.frame.to_user(result.centers.cpu().numpy())
    labels, inertia, _ = source.final(centers)
    return centers, labels, inertia, result.n_iter


@pytest.fixture(params=sorted(BACKENDS))
def backend(request):
    return request.param


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("k", [1, 3, 20])
def test_sums_are_the_reference_and_the_fused_kernels(global_random_seed, weighted, k,
                                                      backend):
    rng = np.random.default_rng(global_random_seed)
    x = rng.normal(size=(600, 5)) * 3 + 40
    w = rng.uniform(0.1, 3, 600) if weighted else None
    c = x[rng.choice(600, k, replace=False)].copy()
    sums, mass = step_once(backend, x, w, c)
    new, labels = reference_step(x, c, sample_weight=w)
    np.testing.assert_allclose(mass, np.bincount(labels, weights=w, minlength=k), rtol=1e-12)
    np.testing.assert_allclose(sums / np.maximum(mass, 1e-300)[:, None], new, rtol=1e-12)
    fused = exact_step(torch.from_numpy(x)[None], torch.from_numpy(c)[None],
                       weight=None if w is None else torch.from_numpy(w)[None])
    np.testing.assert_allclose(sums, fused.sums[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(mass, fused.mass[0].numpy(), rtol=1e-12)


def test_ties_go_to_the_lowest_index_and_a_single_row_counts(backend):
    x = np.array([[0.0], [2.0], [1.0]])
    c = np.array([[0.0], [2.0], [0.0]])  # row 2 is equally near centres 0 and 1; 0 == 2
    sums, mass = step_once(backend, x, None, c)
    assert mass.tolist() == [2.0, 1.0, 0.0] and sums.ravel().tolist() == [1.0, 2.0, 0.0]
    sums, mass = step_once(backend, x[1:2], np.array([2.5]), c)
    assert mass.tolist() == [0.0, 2.5, 0.0] and sums.ravel().tolist() == [0.0, 5.0, 0.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_sums_are_returned_in_float64(dtype, backend):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3)).astype(dtype)
    c = x[:4].copy()
    sums, mass = step_once(backend, x, None, c)
    assert sums.dtype == mass.dtype == np.float64
    fused = exact_step(torch.from_numpy(x)[None], torch.from_numpy(c)[None])
    np.testing.assert_array_equal(mass, fused.mass[0].double().numpy())
    np.testing.assert_allclose(sums, fused.sums[0].double().numpy(),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)


def test_score_is_the_literal_inertia_and_the_contingency_table(backend):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(120, 4))
    w = rng.uniform(0.5, 2, 120)
    c, other = x[:3].copy(), x[3:6].copy()
    inertia, table = BACKENDS[backend](source_of(x, w), 3).score(c, other)
    d2 = ((x[:, None] - c[None]) ** 2).sum(-1)
    labels, labels2 = d2.argmin(1), ((x[:, None] - other[None]) ** 2).sum(-1).argmin(1)
    assert inertia == pytest.approx(float((d2.min(1) * w).sum()), rel=1e-12)
    np.testing.assert_array_equal(table.numpy(), np.bincount(labels * 3 + labels2,
                                                             minlength=9))


def test_the_backend_is_chosen_once_by_container_and_device():
    import scipy.sparse as sp

    x = np.zeros((10, 2))
    assert isinstance(choose_backend(source_of(x), 2), CompiledBackend)
    sparse = as_source(sp.csr_matrix(x), None, torch.device("cpu"))
    assert isinstance(choose_backend(sparse, 2), SparseBackend)
    meta = ArraySource(x, None, torch.device("meta"))
    assert isinstance(choose_backend(meta, 2), TorchBackend)  # any device but the CPU


@pytest.mark.parametrize("parts", [Grid().parts, 1])  # 1 byte: a task per chunk
@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_sums_do_not_depend_on_the_number_of_threads(threads, dtype, parts):
    rng = np.random.default_rng(5)
    x = (rng.normal(size=(2900, 7)) * 50 + 1e3).astype(dtype)
    w = rng.uniform(0.1, 3, 2900)
    cct = np.ascontiguousarray(augmented(x[:6], dtype).T)
    for weights in (None, w):
        for block_rows in (None, 1000):
            one = grid_sums(tokens_of(x), weights, cct, rows=300, threads=1,
                            block_rows=block_rows, parts=parts)
            many = grid_sums(tokens_of(x), weights, cct, rows=300, threads=threads,
                             block_rows=block_rows, parts=parts)
            np.testing.assert_array_equal(one, many)
            assert one.dtype == np.float64 and one.shape == (1 if block_rows is None else 3,
                                                             6, 8)


@pytest.mark.parametrize("block_rows", [None, 1, 333, 1000, 5000])
def test_each_block_of_the_grid_sums_as_if_stepped_alone(block_rows):
    # All the blocks in one call (data held in memory) against a call per block (a pass
    # over a memmap or a dask array): equal to the last bit, weights or none; blocks of
    # one row, blocks that are no multiple of the chunks, one block for all.
    rng = np.random.default_rng(2)
    x = (rng.normal(size=(2900, 4)) * 10 + 100).astype(np.float32)
    w = rng.uniform(0.1, 3, 2900)
    c = x[:7].copy()
    step = block_rows or 2900
    for weights in (None, w):
        grid = GridStep(tokens_of(x), weights, 7, block_rows, bounds=False, grid=SMALL_CHUNKS)(c)
        alone = [GridStep(tokens_of(x[s : s + step]), None if weights is None
                          else weights[s : s + step], 7, None, grid=SMALL_CHUNKS)(c)[0]
                 for s in range(0, 2900, step)]
        assert len(grid) == len(alone)
        for (sums, mass), (sums1, mass1) in zip(grid, alone, strict=True):
            np.testing.assert_array_equal(sums, sums1)
            np.testing.assert_array_equal(mass, mass1)


@pytest.mark.parametrize("grid", [Grid(), SMALL_CHUNKS], ids=["default", "chunked"])
@pytest.mark.parametrize("weighted", [False, True])
def test_a_fit_in_memory_steps_its_blocks_as_a_pass_does(weighted, grid):
    # Several blocks of 700 rows: the in-memory step over all of them in one call and
    # the pass block by block (what a memmap or dask array gets) give the same fit, to
    # the last bit.
    rng = np.random.default_rng(4)
    X = (rng.normal(size=(3000, 3)) + rng.integers(0, 5, size=(3000, 1)) * 2.0)
    w = rng.uniform(0.5, 2, 3000) if weighted else None
    init = X[:8].copy()
    fits = {}
    for resident in (True, False):
        layout = Grid(chunk=grid.chunk, resident=resident)
        fits[resident] = fit_by(lambda s, k, g=layout: CompiledBackend(s, k, grid=g), X, 8,
                                init, w, block_rows=700, tol=0, max_iter=30)
    for a, b in zip(fits[True], fits[False], strict=True):
        np.testing.assert_array_equal(a, b)
    assert fits[True][3] > 2


def test_the_compiled_kernels_are_switched_off_by_the_environment(monkeypatch):
    kernels.load.cache_clear()
    monkeypatch.setenv("SKFORMER_COMPILED", "0")
    try:
        assert kernels.load() is None
        assert isinstance(choose_backend(source_of(np.zeros((4, 2))), 2), TorchBackend)
    finally:
        kernels.load.cache_clear()


@pytest.mark.parametrize("backend_name", ["compiled", "compiled-chunked", "torch"])
@pytest.mark.parametrize("n, dtype", [(2000, np.float64), (5000, np.float64),
                                      (5000, np.float32)])
def test_fits_by_each_backend_equal_kmeans(n, dtype, backend_name):
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(n, 6)) + rng.integers(0, 4, size=(n, 1)) * 3.0).astype(dtype)
    init = X[:10].copy()
    centers, labels, _, n_iter = fit_by(BACKENDS[backend_name], X, 10, init, tol=0)
    km = KMeans(10, init=init, n_init=1, tol=0).fit(X)
    np.testing.assert_array_equal(labels, km.labels_)
    np.testing.assert_allclose(centers, km.cluster_centers_,
                               rtol=1e-9 if dtype == np.float64 else 1e-5,
                               atol=1e-12 if dtype == np.float64 else 1e-5)
    assert n_iter == km.n_iter_


def _trajectory(x, k, rng):
    """Centres a run of steps may see: Lloyd's steps from rows, then moves of one ulp,
    none, a swap, two equal centres (exact ties), a jump and back."""
    c = x[rng.choice(len(x), k, replace=False)].copy()
    yield c
    for _ in range(6):
        labels = ((x[:, None, :] - c[None]) ** 2).sum(-1).argmin(1)
        c = np.stack([x[labels == j].mean(0) if (labels == j).any() else c[j]
                      for j in range(k)]).astype(x.dtype)
        yield c
    yield np.nextafter(c, np.inf, dtype=x.dtype)
    yield np.nextafter(c, np.inf, dtype=x.dtype)
    yield c[::-1].copy()
    if k > 1:
        tied = c.copy()
        tied[1] = tied[0]
        yield tied
    yield c + x.std() * 3
    yield c


@pytest.mark.parametrize("half_gaps", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 2, 7, 40])
@pytest.mark.parametrize("data", ["blobs", "grid"])  # grid: integers, exact ties
def test_row_bounds_skip_products_but_change_no_bit(global_random_seed, dtype, k, data,
                                                     half_gaps):
    # Oracle: the same step with every product computed. Steps through one run's
    # bounds, with weights, several chunks and blocks on two threads, give the sums and
    # labels of fresh, full steps, to the last bit; and rows were skipped.
    rng = np.random.default_rng(global_random_seed)
    if data == "blobs":
        x = rng.normal(size=(1500, 5)) + rng.integers(0, 6, size=(1500, 1)) * 4.0
    else:
        x = rng.integers(0, 4, size=(1500, 3)).astype(float)
    x = x.astype(dtype)
    t = tokens_of(x)
    w = rng.uniform(0.5, 2, len(x)) if global_random_seed % 2 else None
    bounds = RowBounds(t, k, half_gaps)
    skipped = 0
    for c in _trajectory(x, k, rng):
        cct = np.ascontiguousarray(augmented(c, dtype).T)
        kept = grid_sums(t, w, cct, rows=300, threads=2, block_rows=700, bounds=bounds)
        fresh = RowBounds(t, k)
        full = grid_sums(t, w, cct, rows=300, threads=2, block_rows=700, bounds=fresh)
        np.testing.assert_array_equal(kept, full)
        np.testing.assert_array_equal(bounds.labels, fresh.labels)
        np.testing.assert_array_equal(
            full, grid_sums(t, w, cct, rows=300, threads=1, block_rows=700))
        # A skipped row's upper bound only moved (outward); a computed one is new.
        skipped += int((bounds.rows[0] != fresh.rows[0]).sum())
    assert skipped > len(x)


@pytest.mark.parametrize("half_gaps", [False, True])
def test_row_bounds_hold_the_exact_distances(global_random_seed, half_gaps):
    # After steps through a run, each row's bounds enclose its exact distances: the
    # nearest centre's at most `upper`, every other one's at least `lower`.
    rng = np.random.default_rng(global_random_seed)
    x = (rng.normal(size=(800, 4)) + rng.integers(0, 5, size=(800, 1)) * 3.0)
    x = x.astype(np.float32)
    t = tokens_of(x)
    bounds = RowBounds(t, 6, half_gaps)
    for c in _trajectory(x, 6, rng):
        cct = np.ascontiguousarray(augmented(c, np.float32).T)
        grid_sums(t, None, cct, rows=256, threads=1, bounds=bounds)
        exact = np.sqrt(((x[:, None, :].astype(np.float64) - c[None]) ** 2).sum(-1))
        own = exact[np.arange(len(x)), bounds.labels]
        assert (own <= bounds.rows[0]).all()
        others = np.where(np.arange(6) == bounds.labels[:, None], np.inf, exact).min(1)
        assert (others >= bounds.rows[1]).all()


def test_one_far_centre_moving_keeps_the_other_rows_bounds(global_random_seed):
    # Hamerly's half-gap test: one centre jumps far (as a global move does), so every
    # row's lower bound drops by that shift, yet a row well inside its own cluster still
    # keeps its centre by the half distance from it to the next centre; the sums stay
    # those of the full products, to the bit.
    rng = np.random.default_rng(global_random_seed)
    means = np.arange(8)[:, None] * np.array([[10.0, 0.0]])
    x = (rng.normal(size=(1600, 2)) + means[rng.integers(0, 8, 1600)]).astype(np.float32)
    t = tokens_of(x)
    bounds = RowBounds(t, 8, half_gaps=True)
    c = means.astype(np.float32)
    cct = np.ascontiguousarray(augmented(c, np.float32).T)
    grid_sums(t, None, cct, rows=256, threads=1, bounds=bounds)
    c[0] += 25.0  # the far centre's shift lowers every other row's bound below it
    cct = np.ascontiguousarray(augmented(c, np.float32).T)
    kept = grid_sums(t, None, cct, rows=256, threads=1, bounds=bounds)
    np.testing.assert_array_equal(kept, grid_sums(t, None, cct, rows=256, threads=1))
    assert bounds.moves[1, 1:].min() >= 25.0  # the largest shift of the others
    assert bounds.computed < len(x) // 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_compiled_end_of_a_step_is_numpys(global_random_seed, dtype):
    # New centres bit for bit (an empty cluster keeps its centre), the shift to the
    # last rounding of its sum, and "the assignment did not change" alike.
    rng = np.random.default_rng(global_random_seed)
    c = rng.normal(size=(6, 5)).astype(dtype)
    mass = rng.integers(0, 4, 6).astype(float)
    stats = LloydStats(rng.normal(size=(6, 5)) * mass[:, None], mass)
    same = LloydStats(stats.sums.copy(), stats.mass.copy())
    other = LloydStats(stats.sums.copy(), stats.mass.copy())
    other.sums[2, 3] = np.nextafter(other.sums[2, 3], np.inf)
    compiled_ends = [end_step(c, stats, p, None, kernels.load()) for p in (None, same, other)]
    numpy_ends = [end_step(c, stats, p, None) for p in (None, same, other)]
    for (new, shift, flag), (new1, shift1, flag1) in zip(compiled_ends, numpy_ends,
                                                          strict=True):
        np.testing.assert_array_equal(new, new1)
        assert new.dtype == dtype
        assert shift == pytest.approx(shift1, rel=1e-12)
        assert flag == flag1
    assert [flag for _, _, flag in numpy_ends] == [False, True, False]
    np.testing.assert_array_equal(compiled_ends[0][0][mass == 0], c[mass == 0])


class Recorded(CompiledBackend):
    """The compiled backend, recording its runs' steps."""

    steps: list = []

    def stepper(self):
        step = super().stepper()
        self.steps.append(step)
        return step



@pytest.mark.parametrize("data", ["digits", "digits-warm", "grid"])
def test_a_fit_keeping_row_bounds_is_the_fit_without(data, global_random_seed):
    # A fit in memory, whose steps keep the rows' bounds and skip products (digits: by
    # default, or as the global moves' runs do; integer data full of exact ties: from
    # the first step on), against the pass block by block, which computes every
    # product: the same fit, to the last bit.
    if data.startswith("digits"):
        X, k = load_digits().data, 10
        grid = Grid() if data == "digits" else WARM_GRID_LOW
        assert k * (X.shape[1] + 1) >= grid.bounds_products
    else:
        rng = np.random.default_rng(global_random_seed)
        X, k = rng.integers(0, 5, size=(2000, 3)).astype(float), 6
        grid = Grid(bounds_products=0, bounds_after=0)
    Recorded.steps = []
    resident = fit_by(lambda s, k: Recorded(s, k, grid=grid), X, k, tol=0)
    blocks = fit_by(lambda s, k: CompiledBackend(s, k, grid=Grid(resident=False)), X, k,
                    tol=0)
    for a, b in zip(resident, blocks, strict=True):
        np.testing.assert_array_equal(a, b)
    assert resident[3] > grid.bounds_after + 1
    assert Recorded.steps and all(s.grid_step.bounds is not None for s in Recorded.steps)


def test_bounds_pause_and_start_again_and_change_no_bit(global_random_seed):
    # Uniform data, where many rows change centre early on: the bounds pause when a step
    # computes most rows' products and start again later, over several chunks, blocks
    # and two threads; the fit is still the pass block by block's, to the last bit.
    grid = Grid(chunk=2**12, bounds_products=0, bounds_after=1)  # chunks of 341 rows
    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(size=(3000, 4)).astype(np.float32)
    init = X[:12].copy()
    Recorded.steps = []
    resident = fit_by(lambda s, k: Recorded(s, k, grid=grid), X, 12, init, block_rows=700,
                      tol=0, max_iter=60)
    blocks = fit_by(lambda s, k: CompiledBackend(s, k, grid=Grid(resident=False,
                                                                 chunk=2**12)),
                    X, 12, init, block_rows=700, tol=0, max_iter=60)
    (step,) = [s.grid_step for s in Recorded.steps]
    assert step.bounds is not None and step._wait > grid.bounds_after  # paused, restarted
    for a, b in zip(resident, blocks, strict=True):
        np.testing.assert_array_equal(a, b)



# ------------------------------------------------- costs passes that start the next run


def _costs_state(x, k, grid, rng):
    """A compiled backend with ``grid`` on ``x``, centres near a fixed point and the
    costs pass's state at them."""
    backend = CompiledBackend(source_of(x), k, grid=grid)
    c = run_lloyd(backend, torch.from_numpy(x[rng.choice(len(x), k, replace=False)]),
                  300, 0.0, log=False).centers.numpy()
    return backend, c, *backend.costs_and_state(c)


@pytest.mark.parametrize("grid", ["low", "warm"])
def test_a_costs_pass_state_holds_the_rows_bounds(global_random_seed, grid):
    # The pass's costs are costs()'s, to the bit; its state is each row's nearest
    # centre and bounds that enclose the exact distances, as a step sets them.
    rng = np.random.default_rng(global_random_seed)
    x = (rng.normal(size=(900, 2)) + rng.integers(0, 6, size=(900, 1)) * 4.0)
    x = x.astype(np.float32)
    backend, c, costs, state = _costs_state(x, 6, WARM_GRID_LOW if grid == "low"
                                            else WARM_GRID, rng)
    want = backend.costs(c)
    np.testing.assert_array_equal(costs.error, want.error)
    np.testing.assert_array_equal(costs.utility, want.utility)
    exact = np.sqrt(((x[:, None, :].astype(np.float64) - c[None]) ** 2).sum(-1))
    np.testing.assert_array_equal(state.labels, exact.argmin(1))
    assert (exact[np.arange(len(x)), state.labels] <= state.rows[0]).all()
    others = np.where(np.arange(6) == state.labels[:, None], np.inf, exact).min(1)
    assert (others >= state.rows[1]).all()


@pytest.mark.parametrize("grid", ["low", "warm"])
@pytest.mark.parametrize("move", ["breathe-in", "breathe-out", "elsewhere"])
def test_a_run_from_a_costs_pass_state_is_the_run_without(global_random_seed, grid,
                                                          move):
    # Oracle: the same run with a fresh stepper. From centres near the pass's (new ones
    # beside some, some removed, or all moved a little), the run carried from the pass's
    # bounds has the same steps, to the last bit; its first step skips most rows.
    rng = np.random.default_rng(global_random_seed)
    x = (rng.normal(size=(3000, 3)) + rng.integers(0, 12, size=(3000, 1)) * 5.0)
    grid = WARM_GRID_LOW if grid == "low" else WARM_GRID
    _, c, _, state = _costs_state(x, 12, grid, rng)
    if move == "breathe-in":
        start = np.concatenate([c, c[[2, 7]] + 0.01])
    elif move == "breathe-out":
        start = c[[0, 1, 3, 4, 5, 6, 8, 9, 10, 11]]
    else:
        start = c + rng.normal(scale=0.05, size=c.shape)
    backend = CompiledBackend(source_of(x), len(start), grid=grid)
    first = backend.stepper_from(state, start).grid_step
    first(start)
    assert first.bounds.pruned and first.bounds.computed < len(x) / 2
    carried = run_lloyd(backend, torch.from_numpy(start), 300, 0.0, log=False, state=state)
    fresh = run_lloyd(backend, torch.from_numpy(start), 300, 0.0, log=False)
    np.testing.assert_array_equal(carried.centers.numpy(), fresh.centers.numpy())
    assert carried.n_iter == fresh.n_iter


def test_a_carried_state_sends_the_rows_of_split_or_removed_centres_to_products():
    t = tokens_of(np.array([[0.0], [1.0], [10.0], [20.0]]))
    bounds = RowBounds(t, 3)
    cct = np.ascontiguousarray(augmented(np.array([[0.5], [10.0], [20.0]]), t.dtype).T)
    grid_sums(t, None, cct, rows=256, threads=1, bounds=bounds)
    # centre 1 (10) split in two, centre 2 (20) removed
    wide = bounds.carried(np.array([[0.5], [10.0], [10.2]]))
    np.testing.assert_array_equal(np.isinf(wide.rows[0]), [False, False, True, True])
    np.testing.assert_array_equal(wide.labels[:2], [0, 0])
