"""The step on the CPU: compiled (``skformer._fit.compiled``, numba) or in NumPy
(``skformer._fit.cpu``: small blocks whole, larger blocks in chunks).

Oracle first: its sums and masses equal the NumPy reference step and the fused kernel's
(``exact_step``) on the same block, with weights, ties and a single row, compiled and on
both sides of the NumPy step's small/chunked line; its score is the literal inertia. The
compiled sums do not depend on the number of threads or tasks, and each block of data
held in memory, stepped in one call with the others, sums as if stepped alone (as a
pass over a memmap or dask array steps it). Then the choice: the CPU
step takes every dense CPU block (the small one by its shape), and fits by the compiled
step, the NumPy step and the fused kernel (a GPU's) still equal KMeans from the same
centres.
"""

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans

from skformer import TransformerKMeans
from skformer._fit import compiled, cpu, lloyd, sources
from skformer._fit.cpu import (
    SMALL,
    cpu_step,
    grid_lloyd_sums,
    is_small,
    lloyd_sums,
    small_score,
)
from skformer._fit.sources import ArraySource, Block
from skformer.nn.kernel import exact_step
from skformer.reference import lloyd_step as reference_step


def tokens_of(x):
    return np.concatenate([x, np.ones((x.shape[0], 1), dtype=x.dtype)], axis=1)


def block_of(x, w=None):
    t = torch.from_numpy(tokens_of(x))
    return Block(t[:, :-1], None if w is None else torch.from_numpy(w), t)


@pytest.fixture(params=["compiled", "compiled-chunked", "small", "chunked"])
def step_kind(request, monkeypatch):
    """The compiled step (numba) or, without it, the NumPy step: small, or chunked. The
    chunked ones in chunks of 256 rows, so a few hundred rows make several chunks."""
    if not request.param.startswith("compiled"):
        monkeypatch.setattr(compiled, "kernel", lambda: None)
    elif compiled.kernel() is None:
        pytest.skip("numba is not importable here")
    if request.param.endswith("chunked"):
        monkeypatch.setattr(cpu, "SMALL", 0)
        monkeypatch.setattr(cpu, "CHUNK", 1)
    return request.param


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("k", [1, 3, 20])
def test_sums_are_the_reference_and_the_fused_kernels(global_random_seed, weighted, k,
                                                      step_kind):
    rng = np.random.default_rng(global_random_seed)
    x = rng.normal(size=(200, 5)) * 3 + 40
    w = rng.uniform(0.1, 3, 200) if weighted else None
    c = x[rng.choice(200, k, replace=False)].copy()
    sums, mass = lloyd_sums(tokens_of(x), w, c)
    new, labels = reference_step(x, c, sample_weight=w)
    np.testing.assert_allclose(mass, np.bincount(labels, weights=w, minlength=k), rtol=1e-12)
    np.testing.assert_allclose(sums / np.maximum(mass, 1e-300)[:, None], new, rtol=1e-12)
    fused = exact_step(torch.from_numpy(x)[None], torch.from_numpy(c)[None],
                       weight=None if w is None else torch.from_numpy(w)[None])
    np.testing.assert_allclose(sums, fused.sums[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(mass, fused.mass[0].numpy(), rtol=1e-12)


def test_ties_go_to_the_lowest_index_and_a_single_row_counts(step_kind):
    x = np.array([[0.0], [2.0], [1.0]])
    c = np.array([[0.0], [2.0], [0.0]])  # row 2 is equally near centres 0 and 1; 0 == 2
    sums, mass = lloyd_sums(tokens_of(x), None, c)
    assert mass.tolist() == [2.0, 1.0, 0.0] and sums.ravel().tolist() == [1.0, 2.0, 0.0]
    sums, mass = lloyd_sums(tokens_of(x[1:2]), np.array([2.5]), c)
    assert mass.tolist() == [0.0, 2.5, 0.0] and sums.ravel().tolist() == [0.0, 5.0, 0.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_sums_are_returned_in_float64(dtype, step_kind):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3)).astype(dtype)
    c = x[:4].copy()
    sums, mass = lloyd_sums(tokens_of(x), None, c)
    assert sums.dtype == mass.dtype == np.float64
    fused = exact_step(torch.from_numpy(x)[None], torch.from_numpy(c)[None])
    np.testing.assert_array_equal(mass, fused.mass[0].double().numpy())
    np.testing.assert_allclose(sums, fused.sums[0].double().numpy(),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)


def test_score_is_the_literal_inertia_and_the_contingency_table():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(120, 4))
    w = rng.uniform(0.5, 2, 120)
    c, other = x[:3].copy(), x[3:6].copy()
    inertia, table = small_score(block_of(x, w), torch.from_numpy(c), torch.from_numpy(other))
    d2 = ((x[:, None] - c[None]) ** 2).sum(-1)
    labels, labels2 = d2.argmin(1), ((x[:, None] - other[None]) ** 2).sum(-1).argmin(1)
    assert float(inertia) == pytest.approx(float((d2.min(1) * w).sum()), rel=1e-12)
    np.testing.assert_array_equal(table.numpy(),
                                  np.bincount(labels * 3 + labels2, minlength=9))


def test_the_kernel_is_chosen_by_the_device_and_the_small_step_by_the_shape():
    x = np.zeros((SMALL // 8, 2))
    assert is_small(block_of(x), 8) and not is_small(block_of(x), 9)
    assert cpu_step(block_of(x)) and cpu_step(block_of(x.astype(np.float32)))
    assert not cpu_step(Block(torch.zeros(3, 2), None))  # no tokens: a sparse block


@pytest.mark.parametrize("parts", [None, 1])  # 1 byte: a task per chunk
@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_sums_do_not_depend_on_the_number_of_threads(threads, dtype, parts,
                                                              monkeypatch):
    kernels = compiled.kernel()
    if kernels is None:
        pytest.skip("numba is not importable here")
    if parts is not None:
        monkeypatch.setattr(compiled, "_PARTS", parts)
    rng = np.random.default_rng(5)
    x = (rng.normal(size=(2900, 7)) * 50 + 1e3).astype(dtype)
    w = rng.uniform(0.1, 3, 2900)
    cct = np.ascontiguousarray(cpu._augmented(x[:6], dtype).T)
    for weights in (None, w):
        for block_rows in (None, 1000):
            one = compiled.lloyd_sums(kernels, tokens_of(x), weights, cct, rows=300,
                                      threads=1, block_rows=block_rows)
            many = compiled.lloyd_sums(kernels, tokens_of(x), weights, cct, rows=300,
                                       threads=threads, block_rows=block_rows)
            np.testing.assert_array_equal(one, many)
            assert one.dtype == np.float64 and one.shape == (1 if block_rows is None else 3,
                                                             6, 8)


@pytest.mark.parametrize("block_rows", [None, 1, 333, 1000, 5000])
def test_each_block_of_the_grid_sums_as_if_stepped_alone(block_rows, step_kind):
    # All the blocks in one call (data held in memory) against a call per block (a pass
    # over a memmap or a dask array): equal to the last bit, weights or none; blocks of
    # one row, blocks that are no multiple of the chunks, one block for all.
    rng = np.random.default_rng(2)
    x = (rng.normal(size=(2900, 4)) * 10 + 100).astype(np.float32)
    w = rng.uniform(0.1, 3, 2900)
    c = x[:7].copy()
    step = block_rows or 2900
    for weights in (None, w):
        grid = grid_lloyd_sums(tokens_of(x), weights, c, block_rows)
        alone = [lloyd_sums(tokens_of(x[s : s + step]),
                            None if weights is None else weights[s : s + step], c)
                 for s in range(0, 2900, step)]
        assert len(grid) == len(alone)
        for (sums, mass), (sums1, mass1) in zip(grid, alone, strict=True):
            np.testing.assert_array_equal(sums, sums1)
            np.testing.assert_array_equal(mass, mass1)


@pytest.mark.parametrize("weighted", [False, True])
def test_a_fit_in_memory_steps_its_blocks_as_a_pass_does(weighted, step_kind, monkeypatch):
    # Several blocks of 700 rows: the in-memory step over all of them in one call and
    # the pass block by block (what a memmap or dask array gets) give the same fit, to
    # the last bit.
    monkeypatch.setattr(sources, "grid_rows", lambda n, d: 700)
    rng = np.random.default_rng(4)
    X = (rng.normal(size=(3000, 3)) + rng.integers(0, 5, size=(3000, 1)) * 2.0)
    w = rng.uniform(0.5, 2, 3000) if weighted else None
    init = X[:8].copy()
    fits = {}
    for path in ("resident", "blocks"):
        if path == "blocks":
            monkeypatch.setattr(ArraySource, "resident", lambda self: None)
        fits[path] = TransformerKMeans(8, init=init, n_init=1, tol=0, max_iter=30).fit(
            X, sample_weight=w)
    np.testing.assert_array_equal(fits["resident"].cluster_centers_,
                                  fits["blocks"].cluster_centers_)
    np.testing.assert_array_equal(fits["resident"].labels_, fits["blocks"].labels_)
    assert fits["resident"].n_iter_ == fits["blocks"].n_iter_ > 2


def test_the_compiled_step_is_switched_off_by_the_environment(monkeypatch):
    compiled.kernel.cache_clear()
    monkeypatch.setenv("SKFORMER_COMPILED", "0")
    try:
        assert compiled.kernel() is None
    finally:
        compiled.kernel.cache_clear()


@pytest.mark.parametrize("kernel", ["compiled", "numpy", "fused"])  # fused: a GPU's
@pytest.mark.parametrize("n, dtype", [(2000, np.float64), (5000, np.float64),
                                      (5000, np.float32)])  # small; chunked; chunked
def test_fits_by_each_kernel_equal_kmeans(n, dtype, kernel, monkeypatch):
    if kernel == "compiled" and compiled.kernel() is None:
        pytest.skip("numba is not importable here")
    if kernel == "numpy":
        monkeypatch.setattr(compiled, "kernel", lambda: None)
    if kernel == "fused":  # what a fit on a GPU runs, on the CPU
        monkeypatch.setattr(lloyd, "cpu_step", lambda block: False)
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(n, 6)) + rng.integers(0, 4, size=(n, 1)) * 3.0).astype(dtype)
    init = X[:10].copy()
    ours = TransformerKMeans(10, init=init, n_init=1, tol=0).fit(X)
    km = KMeans(10, init=init, n_init=1, tol=0).fit(X)
    np.testing.assert_array_equal(ours.labels_, km.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, km.cluster_centers_,
                               rtol=1e-9 if dtype == np.float64 else 1e-5,
                               atol=1e-12 if dtype == np.float64 else 1e-5)
    assert ours.n_iter_ == km.n_iter_


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 2, 7, 40])
@pytest.mark.parametrize("data", ["blobs", "grid"])  # grid: integers, exact ties
def test_row_bounds_skip_products_but_change_no_bit(global_random_seed, dtype, k, data):
    # Oracle: the same step with every product computed. Steps through one run's
    # bounds, with weights, several chunks and blocks on two threads, give the sums and
    # labels of fresh, full steps, to the last bit; and rows were skipped.
    kernels = compiled.kernel()
    if kernels is None:
        pytest.skip("numba is not importable here")
    rng = np.random.default_rng(global_random_seed)
    if data == "blobs":
        x = rng.normal(size=(1500, 5)) + rng.integers(0, 6, size=(1500, 1)) * 4.0
    else:
        x = rng.integers(0, 4, size=(1500, 3)).astype(float)
    x = x.astype(dtype)
    t = tokens_of(x)
    w = rng.uniform(0.5, 2, len(x)) if global_random_seed % 2 else None
    bounds = compiled.RowBounds(t, k)
    skipped = 0
    for c in _trajectory(x, k, rng):
        cct = np.ascontiguousarray(cpu._augmented(c, dtype).T)
        kept = compiled.lloyd_sums(kernels, t, w, cct, rows=300, threads=2, block_rows=700,
                                   bounds=bounds)
        fresh = compiled.RowBounds(t, k)
        full = compiled.lloyd_sums(kernels, t, w, cct, rows=300, threads=2, block_rows=700,
                                   bounds=fresh)
        np.testing.assert_array_equal(kept, full)
        np.testing.assert_array_equal(bounds.labels, fresh.labels)
        np.testing.assert_array_equal(
            full, compiled.lloyd_sums(kernels, t, w, cct, rows=300, threads=1,
                                      block_rows=700))
        # A skipped row's upper bound only moved (outward); a computed one is new.
        skipped += int((bounds.rows[0] != fresh.rows[0]).sum())
    assert skipped > len(x)


def test_row_bounds_hold_the_exact_distances(global_random_seed):
    # After steps through a run, each row's bounds enclose its exact distances: the
    # nearest centre's at most `upper`, every other one's at least `lower`.
    kernels = compiled.kernel()
    if kernels is None:
        pytest.skip("numba is not importable here")
    rng = np.random.default_rng(global_random_seed)
    x = (rng.normal(size=(800, 4)) + rng.integers(0, 5, size=(800, 1)) * 3.0)
    x = x.astype(np.float32)
    t = tokens_of(x)
    bounds = compiled.RowBounds(t, 6)
    for c in _trajectory(x, 6, rng):
        cct = np.ascontiguousarray(cpu._augmented(c, np.float32).T)
        compiled.lloyd_sums(kernels, t, None, cct, rows=256, threads=1, bounds=bounds)
        exact = np.sqrt(((x[:, None, :].astype(np.float64) - c[None]) ** 2).sum(-1))
        own = exact[np.arange(len(x)), bounds.labels]
        assert (own <= bounds.rows[0]).all()
        others = np.where(np.arange(6) == bounds.labels[:, None], np.inf, exact).min(1)
        assert (others >= bounds.rows[1]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_compiled_end_of_a_step_is_numpys(global_random_seed, dtype, monkeypatch):
    # New centres bit for bit (an empty cluster keeps its centre), the shift to the
    # last rounding of its sum, and "the assignment did not change" alike.
    if compiled.kernel() is None:
        pytest.skip("numba is not importable here")
    rng = np.random.default_rng(global_random_seed)
    c = rng.normal(size=(6, 5)).astype(dtype)
    mass = rng.integers(0, 4, 6).astype(float)
    stats = lloyd.LloydStats(rng.normal(size=(6, 5)) * mass[:, None], mass)
    same = lloyd.LloydStats(stats.sums.copy(), stats.mass.copy())
    other = lloyd.LloydStats(stats.sums.copy(), stats.mass.copy())
    other.sums[2, 3] = np.nextafter(other.sums[2, 3], np.inf)
    compiled_ends = [lloyd._settle(c, stats, p, None) for p in (None, same, other)]
    monkeypatch.setattr(compiled, "kernel", lambda: None)
    numpy_ends = [lloyd._settle(c, stats, p, None) for p in (None, same, other)]
    for (new, shift, flag), (new1, shift1, flag1) in zip(compiled_ends, numpy_ends,
                                                          strict=True):
        np.testing.assert_array_equal(new, new1)
        assert new.dtype == dtype
        assert shift == pytest.approx(shift1, rel=1e-12)
        assert flag == flag1
    assert [flag for _, _, flag in numpy_ends] == [False, True, False]
    np.testing.assert_array_equal(compiled_ends[0][0][mass == 0], c[mass == 0])


@pytest.mark.parametrize("data", ["digits", "grid"])
def test_a_fit_keeping_row_bounds_is_the_fit_without(data, global_random_seed, monkeypatch):
    # A fit in memory, whose steps keep the rows' bounds and skip products (digits: by
    # default; integer data full of exact ties: from the first step on), against the
    # pass block by block, which computes every product: the same fit, to the last bit.
    if compiled.kernel() is None:
        pytest.skip("numba is not importable here")
    if data == "digits":
        from sklearn.datasets import load_digits

        X, k = load_digits().data, 10
        assert k * (X.shape[1] + 1) >= cpu.BOUNDS_PRODUCTS
    else:
        rng = np.random.default_rng(global_random_seed)
        X, k = rng.integers(0, 5, size=(2000, 3)).astype(float), 6
        monkeypatch.setattr(cpu, "BOUNDS_PRODUCTS", 0)
        monkeypatch.setattr(cpu, "BOUNDS_AFTER", 0)
    made = []
    original = compiled.RowBounds.__init__

    def counted(self, *args):
        made.append(self)
        original(self, *args)

    monkeypatch.setattr(compiled.RowBounds, "__init__", counted)
    fits = {}
    for path in ("resident", "blocks"):
        if path == "blocks":
            monkeypatch.setattr(ArraySource, "resident", lambda self: None)
        fits[path] = TransformerKMeans(k, random_state=global_random_seed, tol=0,
                                       device="cpu").fit(X)
        if path == "resident":
            assert made, "the in-memory fit kept no bounds"
            made.clear()
    assert not made
    for name in ("cluster_centers_", "labels_", "inertia_", "n_iter_"):
        np.testing.assert_array_equal(getattr(fits["resident"], name),
                                      getattr(fits["blocks"], name))
    assert fits["resident"].n_iter_ > cpu.BOUNDS_AFTER + 1


def test_bounds_stop_and_start_again_and_change_no_bit(global_random_seed, monkeypatch):
    # Uniform data, where many rows change centre early on: the bounds stop when a step
    # computes most rows' products and start again later, over several chunks, blocks
    # and two threads; the fit is still the pass block by block's, to the last bit.
    if compiled.kernel() is None:
        pytest.skip("numba is not importable here")
    monkeypatch.setattr(cpu, "BOUNDS_PRODUCTS", 0)
    monkeypatch.setattr(cpu, "BOUNDS_AFTER", 1)
    monkeypatch.setattr(cpu, "CHUNK", 2**12)  # chunks of 341 rows
    monkeypatch.setattr(sources, "grid_rows", lambda n, d: 700)
    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(size=(3000, 4)).astype(np.float32)
    steps = []
    original = cpu.GridStep.__init__

    def recorded(self, *args, **kwargs):
        steps.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(cpu.GridStep, "__init__", recorded)
    init = X[:12].copy()
    fits = {}
    for path in ("resident", "blocks"):
        if path == "blocks":
            monkeypatch.setattr(ArraySource, "resident", lambda self: None)
        fits[path] = TransformerKMeans(12, init=init, n_init=1, tol=0, max_iter=60,
                                       device="cpu").fit(X)
    (step,) = [s for s in steps if s._may]  # the pass's steps keep none
    assert step.bounds is not None and step._wait > cpu.BOUNDS_AFTER  # stopped, restarted
    for name in ("cluster_centers_", "labels_", "inertia_", "n_iter_"):
        np.testing.assert_array_equal(getattr(fits["resident"], name),
                                      getattr(fits["blocks"], name))
