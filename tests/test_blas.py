"""The fit's thread helpers: the shared BLAS limit and the in-order parallel map."""

import os
import subprocess
import sys

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from skformer._fit.blas import one_blas_thread
from skformer.nn.threads import ordered_map, pool


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
