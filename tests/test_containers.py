"""One fit for every container: a NumPy array, a memmap and a dask array give the same
clustering.

The fit layer reads the data through one interface; its statistics are computed in a way
that does not depend on how the rows are split (extremes for the frame, float64 sums for
the centres), so the three fits agree: identical labels, centres within 1e-6 relative,
the same number of steps. Sample weights, float32 and a forced empty cluster included.
The dask fits run on a LocalCluster of two worker processes.
"""


import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning

from skformer import ExactLloydTransformer, TransformerKMeans

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


def containers(X, tmp_path):
    """The same rows as an array, a memmap on disk, and a dask array of unequal blocks."""
    path = tmp_path / f"X_{X.dtype}.dat"
    mm = np.memmap(path, dtype=X.dtype, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    mm = np.memmap(path, dtype=X.dtype, mode="r", shape=X.shape)
    n = X.shape[0]
    rows = (n // 3, n // 2, n - n // 3 - n // 2)
    return {"numpy": X, "memmap": mm, "dask": da.from_array(X, chunks=(rows, X.shape[1]))}


def data(seed, dtype, n=6000, d=5, k=6):
    X, _ = make_blobs(n, n_features=d, centers=k, cluster_std=2.5, center_box=(-20, 20),
                      random_state=seed)
    return X.astype(dtype)


def assert_same(fits):
    ref = fits["numpy"]
    labels = np.asarray(ref.labels_)
    for name, fit in fits.items():
        np.testing.assert_array_equal(np.asarray(fit.labels_), labels, err_msg=name)
        np.testing.assert_allclose(fit.cluster_centers_, ref.cluster_centers_, rtol=1e-6,
                                   atol=1e-6 * np.abs(ref.cluster_centers_).max(),
                                   err_msg=name)
        assert fit.cluster_centers_.dtype == ref.cluster_centers_.dtype
        assert fit.n_iter_ == ref.n_iter_, name
        assert fit.inertia_ == pytest.approx(ref.inertia_, rel=1e-6), name


def fit_all(make, X, tmp_path, **fit_params):
    out = {}
    for name, data_ in containers(X, tmp_path).items():
        fit = make().fit(data_, **fit_params)
        if name == "dask":
            fit.labels_ = fit.labels_.compute()
        out[name] = fit
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_exact_same_in_every_container(client, tmp_path, global_random_seed, dtype,
                                       weighted):
    X = data(global_random_seed, dtype)
    w = np.random.default_rng(global_random_seed).uniform(0.2, 3, X.shape[0]) \
        if weighted else None
    fits = fit_all(lambda: ExactLloydTransformer(6, init="random", n_init=2,
                                                 random_state=global_random_seed),
                   X, tmp_path, sample_weight=w)
    assert_same(fits)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transformer_kmeans_same_in_every_container(client, tmp_path, global_random_seed,
                                                    dtype):
    X = data(global_random_seed, dtype)
    w = np.random.default_rng(global_random_seed).uniform(0.2, 3, X.shape[0])
    fits = fit_all(lambda: TransformerKMeans(6, random_state=global_random_seed,
                                             max_context=500, learned_starts=1, device="cpu"),
                   X, tmp_path, sample_weight=w)
    assert_same(fits)
    for fit in fits.values():
        assert (fit.selected_run_, fit.n_learned_steps_) == (
            fits["numpy"].selected_run_, fits["numpy"].n_learned_steps_)


def test_empty_cluster_kept_in_every_container(client, tmp_path):
    """A far-away initial centre gets no point and keeps its place everywhere."""
    X = data(0, np.float64, n=3000, d=2, k=3)
    init = np.vstack([X[:3], [[1e3, 1e3]]])
    with pytest.warns(ConvergenceWarning, match=r"distinct clusters \(3\) found smaller"):
        fits = fit_all(lambda: ExactLloydTransformer(4, init=init), X, tmp_path)
    assert_same(fits)
    for fit in fits.values():
        np.testing.assert_allclose(fit.cluster_centers_[3], [1e3, 1e3], rtol=1e-12)
        assert 3 not in np.asarray(fit.labels_)


def test_large_memmap_is_never_copied(tmp_path):
    """A memmap is read block by block: the fit's peak memory stays far below its size."""
    import tracemalloc

    X = data(1, np.float32, n=2_000_000, d=8, k=4)  # 64 MB; a block's buffers, ~25 MB
    mm = containers(X, tmp_path)["memmap"]
    init = X[:4]
    # Load the compiled kernels first: loading them costs a process about 28 MB of Python
    # objects once, whatever the data (traced here, they would pass for a copy).
    ExactLloydTransformer(4, init=init, max_iter=3).fit(X[:50_000])
    tracemalloc.start()
    ExactLloydTransformer(4, init=init, max_iter=3).fit(mm)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 0.6 * X.nbytes
