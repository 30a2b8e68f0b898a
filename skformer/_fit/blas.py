"""One BLAS thread while a fit or an assignment runs (as KMeans' Lloyd loop does).

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
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager

from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

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
    """Within this block NumPy's and SciPy's BLAS libraries use one thread (restored on
    exit; torch's wheels link their BLAS statically, out of its reach). Also a
    decorator.

    Examples
    --------
    >>> import numpy as np
    >>> with one_blas_thread():
    ...     float(np.ones((2, 2)) @ np.ones(2) @ np.ones(2))
    4.0
    """
    with _lock:
        if _held["count"] == 0:
            _held["threads"] = _openmp_effective_n_threads()
        _held["count"] += 1
    try:
        with _controller().limit(limits=1, user_api="blas"):
            yield
    finally:
        with _lock:
            _held["count"] -= 1
            if _held["count"] == 0:
                _held["threads"] = None
