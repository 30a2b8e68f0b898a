"""Data sources: one interface over an in-memory array, a memmap and a dask array.

Dimension legend: ``n`` samples, ``m`` rows of a block, ``d`` features, ``k`` clusters.

A fit reads its data through three verbs, whatever the container:

- :meth:`Source.summary`: statistics in one pass (per-feature extremes, the weights,
  finiteness, the per-feature variance for the tolerance);
- :meth:`Source.gather`: rows by index (initial centres, the learned steps' sample);
- :meth:`Source.map_reduce`: a per-block function over row blocks, its results merged
  by a fixed tree (the same sums in the same order every time).

Blocks are handed to the per-block function in the fit frame (see
:class:`~skformer._fit.frame.Frame`) as torch tensors of the data's dtype (a sparse
source: CSR matrices, :mod:`.sparse`), with the weights as float64 (or None when all
are 1). :func:`~skformer._fit.containers.as_source` is the only function that asks what
kind of container it was given.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from .assign import labels_inertia
from .frame import UNIT_RANGE, Frame, power_of_two

__all__ = [
    "ArraySource",
    "Block",
    "DaskSource",
    "Source",
    "Summary",
    "WeightStats",
    "dask_labels",
    "grid_rows",
    "is_dask",
    "merge_tree",
]

# Rows per block: about 2**22 values, large enough that the per-block overhead of a step
# (some thirty tensor operations on a GPU) stays small beside its arithmetic, small
# enough that a memmap's or dask array's block is a modest piece of memory.
_BLOCK_ELEMENTS = 2**22
# Values per part of the block summary (a memmap's, or the fallback).
_SUMMARY_VALUES = 2**20
# Rows per block of the variance of an in-memory array: each block's sums and squares
# are summed in the data's dtype (over at most this many terms), the blocks in float64.
_VARIANCE_ROWS = 2**12
# Blocks merged per node of the reduction tree.
_FAN_IN = 8


def grid_rows(n_samples: int, n_features: int) -> int:
    """Rows per block of every dense source: the fixed grid of rows that a Lloyd step's
    per-block sums follow, whatever the container (about 2**22 values a block, at least
    4096 rows; smaller data are one block: a block costs a step a few dozen torch
    operations).

    Examples
    --------
    >>> grid_rows(1_000_000, 32), grid_rows(100_000, 32), grid_rows(1000, 2)
    (131072, 100000, 4096)
    """
    return max(4096, min(_BLOCK_ELEMENTS // max(1, n_features), n_samples))


def is_dask(X) -> bool:
    """Whether ``X`` is a dask collection (told apart without importing dask)."""
    return type(X).__module__.startswith("dask.")


class WeightStats(NamedTuple):
    """What one pass tells of the sample weights: the one validation of weights that
    every container shares (a NumPy array's weights were also checked up front)."""

    low: float = 1.0
    """The smallest weight (1.0 without weights)."""
    unit: bool = True
    """Whether every weight is 1."""
    nan: bool = False
    inf: bool = False
    nonzero: bool = True
    """Whether some weight is not 0."""

    @classmethod
    def of(cls, w: np.ndarray | None) -> WeightStats:
        """The statistics of weights ``w`` (None: all 1)."""
        if w is None or w.size == 0:
            return cls()
        w = np.asarray(w)
        return cls(float(np.nanmin(w)) if not np.isnan(w).all() else 1.0,
                   bool(np.all(w == 1)), bool(np.isnan(w).any()), bool(np.isinf(w).any()),
                   bool(np.any(w != 0)))

    def merge(self, other: WeightStats) -> WeightStats:
        return WeightStats(min(self.low, other.low), self.unit and other.unit,
                           self.nan or other.nan, self.inf or other.inf,
                           self.nonzero or other.nonzero)

    def check(self, *, negative: bool = False, dtype=np.float64) -> None:
        """Raise KMeans' errors for NaN, infinite, all-zero or (unless ``negative``, as
        in ``score``) negative weights; ``dtype``: the one the weights were cast to (a
        weight too large for it became infinite there, and the message names it)."""
        if self.nan:
            raise ValueError("Input sample_weight contains NaN.")
        if self.inf:
            raise ValueError("Input sample_weight contains infinity or a value too large "
                             f"for {np.dtype(dtype)!r}.")
        if self.low < 0 and not negative:
            raise ValueError("Negative values in data passed to `sample_weight`")
        if not self.nonzero:
            raise ValueError("Sample weights must contain at least one non-zero number.")


class Block(NamedTuple):
    """A block of rows in the fit frame."""

    x: torch.Tensor
    """Rows, shape (m, d), the data's dtype, on the fit's device (a sparse source: a
    ``scipy.sparse.csr_matrix``, on the CPU)."""
    w: torch.Tensor | None
    """Their weights, shape (m,), float64; None when every weight is 1."""
    tokens: torch.Tensor | None = None
    """The rows as tokens ``[x ; 1]``, shape (m, d + 1), sharing ``x``'s memory (a dense
    source): the Lloyd step's products take the centres' norms and the clusters'
    masses along (:func:`~skformer.nn.exact_step`'s ``augmented``)."""


@dataclass(frozen=True)
class Summary:
    """What one pass over the data tells (user frame)."""

    n_samples: int
    lo: np.ndarray | None
    """Per-feature minimum, shape (d,), the data's dtype; None for an in-memory array
    (its fit frame needs only ``top``)."""
    hi: np.ndarray | None
    """Per-feature maximum, shape (d,), the data's dtype; None where ``lo`` is."""
    variance: float
    """Mean over features of the (unweighted) variance, float64 (KMeans' tolerance scale),
    in units of ``2**(2 * variance_power)``."""
    mean: np.ndarray
    """Per-feature mean, shape (d,), the data's dtype: for a NumPy array (or memmap)
    exactly ``X.mean(axis=0)``, which KMeans centres by; for a dask array the float64
    mean of the blocks, rounded to the dtype."""
    finite: bool
    weights: WeightStats
    top: float | None = None
    """The largest ``|x - mean|`` over rows and features, each difference rounded to the
    data's dtype (None: from ``lo`` and ``hi``)."""
    variance_power: int = 0
    """``variance`` is the data's times ``2**(-2 * variance_power)`` (kept in the fit
    frame's scale, where data near 1e200 have a finite variance; an in-memory summary's
    centred copy is scaled alike)."""

    def frame(self, unit_within: float | None = None) -> Frame:
        """The fit frame: translated by ``mean``, scaled by :meth:`Frame.of`'s rule."""
        if self.top is not None:
            return Frame.centred(self.mean, self.top, unit_within=unit_within)
        return Frame.of(self.lo, self.hi, self.mean, unit_within=unit_within)


def merge_tree(parts: list, combine: Callable[[list], Any]):
    """``combine`` applied by a fixed tree of fan-in ``_FAN_IN`` (order-deterministic):
    how every pass merges its blocks' results."""
    while len(parts) > 1:
        parts = [combine(parts[i : i + _FAN_IN]) if len(parts[i : i + _FAN_IN]) > 1
                 else parts[i] for i in range(0, len(parts), _FAN_IN)]
    return parts[0]


def sum_parts(parts: Sequence):
    """Elementwise sum of tuples (or single arrays/tensors/floats), in list order."""
    first = parts[0]
    if isinstance(first, tuple):
        items = [sum_parts(list(group)) for group in zip(*parts, strict=True)]
        return type(first)(*items) if hasattr(first, "_fields") else tuple(items)
    if first is None:
        return None
    return functools.reduce(lambda a, b: a + b, parts)


def _block_summary(x: np.ndarray, w: np.ndarray | None):
    """Per-block statistics: count, min, max, mean and sum of squared deviations (float64,
    merged by Chan's formula) in units of ``2**power``, finiteness, the weights'
    :class:`WeightStats`, and ``power``.

    ``power`` is :func:`~skformer._fit.frame.power_of_two` of the block's largest
    magnitude where it lies outside ``[2**-32, 2**32]`` (0 inside: the plain
    arithmetic): the rows are scaled by ``2**-power`` first, so neither their sum
    (data near the largest float) nor their squares (data beyond 1e154) overflow. A
    power of two commutes with rounding, so the mean is the unscaled one's."""
    finite = bool(np.isfinite(x).all())
    lo, hi = x.min(0), x.max(0)
    power = 0
    if finite and x.size:
        power = power_of_two(float(max(-np.min(lo), np.max(hi))), UNIT_RANGE)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        x64 = x.astype(np.float64, copy=False)
        if power:
            x64 = np.ldexp(x64, -power)
        mean = x64.mean(0) if x.shape[0] else np.zeros(x.shape[1])
        m2 = np.square(x64 - mean).sum(0)
    return (x.shape[0], lo, hi, mean, m2, finite, WeightStats.of(w), power)


def _combine_summaries(parts):
    """Merge block statistics (Chan's formula), in the units of the largest power."""
    top = max(part[7] for part in parts)
    n, lo, hi, mean, m2, finite, weights = _rescaled(parts[0], top)
    with np.errstate(over="ignore", invalid="ignore"):
        for part in parts[1:]:
            nb, lob, hib, meanb, m2b, finb, weightsb = _rescaled(part, top)
            total = n + nb
            delta = meanb - mean
            mean = mean + delta * (nb / total)
            m2 = m2 + m2b + np.square(delta) * (n * nb / total)
            n, lo, hi = total, np.minimum(lo, lob), np.maximum(hi, hib)
            finite, weights = finite and finb, weights.merge(weightsb)
    return (n, lo, hi, mean, m2, finite, weights, top)


def _rescaled(part, power: int) -> tuple:
    """Block statistics of power ``part[7]`` in units of ``2**power`` (>= it), less the
    power (the plain statistics where the powers agree)."""
    n, lo, hi, mean, m2, finite, weights, own = part
    if own != power:
        with np.errstate(under="ignore"):
            mean, m2 = np.ldexp(mean, own - power), np.ldexp(m2, 2 * (own - power))
    return n, lo, hi, mean, m2, finite, weights


def _summary(stats, mean: np.ndarray | None = None) -> Summary:
    """The :class:`Summary` of merged block statistics; ``mean``: the mean to translate by
    (default, or where it is not finite: the blocks' float64 mean, rounded to the
    dtype)."""
    n, lo, hi, mean64, m2, finite, weights, power = stats
    with np.errstate(over="ignore", invalid="ignore"):
        variance = float(np.mean(m2 / n))
        if mean is None or not np.all(np.isfinite(mean)):
            # within the data's range, so finite when they are
            mean = np.ldexp(mean64, power).astype(lo.dtype)
    return Summary(n, lo, hi, variance, mean, finite, weights, variance_power=power)


def _array_summary(X: np.ndarray, w: np.ndarray | None, unit_within: float | None
                   ) -> tuple[Summary, np.ndarray] | None:
    """The :class:`Summary` of an in-memory array, and the rows less the mean, scaled by
    ``2**-power``, as tokens ``[(x - mean) 2**-power ; 1]`` (n, d + 1), where ``power``
    (the summary's ``variance_power``) is :func:`~skformer._fit.frame.power_of_two` of
    their largest magnitude with ``unit_within`` (the fit frame's scale: the tokens are
    the fit frame's copy). None where the mean is not finite (the block summary then
    says why).

    ``X.mean(axis=0)`` is KMeans' mean, in X's dtype, whose finiteness tells X's (NaN and
    infinities carry into it). Then one copy, the rows less the mean, gives the rest: its
    largest magnitude and, once scaled (so no square overflows), the variance, from the
    sums and squares of each block of :data:`_VARIANCE_ROWS` rows (one batched product
    ``T^T T`` in the data's dtype) summed in float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean = X.mean(axis=0)
    if X.shape[0] == 0 or not np.all(np.isfinite(mean)):
        return None
    n, d = X.shape
    tokens = np.empty((n, d + 1), dtype=X.dtype)
    rows = tokens[:, :d]
    with np.errstate(over="ignore", invalid="ignore"):
        np.subtract(X, mean, out=rows)
    tokens[:, d] = 1
    top = float(max(-rows.min(initial=0.0), rows.max(initial=0.0)))
    if not np.isfinite(top):  # the differences overflow: the block summary
        return None
    power = power_of_two(top, unit_within)
    if power:
        np.ldexp(rows, -power, out=rows)
    squares, sums = _column_moments(tokens)
    with np.errstate(over="ignore", invalid="ignore"):
        variance = float(np.mean(squares / n - np.square(sums / n)))
    return Summary(n, None, None, variance, mean, True, WeightStats.of(w), top, power), tokens


def _column_moments(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature sums of squares and sums (float64, (d,) each) of the rows of tokens
    ``[x ; 1]`` (n, d + 1). float64 rows, or one block of :data:`_VARIANCE_ROWS` rows, by
    NumPy; float32 rows in blocks of :data:`_VARIANCE_ROWS` rows summed in float32, the
    blocks in float64, by one batched product ``T^T T`` (its diagonal and last row, on
    torch's threads: float32 sums by NumPy would be slower; in float64 NumPy's own sums
    beat the product)."""
    n, e = tokens.shape
    if n <= _VARIANCE_ROWS or tokens.dtype == np.float64:
        rows = tokens[:, : e - 1]
        return (np.einsum("ij,ij->j", rows, rows).astype(np.float64),
                rows.sum(0).astype(np.float64))
    whole, rest = divmod(n, _VARIANCE_ROWS)
    t = torch.from_numpy(tokens)
    blocks = t[: whole * _VARIANCE_ROWS].view(whole, _VARIANCE_ROWS, e)
    gram = torch.bmm(blocks.transpose(1, 2), blocks).double().sum(0)
    if rest:
        tail = t[whole * _VARIANCE_ROWS :]
        gram += (tail.T @ tail).double()
    g = gram.numpy()
    return np.diagonal(g)[: e - 1].copy(), g[e - 1, : e - 1].copy()


def column_mean(X: np.ndarray) -> np.ndarray:
    """``X.mean(axis=0)`` as KMeans computes it (the data's dtype); in float64 where that
    overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean = X.mean(axis=0)
        if not np.all(np.isfinite(mean)):
            mean = X.mean(axis=0, dtype=np.float64).astype(X.dtype)
    return mean


# The most rows :meth:`ArraySource.distinct_rows` sorts.
_DISTINCT_ROWS = 10**6


class Source(ABC):
    """Row blocks of a data set, and the fit frame they are handed out in."""

    n_samples: int
    n_features: int
    dtype: np.dtype
    device: torch.device
    frame: Frame | None = None
    in_memory: bool = False
    """Whether :meth:`gather` of all rows is cheap (the data are held in memory): the
    initialisation then runs on every row, as KMeans'."""
    sparse: bool = False
    """Whether blocks hold CSR rows (:mod:`.sparse`)."""
    walkable: bool = False
    """Whether this process can walk the blocks of a pass in order (:meth:`blocks`):
    rows held in memory or a memmap, not a dask array's, whose blocks live on its
    workers."""
    block_rows: int | None = None
    """Rows per block of a pass (the last block may hold fewer)."""
    unit_within: float | None = UNIT_RANGE
    """See :meth:`Frame.of`: data whose largest ``|x - mean|`` lies within ``[2**-32,
    2**32]`` keep the scale 1 (no pass to scale a copy; a power of two rescales every
    float exactly, so the scale changes no result), others are scaled to ``[1, 2)``."""

    @abstractmethod
    def summary(self) -> Summary:
        """One pass: :class:`Summary` of the data (user frame)."""

    @abstractmethod
    def gather(self, index: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """Rows ``index`` (None: all rows) in the fit frame, and their weights (None when
        all weights are 1), as NumPy arrays."""

    @abstractmethod
    def map_reduce(self, func: Callable, combine: Callable[[list], Any], *args):
        """``combine`` over ``func(block, *args)`` for every :class:`Block`, by a fixed
        tree; ``args`` are plain values (tensors, arrays, numbers)."""

    def set_frame(self, frame: Frame) -> None:
        """Hand out blocks in ``frame`` from now on."""
        self.frame = frame

    @abstractmethod
    def drop_weights(self) -> None:
        """Forget the weights (the summary found them all equal to 1)."""

    def resident(self) -> Block | None:
        """All the rows of a pass as one block, when they are held in memory (a step may
        then run on them directly, block by block of :attr:`block_rows` rows, in one
        call); None otherwise."""
        return None

    def held_tokens(self) -> np.ndarray | None:
        """All the rows in the fit frame as tokens ``[x ; 1]`` (n, d + 1), C-ordered, in
        the data's dtype, where this process holds them as one NumPy array (an in-memory
        array); None otherwise (a memmap, a sparse matrix, a dask array)."""
        return None

    def blocks(self) -> Iterator[Block]:
        """The blocks of one pass in order, where :attr:`walkable` (work that visits the
        rows one by one, in order, needs it)."""
        raise NotImplementedError(f"{type(self).__name__} blocks are not walked here")

    def distinct_rows(self, at_least: int) -> bool | None:
        """Whether the data hold at least ``at_least`` distinct rows, where one cheap look
        tells (None: not known; a source that is not an in-memory array does not sort
        its rows for it)."""
        return None

    @abstractmethod
    def final(self, centers: np.ndarray):
        """Labels (an array, or a lazy dask array), inertia and cluster sizes of
        user-frame ``centers`` (k, d), with ``predict``'s and ``score``'s arithmetic."""


class ArraySource(Source):
    """An in-memory NumPy array (``cache=True``: its fit-frame copy is kept, one pass
    fewer per step) or a memmap read block by block (``cache=False``: no copy of the
    data is ever held, each pass transforms its blocks on the fly).
    """

    walkable = True

    def __init__(self, X: np.ndarray, w: np.ndarray | None, device: torch.device,
                 *, cache: bool = True, block_rows: int | None = None):
        self.X, self.w = X, w
        self.n_samples, self.n_features = X.shape
        self.dtype = X.dtype
        self.device = torch.device(device)
        self.cache = cache
        self.in_memory = cache
        self.block_rows = block_rows or grid_rows(*X.shape)
        self._fitted: np.ndarray | None = None
        # The in-memory summary and its centred copy until set_frame takes the copy.
        self._centred: tuple | None = None
        self._w = None if w is None else torch.from_numpy(np.asarray(w, dtype=np.float64))

    def drop_weights(self) -> None:
        self.w = self._w = None

    def _slices(self):
        return [slice(s, s + self.block_rows) for s in range(0, self.n_samples, self.block_rows)]

    def summary(self) -> Summary:
        self._centred = None
        if self.cache:  # in memory: a few vectorised passes over the whole array
            found = _array_summary(self.X, self.w, self.unit_within)
            if found is not None:
                self._centred = found
                return found[0]
        # In parts of about 2**20 values (its float64 temporaries stay small beside a
        # memmap's block), independent of the grid of the Lloyd steps.
        rows = max(1, _SUMMARY_VALUES // max(1, self.n_features))
        parts = [_block_summary(np.asarray(self.X[s : s + rows]),
                                None if self.w is None else self.w[s : s + rows])
                 for s in range(0, self.n_samples, rows)]
        stats = merge_tree(parts, _combine_summaries)
        return _summary(stats, column_mean(self.X) if stats[5] else None)

    def set_frame(self, frame: Frame) -> None:
        super().set_frame(frame)
        # The fit-frame copy, as tokens [x ; 1] (one column more than X): the summary's
        # rows less the mean, rescaled in place if need be, where the frame translates
        # by that mean.
        centred, self._centred = self._centred, None
        if not self.cache:
            self._fitted = None
        elif centred is not None and np.array_equal(frame.offset, centred[0].mean):
            summary, tokens = centred
            if frame.power != summary.variance_power:
                rows = tokens[:, : self.n_features]
                np.ldexp(rows, summary.variance_power - frame.power, out=rows)
            self._fitted = tokens
        else:
            self._fitted = frame.apply(self.X, ones=True)

    def _tokens(self, s) -> np.ndarray:
        """Rows ``s`` in the fit frame as tokens ``[x ; 1]`` (m, d + 1)."""
        if self._fitted is not None:
            return self._fitted[s]
        return self.frame.apply(np.asarray(self.X[s]), ones=True)

    def _rows(self, s) -> np.ndarray:
        return self._tokens(s)[..., : self.n_features]

    def gather(self, index):
        rows = self._rows(slice(None) if index is None else index)
        w = None if self.w is None else np.asarray(
            self.w if index is None else self.w[index], dtype=np.float64)
        return rows, w

    def blocks(self):
        """The blocks of one pass, in order (an in-memory source can be walked)."""
        for s in self._slices():
            yield _block(self._tokens(s), None if self._w is None else self._w[s],
                         self.device)

    def map_reduce(self, func, combine, *args):
        return merge_tree([func(block, *args) for block in self.blocks()], combine)

    def held_tokens(self) -> np.ndarray | None:
        return self._fitted

    def resident(self) -> Block | None:
        if self._fitted is None:
            return None
        return _block(self._fitted, self._w, self.device)

    def distinct_rows(self, at_least: int) -> bool | None:
        # Sorting the rows is a pass worth making (on a warning's path) up to this size.
        if not self.cache or self.n_samples > _DISTINCT_ROWS:
            return None
        return bool(np.unique(self.X, axis=0).shape[0] >= at_least)

    def final(self, centers):
        labels, inertia = labels_inertia(self.X, centers, self.w)
        return labels, inertia, np.bincount(labels, minlength=centers.shape[0])


class DaskSource(Source):
    """A dask array (and optional dask or NumPy weights), block by block on the active
    scheduler; every pass is one graph. The rows are rechunked to the grid of
    :func:`grid_rows`, so each block is the block an in-memory fit of the same data
    sums (the same float32 partial sums, the same result)."""

    def __init__(self, X, w, device: torch.device):
        n, d = (int(s) for s in X.shape)
        rows = grid_rows(n, d)
        grid = (rows,) * (n // rows) + ((n % rows,) if n % rows else ())
        if tuple(X.chunks[0]) != grid:
            X = X.rechunk({0: grid})
            w = None if w is None else w.rechunk((grid,))
        self.X, self.w = X, w
        self.n_samples, self.n_features = n, d
        self.dtype = X.dtype
        self.device = torch.device(device)
        self._xs = list(X.to_delayed().ravel())
        self._ws = [None] * len(self._xs) if w is None else list(w.to_delayed().ravel())

    def drop_weights(self) -> None:
        self.w, self._ws = None, [None] * len(self._xs)

    @staticmethod
    def _dask():
        import dask

        return dask

    def summary(self) -> Summary:
        dask = self._dask()
        parts = [dask.delayed(_block_summary)(xb, wb) for xb, wb in
                 zip(self._xs, self._ws, strict=True)]
        (stats,) = dask.compute(_delayed_tree(dask, parts, _combine_summaries))
        return _summary(stats)

    def gather(self, index):
        dask = self._dask()
        if index is None:
            rows, w = dask.compute(self.X, self.w)
        else:
            rows, w = dask.compute(self.X[index], None if self.w is None else self.w[index])
        rows = self.frame.apply(np.asarray(rows))
        return rows, None if w is None else np.asarray(w, dtype=np.float64)

    def map_reduce(self, func, combine, *args):
        dask = self._dask()
        parts = [dask.delayed(_dask_block)(func, xb, wb, self.frame, self.device, args)
                 for xb, wb in zip(self._xs, self._ws, strict=True)]
        (result,) = dask.compute(_delayed_tree(dask, parts, combine))
        return result

    def final(self, centers):
        dask = self._dask()
        parts = [dask.delayed(_final_block)(xb, wb, centers)
                 for xb, wb in zip(self._xs, self._ws, strict=True)]
        (inertia, sizes), = dask.compute(_delayed_tree(dask, parts, sum_parts))
        return dask_labels(self.X, centers), float(inertia), sizes

    @property
    def n_blocks(self) -> int:
        return len(self._xs)


def _final_block(xb, wb, centers):
    labels, inertia = labels_inertia(np.asarray(xb), centers,
                                     None if wb is None else np.asarray(wb))
    return np.array(inertia), np.bincount(labels, minlength=centers.shape[0])


def _labels_block(xb, centers):
    return labels_inertia(np.asarray(xb), centers)[0]


def dask_labels(X, centers):
    """Lazy nearest-centre labels (int32) of a dask array's rows."""
    return X.map_blocks(_labels_block, centers=centers, dtype=np.int32, drop_axis=1,
                        meta=np.empty((0,), dtype=np.int32))


def _delayed_tree(dask, parts, combine):
    while len(parts) > 1:
        parts = [dask.delayed(combine)(parts[i : i + _FAN_IN])
                 if len(parts[i : i + _FAN_IN]) > 1 else parts[i]
                 for i in range(0, len(parts), _FAN_IN)]
    return parts[0]


def _block(tokens: np.ndarray, w: torch.Tensor | None, device) -> Block:
    """The :class:`Block` of fit-frame tokens ``[x ; 1]`` (m, d + 1) and weights."""
    t = torch.from_numpy(tokens).to(device)
    return Block(t[:, :-1], None if w is None else w.to(device), t)


def _dask_block(func, xb, wb, frame: Frame, device, args):
    w = None if wb is None else torch.from_numpy(np.asarray(wb, dtype=np.float64))
    return func(_block(frame.apply(np.asarray(xb), ones=True), w, device), *args)
