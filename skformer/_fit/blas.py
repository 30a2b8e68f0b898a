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
"""

from __future__ import annotations

import functools
from contextlib import contextmanager

__all__ = ["one_blas_thread"]


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
