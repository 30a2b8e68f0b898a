"""The inputs of :func:`~skformer.batch_k_means`: checked, and cut into blocks.

Dimension legend: ``b`` problems, ``n`` rows (padded), ``k`` clusters, ``d`` features,
``p`` problems of a block.

Whatever the caller passes (a 3-D array or tensor with optional ``lengths``, or a list
of 2-D arrays), the problems end up as :class:`Problems`: per-problem sizes and
clusters, and a way to build each :class:`ProblemBlock` of problems in the working frame on
demand (one block at a time is held, so the extra memory stays bounded whatever ``b``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import torch

from .._base import SUPPORTED_DEVICES, resolve_device

__all__ = ["ProblemBlock", "Problems", "as_problems"]

# Values of one block of problems (its working copy): 2**22 float32 values are 16 MiB.
_BLOCK_VALUES = 2**22
# float64 rows whose largest magnitude exceeds this are summed scaled by a power of two
# (their squares could overflow; below it the sums are the plain ones).
_UNIT_RANGE = 2.0**32
# A power of two this large means the rows' range overflows float64 (data near 1.7e308):
# the frame's arithmetic then runs in halves.
_MAXEXP = np.finfo(np.float64).maxexp
# Largest exponent of one factor of :func:`ldexp` (2**1000 and 2**-1000 are normal floats).
_STEP = 1000


def ldexp(v: torch.Tensor, exponent) -> torch.Tensor:
    """``v * 2**exponent`` (float64; ``exponent`` an int or int tensor broadcasting
    with ``v``) for any exponent: :func:`torch.ldexp` multiplies by the float
    ``2**exponent``, which is inf beyond 2**1023 and 0 below 2**-1074 (data near 1e308 or
    1e-308 need such exponents, and ``0 * inf`` is NaN). Factors of at most ``2**1000``
    keep each step exact; moving one way, only the last can round (a subnormal result).
    Within ``[-1000, 1000]`` it is one :func:`torch.ldexp`.

    Examples
    --------
    >>> import torch
    >>> ldexp(torch.tensor([2.0**-1074, 0.0], dtype=torch.float64), 1100)
    tensor([67108864.,        0.], dtype=torch.float64)
    """
    e = torch.as_tensor(exponent, device=v.device).double()
    while True:
        step = e.clamp(-_STEP, _STEP)
        v = torch.ldexp(v, step)
        e = e - step
        if not bool((e != 0).any()):
            return v


@dataclass
class ProblemBlock:
    """Problems ``index`` in the working frame: each translated by the mean of its rows
    and scaled by a power of two (exact), so that squared distances neither cancel nor
    overflow; padded rows are zeros."""

    index: np.ndarray
    """Global indices of the block's problems, shape (p,)."""
    x: torch.Tensor
    """Rows, shape (p, n, d)."""
    mask: torch.Tensor | None
    """Which rows are points, shape (p, n) bool; None when none is padding."""
    weight: torch.Tensor | None
    """Sample weights, shape (p, n) (0 on padding); None when all are 1."""
    lengths: torch.Tensor
    """Points per problem, shape (p,) int64."""
    ks: torch.Tensor
    """Clusters per problem, shape (p,) int64."""
    offset: torch.Tensor
    """Each problem's mean, shape (p, d), float64."""
    power: torch.Tensor
    """Each problem's power of two, shape (p,) int64: working = (user - offset) / 2**power."""
    tol: torch.Tensor
    """Each problem's absolute tolerance on the squared centre shift (working frame),
    shape (p,) float64: ``tol`` times the mean variance of its features."""

    def to_working(self, c: torch.Tensor) -> torch.Tensor:
        """Centres (p, k, d) of the user's frame in the working frame (``x``'s dtype)."""
        power = self.power.view(-1, 1, 1)
        c, offset = c.to(torch.float64), self.offset.unsqueeze(1)
        out = ldexp(c - offset, -power)
        if bool(self._halves.any()):  # c - offset may overflow: its halves do not
            halves = ldexp(ldexp(c, -1) - ldexp(offset, -1), 1 - power)
            out = torch.where(self._halves.view(-1, 1, 1), halves, out)
        return out.to(self.x.dtype)

    def to_user(self, c: torch.Tensor) -> torch.Tensor:
        """Centres (p, k, d) of the working frame in the user's frame (float64; finite:
        a centre lies within the range of its problem's rows)."""
        power = self.power.view(-1, 1, 1)
        c, offset = c.double(), self.offset.unsqueeze(1)
        out = ldexp(c, power) + offset
        if bool(self._halves.any()):  # c * 2**power may overflow where the sum does not
            halves = ldexp(ldexp(c, power - 1) + ldexp(offset, -1), 1)
            out = torch.where(self._halves.view(-1, 1, 1), halves, out)
        return out

    @property
    def _halves(self) -> torch.Tensor:
        """Which problems' frames run in halves (p,) bool: a power of float64's
        ``maxexp``, where the range of the rows overflows."""
        return self.power >= _MAXEXP

    def squared_to_user(self, v: torch.Tensor) -> torch.Tensor:
        """Squared distances (p,) of the working frame in the user's units (inf only
        where the value exceeds float64's range)."""
        return ldexp(v.double(), 2 * self.power)

    @property
    def centre_mask(self) -> torch.Tensor | None:
        """Which of the ``k_max`` centres are centres, shape (p, k_max) bool; None when
        every problem has ``k_max``."""
        k_max = int(self.ks.max())
        if bool((self.ks == k_max).all()):
            return None
        return torch.arange(k_max, device=self.ks.device) < self.ks.unsqueeze(-1)


@dataclass
class Problems:
    """The checked problems of one call, and how to build their blocks."""

    n_problems: int
    n_features: int
    lengths: np.ndarray
    """Points per problem (b,)."""
    ks: np.ndarray
    """Clusters per problem (b,)."""
    dtype: torch.dtype
    device: torch.device
    form: str
    """How the caller passed X: "numpy", "torch", "list" (of arrays) or "torch-list"
    (results take that form)."""
    source_device: torch.device
    """Where the caller's tensors live (results go back there)."""
    data: torch.Tensor | list
    """The rows (user frame, ``device``, ``dtype``): a (b, n, d) tensor, or a list of
    one (n_i, d) tensor per problem."""
    weights: torch.Tensor | list | None
    """Their weights (float64): a (b, n) tensor, a list of (n_i,) tensors, or None
    when every weight is 1."""
    blocks: list[np.ndarray]
    """Problem indices of each block."""

    def block(self, index: np.ndarray, tol: float) -> ProblemBlock:
        """The working copy of problems ``index`` (the rows' mean and scale, in one pass)."""
        lengths = self.lengths[index]
        dev = self.device
        lengths_t = torch.as_tensor(lengths, device=dev)
        x = _gather(self.data, index, int(lengths.max()))
        n = x.shape[1]
        mask = None
        if bool((lengths_t < n).any()):
            mask = torch.arange(n, device=dev) < lengths_t.unsqueeze(-1)
            x = x.masked_fill_(~mask.unsqueeze(-1), 0.0)  # padding may hold anything
        weight = None
        if self.weights is not None:
            weight = _gather(self.weights, index, n)
            if mask is not None:
                weight = weight.masked_fill_(~mask, 0.0)
        offset, power, variance, scaled = _frame(x, lengths_t)
        # (x - offset) / 2**power in one rounding: the scaling is exact.
        if self.dtype == torch.float64 and bool((power < -_STEP).any()):
            # (rows near the smallest floats: 2**-power may exceed float64's range; two
            # exact scalings, then the one rounding of the subtraction)
            x = ldexp(x, -power.view(-1, 1, 1)) - ldexp(offset, -power.view(-1, 1)).unsqueeze(1)
        else:
            scale = torch.ldexp(torch.ones_like(offset[:, 0]), -power.double())  # (p,)
            if self.dtype == torch.float32 and bool((power.abs() > 120).any()):
                x = ((x.double() - offset.unsqueeze(1)) * scale.view(-1, 1, 1)).float()
            else:
                shift = (offset * scale.unsqueeze(-1)).to(self.dtype).unsqueeze(1)
                x = torch.addcmul(-shift, x, scale.to(self.dtype).view(-1, 1, 1), out=x)
        if mask is not None:
            x.masked_fill_(~mask.unsqueeze(-1), 0.0)
        tol_abs = ldexp(variance.mean(-1) * tol, 2 * (scaled - power))
        return ProblemBlock(index, x, mask, weight, lengths_t,
                     torch.as_tensor(self.ks[index], device=dev), offset, power, tol_abs)


def _gather(data: torch.Tensor | list, index: np.ndarray, n: int) -> torch.Tensor:
    """A new tensor of problems ``index`` of ``data`` (a tensor, whose problems are
    consecutive in a block, or a list), padded with zeros to ``n`` rows."""
    if isinstance(data, torch.Tensor):
        return data[int(index[0]) : int(index[-1]) + 1, :n].clone()
    first = data[int(index[0])]
    out = first.new_zeros((len(index), n, *first.shape[1:]))
    for j, i in enumerate(index):
        out[j, : data[i].shape[0]] = data[i]
    return out


def _frame(x: torch.Tensor, lengths: torch.Tensor):
    """Each problem's mean (its dtype's rounding of the float64 mean, as float64), power
    of two, per-feature variance (float64, in units of ``2**(2 * scaled)``) and
    ``scaled`` (p,) int64, of rows ``x`` (p, n, d) whose padded rows are zeros. The sums
    add the rows in order (a scatter-add), so a problem's numbers do not depend on its
    padding.

    float64 rows of a problem whose largest magnitude exceeds ``2**32`` are summed scaled
    by the power of two ``2**-scaled`` of it (0 otherwise, and for float32 rows, whose
    float64 sums cannot overflow): neither their sum (data near 1.7e308) nor their
    squares (beyond 1e154) overflow, and since a power of two commutes with rounding
    the mean is the unscaled one's. Where the range of the rows overflows, the power is
    float64's ``maxexp`` (the :class:`ProblemBlock` then computes in halves)."""
    p, n, d = x.shape
    owner = torch.arange(p, device=x.device).repeat_interleave(n)
    with torch.no_grad():
        hi, lo = x.amax(1).double(), x.amin(1).double()  # (p, d)
    scaled = torch.zeros(p, dtype=torch.long, device=x.device)
    if x.dtype == torch.float64:
        big = torch.maximum(hi.abs(), lo.abs()).amax(-1)
        scaled = torch.where(big > _UNIT_RANGE, torch.frexp(big).exponent.long() - 1, scaled)
    rows = x.reshape(-1, d).double()
    copy = x.dtype != torch.float64
    if bool((scaled != 0).any()):
        rows, copy = torch.ldexp(rows, -scaled.double()[owner].unsqueeze(-1)), True
    total = torch.zeros((p, d), dtype=torch.float64, device=x.device).index_add_(0, owner, rows)
    # (``rows`` is a copy unless X is float64 and unscaled: square that copy in place)
    sq = rows.square_() if copy else rows.square()
    squares = torch.zeros_like(total).index_add_(0, owner, sq)
    count = lengths.double().unsqueeze(-1)
    mean = total / count
    variance = (squares / count - mean.square()).clamp_min(0.0)
    if bool((scaled != 0).any()):
        mean = torch.ldexp(mean, scaled.double().unsqueeze(-1))  # within the rows' range
    offset = mean.to(x.dtype).double()  # KMeans translates by the mean in X's dtype
    top = torch.maximum((hi - offset).abs(), (lo - offset).abs()).amax(-1)  # (p,)
    power = torch.where(top > 0, torch.frexp(top).exponent.long() - 1,
                        torch.zeros_like(top, dtype=torch.long))
    over = torch.isinf(top)
    if bool(over.any()):  # the range overflows: its half does not (halving is exact)
        half = torch.maximum((hi / 2 - offset / 2).abs(), (lo / 2 - offset / 2).abs()).amax(-1)
        power = torch.where(over, torch.frexp(half).exponent.long(), power)
    return offset, power, variance, scaled


def _is_tensor(X) -> bool:
    return isinstance(X, torch.Tensor)


def _float_dtype(dtype) -> torch.dtype:
    """float32 stays float32, float64 stays; anything else becomes float64."""
    if dtype in (torch.float32, np.float32, np.dtype(np.float32)):
        return torch.float32
    return torch.float64


def _resolve_device(device, X) -> torch.device:
    """The device of the work: ``"auto"`` is a tensor's own (which must be a supported
    one), or CUDA when present; else :func:`skformer._base.resolve_device`'s checks."""
    if isinstance(device, str) and device == "auto":
        first = X[0] if isinstance(X, (list, tuple)) and X else X
        if not _is_tensor(first):
            return resolve_device("auto")
        if first.device.type not in SUPPORTED_DEVICES:
            raise ValueError(
                f"X is on device {str(first.device)!r}, which is not supported: skformer "
                "runs on device types 'cpu' and 'cuda' (move X there, or pass device=).")
        return first.device
    return resolve_device(device)


def _as_tensor(a, dtype: torch.dtype | None, device: torch.device, what: str) -> torch.Tensor:
    """``a`` (array-like or tensor) as a tensor on ``device`` (no copy where possible)."""
    if _is_tensor(a):
        if a.is_meta:
            raise ValueError(f"{what} is a tensor on device 'meta', which holds no values "
                             "and is not supported: skformer runs on device types 'cpu' and "
                             "'cuda'.")
        t = a.detach()
    else:
        arr = np.asarray(a)
        if arr.dtype == object:
            raise ValueError(f"{what} must be numeric; got an array of objects (ragged "
                             "rows? pass a list of 2-D arrays for problems of different "
                             "lengths).")
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise ValueError(f"{what} must be numeric, got dtype {arr.dtype}.")
        if np.issubdtype(arr.dtype, np.complexfloating):
            raise ValueError("Complex data not supported")
        t = torch.from_numpy(np.ascontiguousarray(arr))
    if dtype is not None:
        t = t.to(dtype)
    return t.to(device)


def _per_problem_ints(value, b: int, name: str, low: int) -> np.ndarray:
    """An int or one int per problem, each >= ``low``, as an int64 array (b,)."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        arr = np.full(b, int(value), dtype=np.int64)
    else:
        arr = np.asarray(value.cpu() if _is_tensor(value) else value)
        if arr.shape != (b,) or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{name} must be an int or {b} ints (one per problem), got "
                             f"{value!r:.80}.")
        arr = arr.astype(np.int64)
    bad = np.flatnonzero(arr < low)
    if bad.size:
        raise ValueError(f"{name} must be >= {low}; problem {bad[0]} has {arr[bad[0]]}.")
    return arr


def _first(flags: torch.Tensor) -> int | None:
    """Index of the first True of a (b,) bool tensor, or None."""
    hit = torch.nonzero(flags)
    return int(hit[0, 0]) if hit.numel() else None


def _per_problem(data, lengths: np.ndarray, test, chunk: int = 256) -> torch.Tensor:
    """``test(rows)`` of each problem's rows (a bool per problem), computed over
    ``chunk`` problems at a time; padding is left out."""
    if isinstance(data, torch.Tensor):
        out = []
        n = data.shape[1]
        for s in range(0, data.shape[0], chunk):
            rows = data[s : s + chunk]
            valid = torch.arange(n, device=rows.device) < torch.as_tensor(
                lengths[s : s + chunk], device=rows.device).unsqueeze(-1)
            out.append(test(rows, valid))
        return torch.cat(out).cpu()
    return torch.tensor([bool(test(r.unsqueeze(0), torch.ones(1, r.shape[0], dtype=torch.bool,
                                                                device=r.device)))
                         for r in data])


def _check_finite(data, lengths: np.ndarray) -> None:
    def bad(rows, valid):
        # A row's sum is finite when its values are (or it overflowed: then look closer).
        finite = torch.isfinite(rows.sum(-1))
        if not bool(finite.all()):
            finite = torch.isfinite(rows).all(-1)
        return (~finite & valid).any(-1)

    i = _first(_per_problem(data, lengths, bad))
    if i is not None:
        raise ValueError(f"Input X contains NaN or infinity (problem {i}).")


def _check_weights(weights, lengths: np.ndarray, dtype: torch.dtype) -> None:
    """KMeans' errors for the weights of each problem, as KMeans casts them to X's
    ``dtype``: a weight too large for a float32 X becomes infinite there (and its
    centres NaN), one too small for it becomes 0."""
    name = np.dtype(np.float32 if dtype == torch.float32 else np.float64)
    checks = [
        (lambda w, v: (torch.isnan(w) & v).any(-1), "Input sample_weight contains NaN"),
        (lambda w, v: (torch.isinf(w.to(dtype)) & v).any(-1),
         f"Input sample_weight contains infinity or a value too large for {name!r}"),
        (lambda w, v: ((w < 0) & v).any(-1), "Negative values in data passed to "
                                             "`sample_weight`"),
        (lambda w, v: ~((w.to(dtype) != 0) & v).any(-1), "Sample weights must contain at "
                                                          "least one non-zero number"),
    ]
    for test, message in checks:
        i = _first(_per_problem(weights, lengths, test))
        if i is not None:
            raise ValueError(f"{message} (problem {i}).")


def _blocks(lengths: np.ndarray, d: int, sort: bool) -> list[np.ndarray]:
    """Problem indices of each block: consecutive problems (sorted by length for a list,
    so a block's padding stays small) of about ``_BLOCK_VALUES`` values."""
    order = np.argsort(lengths, kind="stable") if sort else np.arange(len(lengths))
    blocks, start = [], 0
    while start < len(order):
        n = int(lengths[order[start]])
        stop = start + 1
        while stop < len(order):
            n_next = max(n, int(lengths[order[stop]]))
            if (stop + 1 - start) * n_next * d > _BLOCK_VALUES:
                break
            n, stop = n_next, stop + 1
        blocks.append(order[start:stop])
        start = stop
    return blocks


def as_problems(X, n_clusters, *, lengths, sample_weight, device) -> Problems:
    """Check the inputs of :func:`~skformer.batch_k_means` and describe the problems."""
    dev = _resolve_device(device, X)
    if isinstance(X, (list, tuple)):
        if len(X) == 0:
            raise ValueError("X is an empty list: pass at least one problem.")
        if lengths is not None:
            raise ValueError("lengths is for a 3-D X; a list of arrays has its lengths.")
        form = "torch-list" if _is_tensor(X[0]) else "list"
        source = X[0].device if _is_tensor(X[0]) else torch.device("cpu")
        first = X[0] if _is_tensor(X[0]) else np.asarray(X[0])
        dtype = _float_dtype(first.dtype)
        rows = []
        for i, a in enumerate(X):
            t = _as_tensor(a, dtype, dev, f"X[{i}]")
            if t.ndim != 2:
                raise ValueError(f"X[{i}] must be a 2-D array (n_samples, n_features), got "
                                 f"{t.ndim}-D.")
            rows.append(t)
        d = rows[0].shape[1]
        bad = [i for i, r in enumerate(rows) if r.shape[1] != d]
        if bad:
            raise ValueError(f"Every problem must have the same number of features: X[0] "
                             f"has {d}, X[{bad[0]}] has {rows[bad[0]].shape[1]}.")
        n_rows = np.array([r.shape[0] for r in rows], dtype=np.int64)
    else:
        form = "torch" if _is_tensor(X) else "numpy"
        source = X.device if _is_tensor(X) else torch.device("cpu")
        dtype = _float_dtype(X.dtype if _is_tensor(X) else np.asarray(X).dtype)
        t = _as_tensor(X, dtype, dev, "X")
        if t.ndim != 3:
            raise ValueError(f"X must be a 3-D array (n_problems, n_samples, n_features) or "
                             f"a list of 2-D arrays, got a {t.ndim}-D array.")
        b, n, d = t.shape
        if lengths is None:
            n_rows = np.full(b, n, dtype=np.int64)
        else:
            ln = np.asarray(lengths.cpu() if _is_tensor(lengths) else lengths)
            if ln.shape != (b,) or not np.issubdtype(ln.dtype, np.integer):
                raise ValueError(f"lengths must hold {b} ints (one per problem), got shape "
                                 f"{ln.shape} and dtype {ln.dtype}.")
            wrong = np.flatnonzero((ln < 0) | (ln > n))
            if wrong.size:
                raise ValueError(f"lengths must be within [0, {n}] (the rows of X); "
                                 f"problem {wrong[0]} has {ln[wrong[0]]}.")
            n_rows = ln.astype(np.int64)
        data = t
    if form.endswith("list"):
        data = rows
    b = len(n_rows)
    if d == 0:
        raise ValueError("Found array with 0 feature(s) while a minimum of 1 is required.")
    empty = np.flatnonzero(n_rows == 0)
    if empty.size:
        raise ValueError(f"Found problem {empty[0]} with 0 sample(s) while a minimum of 1 "
                         "is required.")
    ks = _per_problem_ints(n_clusters, b, "n_clusters", 1)
    short = np.flatnonzero(n_rows < ks)
    if short.size:
        i = short[0]
        raise ValueError(f"n_samples={n_rows[i]} should be >= n_clusters={ks[i]} "
                         f"(problem {i}).")
    _check_finite(data, n_rows)
    weights = _weights(sample_weight, data, n_rows, dev, dtype)
    return Problems(b, d, n_rows, ks, dtype, dev, form, source, data, weights,
                    _blocks(n_rows, d, sort=isinstance(data, list)))


def _weights(sample_weight, data, n_rows: np.ndarray, dev, dtype: torch.dtype):
    """Per-problem float64 weights in ``data``'s form (a (b, n) tensor or a list), or
    None when every weight is 1; checked as cast to X's ``dtype``."""
    if sample_weight is None:
        return None
    b = len(n_rows)
    if isinstance(sample_weight, Real) and not isinstance(sample_weight, bool):
        sample_weight = [np.full(m, float(sample_weight)) for m in n_rows]
    if isinstance(data, list):
        if not isinstance(sample_weight, (list, tuple)) or len(sample_weight) != b:
            raise ValueError(f"sample_weight must be a list of {b} arrays (one per problem) "
                             "when X is a list.")
        ws = [_as_tensor(w, torch.float64, dev, f"sample_weight[{i}]").reshape(-1)
              for i, w in enumerate(sample_weight)]
        for i, w in enumerate(ws):
            if w.shape[0] != n_rows[i]:
                raise ValueError(f"sample_weight[{i}] has {w.shape[0]} values for "
                                 f"{n_rows[i]} samples (problem {i}).")
    else:
        if isinstance(sample_weight, (list, tuple)):
            sample_weight = _stacked_weights(sample_weight, n_rows, data.shape[1])
        ws = _as_tensor(sample_weight, torch.float64, dev, "sample_weight")
        if tuple(ws.shape) != tuple(data.shape[:2]):
            raise ValueError(f"sample_weight must have shape {tuple(data.shape[:2])} (X's "
                             f"first two axes), got {tuple(ws.shape)}.")
    _check_weights(ws, n_rows, dtype)
    ones = _per_problem(ws, n_rows, lambda w, v: ((w == 1) | ~v).all(-1))
    return None if bool(ones.all()) else ws


def _stacked_weights(sample_weight, n_rows: np.ndarray, n: int) -> np.ndarray:
    """A list of per-problem weights for a 3-D X, as one (b, n) float64 array (zeros on
    padding). Problem ``i``'s entry holds one weight per point (``n_rows[i]``, its
    ``lengths`` entry) or per row of X (``n``, padding included, as a (b, n) array
    does); any other length is an error, never padded or cut."""
    b = len(n_rows)
    if len(sample_weight) != b:
        raise ValueError(f"sample_weight must hold {b} arrays (one per problem), got "
                         f"{len(sample_weight)}.")
    out = np.zeros((b, n), dtype=np.float64)
    for i, w in enumerate(sample_weight):
        w = np.asarray(w.cpu() if _is_tensor(w) else w)
        if w.ndim != 1:
            raise ValueError(f"sample_weight[{i}] must be 1-D, got shape {w.shape} "
                             f"(problem {i}).")
        m = int(n_rows[i])
        if w.shape[0] not in (m, n):
            expected = f"{m}" if m == n else f"{m} (lengths[{i}]) or {n} (the rows of X)"
            raise ValueError(f"sample_weight[{i}] has {w.shape[0]} values, expected "
                             f"{expected} (problem {i}).")
        out[i, : w.shape[0]] = _as_tensor(w, torch.float64, torch.device("cpu"),
                                          f"sample_weight[{i}]").numpy()
    return out


def warn_explicit_init(n_init: int) -> int:
    """KMeans' rule: explicit initial centres make one run (with a warning)."""
    if n_init != 1:
        warnings.warn("Explicit initial center position passed: performing only one init "
                      f"in batch_k_means instead of n_init={n_init}.", RuntimeWarning,
                      stacklevel=3)
    return 1
