"""The fit's thread helpers: the shared BLAS limit and the in-order parallel map."""

import numpy as np
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
