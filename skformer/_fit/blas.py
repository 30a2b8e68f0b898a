"""One BLAS thread, and one torch thread, while a fit or an assignment runs (as KMeans'
Lloyd loop does for its BLAS).

NumPy's BLAS (OpenBLAS in NumPy's and SciPy's wheels) keeps its worker threads
spinning for a while after each multi-threaded call, waiting for the next. A fit's
Lloyd steps run on threads of their own (the CPU step on skformer's pool, the fused
kernel in torch's); on a machine with as many cores as the step has threads,
OpenBLAS's spinning threads take cores from them, and every step waits for the
operating system to hand them back: on two cores a fit that follows a NumPy product
runs much slower than one with NumPy's BLAS held to one thread, and so do KMeans' own
fits. The NumPy products of a fit (k-means++ on few candidates, the final assignment in
chunks of rows) gain little from more BLAS threads, so the whole fit, ``predict`` and
``score`` run with one.

Where NumPy's BLAS is an OpenMP build sharing scikit-learn's OpenMP runtime (faiss-cpu
ships one), holding it to one thread also holds OpenMP's thread count to one, which is
what KMeans and skformer's own threads read: :func:`cpu_threads` is that count as it was
before the hold.

Torch splits each operation on a large enough tensor over its intra-op threads (OpenMP,
and MKL for its products), which meet at the end of every operation. A fit's torch work
on the CPU (the learned steps; the batched Lloyd steps of
:func:`~skformer.batch_k_means`) is many operations of a few milliseconds or less, each
ending at such a meeting: where another process holds one of the cores, every operation
waits for the operating system to give the thread its core back, and the fit runs many
times slower on two threads than on one, where a quiet machine gains little from the
second, even on the largest blocks. So torch runs on one intra-op thread within the hold,
which never exceeds the user's budget (``torch.set_num_threads``, ``OMP_NUM_THREADS``,
``threadpoolctl``'s limits); the user's torch setting comes back after the fit. The
compiled Lloyd step keeps its own threads (:func:`cpu_threads`): one meeting per step,
not per operation.
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager

from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

from ..nn.threads import torch_threads

__all__ = ["cpu_threads", "one_blas_thread"]

# The OpenMP thread count outside the outermost hold, while any hold is on; a count of
# holds, so concurrent fits (threads of one process) share one reading.
_lock = threading.Lock()
_held = {"count": 0, "threads": None}


def cpu_threads() -> int:
    """The threads a fit's CPU work runs on: scikit-learn's OpenMP thread count (the
    user's ``OMP_NUM_THREADS`` or ``threadpool_limits``), as it was before
    :func:`one_blas_thread` held the BLAS to one."""
    threads = _held["threads"]
    return _openmp_effective_n_threads() if threads is None else threads


@functools.cache
def _controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def one_blas_thread():
    """Within this block NumPy's and SciPy's BLAS libraries use one thread, and so do
    torch's operations (:func:`~skformer.nn.threads.torch_threads`) in the calling
    thread; both are restored on exit. Also a decorator.

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> with one_blas_thread():
    ...     float(np.ones((2, 2)) @ np.ones(2) @ np.ones(2)), torch.get_num_threads()
    (4.0, 1)
    """
    with _lock:
        if _held["count"] == 0:
            _held["threads"] = _openmp_effective_n_threads()
        _held["count"] += 1
    try:
        with torch_threads(1), _controller().limit(limits=1, user_api="blas"):
            yield
    finally:
        with _lock:
            _held["count"] -= 1
            if _held["count"] == 0:
                _held["threads"] = None
