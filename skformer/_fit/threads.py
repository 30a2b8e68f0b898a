"""Threads: one BLAS thread while a fit or an assignment runs (as KMeans' Lloyd loop
does), and the pool of threads that blocks of NumPy and SciPy work run on.

NumPy's BLAS (OpenBLAS in NumPy's and SciPy's wheels) keeps its worker threads
spinning for a while after each multi-threaded call, waiting for the next. A fit's
Lloyd steps run in torch's own thread pool; on a machine with as many cores as torch
has threads, OpenBLAS's spinning threads take cores from torch's, and every torch
operation waits for the operating system to hand them back. Measured on 2 cores (n =
1e5, d = 32, k = 10, 20 steps): a fit took 175 ms after a NumPy product, 101 ms with
NumPy's BLAS held to one thread; KMeans' own fits got faster too. The NumPy products of
a fit (k-means++ on few candidates, the final assignment in chunks of rows) gain little
from more BLAS threads, so the whole fit, ``predict`` and ``score`` run with one.
"""

from __future__ import annotations

import collections
import functools
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

__all__ = ["in_order", "one_blas_thread", "pool"]


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
    with _controller().limit(limits=1, user_api="blas"):
        yield


def pool(threads: int) -> ThreadPoolExecutor:
    """A process-wide pool of ``threads`` threads, kept between passes and fits: threads
    made anew for every pass would allocate their temporaries in fresh memory each time
    (a fifth of a step's time at n=1e5, d=1e4). Keyed by the process too: a forked child
    (multiprocessing, joblib) inherits the pool object but not its threads."""
    return _process_pool(threads, os.getpid())


@functools.lru_cache(maxsize=4)
def _process_pool(threads: int, pid: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(threads, thread_name_prefix="skformer")


def in_order(executor: ThreadPoolExecutor, func, items: list, ahead: int):
    """``func(item)`` for each item, in order, at most ``ahead`` submitted at a time.

    Examples
    --------
    >>> list(in_order(pool(2), lambda v: v * v, [1, 2, 3], ahead=2))
    [1, 4, 9]
    """
    pending: collections.deque = collections.deque()
    for item in items:
        pending.append(executor.submit(func, item))
        if len(pending) >= ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()
