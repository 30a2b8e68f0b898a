"""The fit's thread helpers: the shared BLAS limit, torch's threads within a fit, and the
in-order parallel map."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from skformer._fit.blas import one_blas_thread
from skformer.nn.threads import ordered_map, pool, torch_threads


def blas_threads():
    return {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}


def test_one_blas_thread_inside_nested_and_restored_after():
    # (Limits set from other threads are threadpoolctl's to arbitrate: only the thread
    # that first set OpenBLAS's limit may change it, by design.)
    before = blas_threads()
    with one_blas_thread():
        assert blas_threads() <= {1}
        with one_blas_thread():
            assert blas_threads() <= {1}
        assert blas_threads() <= {1}
    assert blas_threads() == before


def test_ordered_map_keeps_the_order_and_runs_nested_calls_in_place():
    assert list(ordered_map(lambda v: v * v, range(7), threads=3)) == [v * v for v in range(7)]

    def outer(i):  # on a pool thread: a nested map must not wait on the same pool
        return sum(ordered_map(lambda v: v + i, range(5), threads=2))

    futures = [pool(2).submit(outer, i) for i in range(2)]
    assert [f.result(timeout=30) for f in futures] == [10, 15]


def test_ordered_map_parts_write_into_one_array():
    out = np.zeros(10, dtype=int)

    def part(s):
        out[s : s + 5] = s

    for _ in ordered_map(part, [0, 5], threads=2):
        pass
    assert out.tolist() == [0] * 5 + [5] * 5


def test_cpu_threads_is_the_count_before_the_hold():
    from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

    from skformer._fit.blas import cpu_threads

    before = _openmp_effective_n_threads()
    with one_blas_thread():
        with one_blas_thread():  # nested: the outermost reading holds
            assert cpu_threads() == before
    assert cpu_threads() == before


def test_an_openmp_blas_does_not_take_the_fits_threads():
    # faiss-cpu ships an OpenMP OpenBLAS sharing scikit-learn's OpenMP runtime: holding
    # that BLAS to one thread also sets OpenMP's count to one. The fit's own threads
    # keep the count from before the hold. In a child: importing faiss changes the
    # process.
    pytest.importorskip("faiss")
    code = (
        "import faiss\n"
        "from sklearn.utils._openmp_helpers import _openmp_effective_n_threads as n\n"
        "from skformer._fit.blas import cpu_threads, one_blas_thread\n"
        "before = n()\n"
        "with one_blas_thread():\n"
        "    print(before, n(), cpu_threads())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "OMP_NUM_THREADS": "2"}).stdout.split()
    before, inside, ours = map(int, out)
    assert ours == before == 2


# ------------------------------------------------------- torch's threads within a fit


@pytest.fixture
def user_torch_threads():
    """The user's torch thread count set to 3 (more than one, whatever the machine),
    put back after the test."""
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    yield 3
    torch.set_num_threads(before)


def test_torch_threads_comes_back_after_the_block_and_an_error():
    before = torch.get_num_threads()
    other = 1 if before != 1 else 2
    with torch_threads(other):
        assert torch.get_num_threads() == other
        with torch_threads(before):
            assert torch.get_num_threads() == before
        assert torch.get_num_threads() == other
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError, match="inside"), torch_threads(other):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before


def test_the_hold_runs_torch_on_one_thread_and_restores_the_users(user_torch_threads):
    with one_blas_thread():
        assert torch.get_num_threads() == 1
        with one_blas_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == user_torch_threads
    with pytest.raises(RuntimeError, match="inside"), one_blas_thread():
        raise RuntimeError("inside")
    assert torch.get_num_threads() == user_torch_threads


def test_the_hold_keeps_the_users_openmp_limit(user_torch_threads):
    # threadpoolctl's OpenMP limit also reaches torch's OpenMP: the hold keeps within it
    # and leaves it as it found it; threadpoolctl then restores the user's count.
    with threadpool_limits(limits=1, user_api="openmp"):
        assert torch.get_num_threads() == 1
        with one_blas_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == user_torch_threads


def _spy(monkeypatch, module, name: str) -> list[int]:
    """``module.name`` wrapped to record torch's thread count at each call."""
    seen: list[int] = []
    original = getattr(module, name)

    def spied(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spied)
    return seen


def test_a_learned_fit_steps_on_one_torch_thread_and_restores_the_users(
        user_torch_threads, monkeypatch):
    import skformer._fit.learned as learned
    from skformer import TransformerKMeans

    seen = _spy(monkeypatch, learned, "learned_search")
    X = np.random.default_rng(0).normal(size=(200, 3))
    TransformerKMeans(3, random_state=0, learned_starts=1).fit(X)
    assert seen and set(seen) == {1}
    assert torch.get_num_threads() == user_torch_threads


def test_batch_k_means_steps_on_one_torch_thread_and_restores_the_users(
        user_torch_threads, monkeypatch):
    import importlib

    from skformer import batch_k_means

    batch = importlib.import_module("skformer.batch")
    seen = _spy(monkeypatch, batch, "run_batch_lloyd")
    X = np.random.default_rng(0).normal(size=(4, 30, 2))
    batch_k_means(X, 3, random_state=0)
    assert seen and set(seen) == {1}
    assert torch.get_num_threads() == user_torch_threads
    with pytest.raises(ValueError, match="X must be a 3-D array"):
        batch_k_means(X[0], 3)
    assert torch.get_num_threads() == user_torch_threads


def test_a_fit_in_another_thread_leaves_this_threads_torch_setting(user_torch_threads):
    import threading

    from skformer import TransformerKMeans

    X = np.random.default_rng(0).normal(size=(200, 3))
    counts = []

    def fit_then_count():
        TransformerKMeans(3, random_state=0, learned_starts=1).fit(X)
        counts.append(torch.get_num_threads())

    worker = threading.Thread(target=fit_then_count)
    worker.start()
    worker.join(timeout=300)
    assert counts == [user_torch_threads]  # the worker's own count, restored
    assert torch.get_num_threads() == user_torch_threads
    later = threading.Thread(target=lambda: counts.append(torch.get_num_threads()))
    later.start()
    later.join()
    assert counts[-1] == user_torch_threads  # a new thread starts from the user's
