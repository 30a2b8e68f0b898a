"""A process-wide pool of threads for work that releases the GIL (NumPy, SciPy), an
in-order map over it, and a block with torch's intra-op threads set."""

from __future__ import annotations

import collections
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import torch

__all__ = ["in_order", "ordered_map", "pool", "torch_threads"]

_PREFIX = "skformer"


def pool(threads: int) -> ThreadPoolExecutor:
    """A process-wide pool of ``threads`` threads, kept between passes and fits: threads
    made anew for every pass would allocate their temporaries in fresh memory each time,
    and faulting those pages in is a sizeable part of a step on wide sparse data. Keyed
    by the process too: a forked child (multiprocessing, joblib) inherits the pool
    object but not its threads."""
    return _process_pool(threads, os.getpid())


@functools.lru_cache(maxsize=4)
def _process_pool(threads: int, pid: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(threads, thread_name_prefix=_PREFIX)


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


def ordered_map(func, items, threads: int):
    """``func(item)`` for each item, in order: on ``threads`` threads of :func:`pool`,
    at most one item per thread in flight; in the calling thread where ``threads`` is 1
    or less, or where the caller is itself one of the pool's threads (it would wait on
    work queued behind it).

    Examples
    --------
    >>> list(ordered_map(lambda v: v + 1, range(4), threads=2))
    [1, 2, 3, 4]
    """
    if threads <= 1 or threading.current_thread().name.startswith(_PREFIX):
        return map(func, items)
    return in_order(pool(threads), func, items, threads)


@contextmanager
def torch_threads(threads: int):
    """Within this block torch's intra-op threads are ``threads``; the count from before
    comes back on exit, whatever happens inside. Nested blocks each restore their own.

    Torch's count belongs to the calling thread (torch's OpenMP and MKL settings are per
    thread; a thread that starts while the block runs takes the block's count on its
    first parallel operation), so a block changes no other thread's work.

    Examples
    --------
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    before = torch.get_num_threads()
    if threads == before:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
