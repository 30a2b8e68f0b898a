"""The exact transformer's fused step, batched and masked: the one Lloyd kernel.

Dimension legend: ``b`` problems, ``n`` points, ``k`` clusters, ``d`` features.

With hand-set weights and hard attention, one layer of the exact transformer computes,
per problem: A1, each point's nearest centre (lowest index on ties); A3, each centre's
(weighted) mean of the points that chose it; A2 and A4 erase the previous scratch and
centre (spec Theorem 2.1). :func:`exact_step` computes what that layer computes without
building its tokens: the labels and each cluster's sum and mass (the new centres are
``sums / mass``, a cluster of zero mass keeps its centre), and on request the inertia.
Every driver of a Lloyd step calls it: :func:`skformer.batch_k_means` on many problems
at once, the one-problem fit layer on each block of rows (a batch of one), and
:class:`~skformer.nn.ExactLloydModel`'s fused path.

Problems may differ in size: a row ``mask`` (b, n) marks the points of each problem
(the others are padding) and a ``centre_mask`` (b, k) its centres. Padding changes
nothing: padded rows get label -1 and no weight, padded centres are never nearest and
keep their value. Padded rows must hold finite numbers (zeros, say): a product with
them is computed and then given weight 0.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch

from .threads import ordered_map

__all__ = ["StepStats", "Workspace", "exact_step", "ordered_sum"]

# Elements of one (problems, rows, k) block of distances: 16 MiB of float32. Fewer,
# larger blocks pay the few dozen operations of a block less often.
_BUDGET = 2**22
# Up to this many centres, a cluster's sum is one (k, rows) x (rows, d) product with the
# rows' one-hot labels (the fastest segment sum for few clusters); beyond it, a scatter-add.
_ONE_HOT_MAX = 12
# A long block's one-hot sums are this many products over parts of its rows.
_SPLIT = 4
# Up to this many centres, the nearest centre comes from the minimum's value and an
# equality (see _nearest), cheaper than an argmin over few centres; beyond it, from an
# argmin (NumPy's on the CPU), which costs the same at about 100 centres.
_EQ_MAX = 64
# Rows per thread, at least, of a parallel argmin (beyond _EQ_MAX centres).
_ARGMIN_ROWS = 2**14


class StepStats(NamedTuple):
    """What one exact step computes, per problem."""

    labels: torch.Tensor
    """Nearest centre of each point (lowest index on ties), shape (b, n), int64; -1 on
    padded rows."""
    sums: torch.Tensor | None
    """Weighted sum of each cluster's points, shape (b, k, d); None with
    ``update=False``."""
    mass: torch.Tensor | None
    """Total weight of each cluster, shape (b, k), the dtype of ``sums``; None with
    ``update=False``."""
    inertia: torch.Tensor | None
    """``sum_i w_i |x_i - c_{label_i}|^2`` from the literal differences (each point's
    squared distance in ``x``'s dtype, their sum in float64), shape (b,); None unless
    asked for."""

    def centres(self, c: torch.Tensor) -> torch.Tensor:
        """The updated centres (b, k, d), ``c``'s dtype: each cluster's mean, or its
        previous centre ``c`` where its mass is 0."""
        mass = self.mass.unsqueeze(-1)
        new = self.sums / torch.where(mass > 0, mass, torch.ones_like(mass))
        return torch.where(mass > 0, new.to(c.dtype), c)


class Workspace:
    """Reusable scratch buffers for repeated calls of :func:`exact_step`.

    A step allocates a few blocks of megabytes (distances, one-hot labels, a float64
    copy of the rows). Fresh ones on every call cost page faults, and on the CPU they
    grow the heap by fragmentation (peak memory grows step after step). A workspace
    hands out the same
    memory call after call. Not thread-safe: one per thread.

    Examples
    --------
    >>> import torch
    >>> ws = Workspace()
    >>> ws.get("a", (2, 3), torch.float32, torch.device("cpu")).shape
    torch.Size([2, 3])
    """

    def __init__(self):
        self._buffers: dict = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: torch.dtype,
            device: torch.device) -> torch.Tensor:
        """An uninitialised tensor of ``shape``, sharing memory with the last one of
        this ``name``, dtype and device."""
        key, size = (name, dtype, device), math.prod(shape)
        flat = self._buffers.get(key)
        if flat is None or flat.numel() < size:
            flat = self._buffers[key] = torch.empty(size, dtype=dtype, device=device)
        return flat[:size].view(shape)


def _empty(workspace: Workspace | None, name: str, shape, dtype, device) -> torch.Tensor:
    if workspace is None:
        return torch.empty(shape, dtype=dtype, device=device)
    return workspace.get(name, tuple(shape), dtype, device)


def _argmin(dist: torch.Tensor) -> torch.Tensor:
    """Index of the first minimum over the last axis of ``dist`` (..., k): NumPy's on the
    CPU, several times faster than torch's over rows of tens to thousands of values; on
    torch's threads in parts of rows where there are many (NumPy's argmin runs on one)."""
    if dist.device.type != "cpu" or dist.requires_grad:
        return torch.min(dist, dim=-1).indices
    values = dist.numpy()
    threads = min(torch.get_num_threads(), values[..., 0].size // _ARGMIN_ROWS)
    if threads <= 1:
        return torch.from_numpy(values.argmin(-1))
    flat = values.reshape(-1, values.shape[-1])
    out = np.empty(flat.shape[0], dtype=np.int64)
    step = -(-flat.shape[0] // threads)

    def part(s: int) -> None:
        np.argmin(flat[s : s + step], axis=-1, out=out[s : s + step])

    for _ in ordered_map(part, range(0, flat.shape[0], step), threads):
        pass
    return torch.from_numpy(out.reshape(values.shape[:-1]))


def _with_two_rows(x: torch.Tensor) -> torch.Tensor:
    """Rows ``x`` (p, m, d), with a zero row appended when ``m`` is 1: the
    matrix-vector product that one row would take sums in another order than the
    matrix product of a block, and a row's distances must not depend on its block."""
    return torch.cat([x, torch.zeros_like(x)], dim=1) if x.shape[1] == 1 else x


def _nearest(x: torch.Tensor, c_m2: torch.Tensor, c_sq: torch.Tensor, codes_dtype,
             workspace: Workspace | None, *, augmented: bool, labels: bool = True
             ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Nearest centre of rows ``x`` (p, m, e) among centres ``c_m2 = -2 c`` (p, k, d)
    with squared norms ``c_sq`` (p, k): labels (p, m), lowest index on ties (None when
    not asked for and not needed), and (up to 64 centres) their one-hot codes
    (p, k, m) in ``codes_dtype``. ``e`` is ``d``, or ``d + 1`` for tokens ``[x ; 1]``
    (``augmented``), whose product with ``[-2 c ; |c|^2]`` is the distance itself.

    Up to 64 centres the distances ``|c|^2 - 2 x.c`` are laid out centres-major
    (p, k, m): their minimum over the centres is a vectorised reduction across rows, and
    the codes are the equality of each distance with it (exact ties keep the first
    centre), several times faster than an argmin with indices over a short axis.
    Beyond, rows-major and an argmin (NumPy's on the CPU)."""
    p, m, _ = x.shape
    k = c_m2.shape[1]
    xx = _with_two_rows(x)
    cc = torch.cat([c_m2, c_sq.unsqueeze(-1)], dim=-1) if augmented else c_m2
    if k > _EQ_MAX:
        out = _empty(workspace, "distances", (p, xx.shape[1], k), x.dtype, x.device)
        if p == 1:  # the 2-D product: BLAS's threads (a batch of one runs on one)
            torch.mm(xx[0], cc[0].T, out=out[0])
        else:
            torch.bmm(xx, cc.transpose(1, 2), out=out)
        if not augmented:
            out.add_(c_sq.unsqueeze(1))
        return _argmin(out[:, :m]).to(x.device), None
    shape = (p, k, xx.shape[1])
    dist = torch.bmm(cc, xx.transpose(1, 2),
                     out=_empty(workspace, "distances", shape, x.dtype, x.device))
    if not augmented:
        dist.add_(c_sq.unsqueeze(-1))
    dist = dist[..., :m]
    low = torch.amin(dist, 1, keepdim=True)
    # the comparison written straight into float codes (a bool result, then a copy,
    # costs five times as much)
    codes = torch.eq(dist, low, out=_empty(workspace, "one_hot", (p, k, m), codes_dtype,
                                           x.device))
    if int(codes.sum()) != p * m:  # exact ties: the first centre only
        codes.mul_(codes.cumsum(1) == 1)
    if not labels:
        return None, codes
    index = torch.arange(k, dtype=codes_dtype, device=x.device).expand(p, 1, k)
    lab = torch.bmm(index, codes).squeeze(1).round_().long()  # exact small integers
    return lab, codes


def ordered_sum(v: torch.Tensor) -> torch.Tensor:
    """Sum over the last axis, term after term in order (a running sum's last value).

    A vectorised sum groups its terms by their position in blocks of the axis's length,
    so the rounding of a problem's sum would depend on how far its row is padded;
    summed in order, trailing zeros leave it unchanged to the bit (on the CPU).

    Examples
    --------
    >>> import torch
    >>> ordered_sum(torch.tensor([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0]]))
    tensor([3., 3.])
    """
    if v.shape[-1] == 0:
        return v.sum(-1)
    return v.cumsum(-1)[..., -1]


def _chunks(b: int, n: int, k: int, budget: int) -> tuple[int, int]:
    """(problems, rows) per block: whole problems while ``rows * k`` fits the budget."""
    if n * k <= budget:
        return max(1, budget // max(1, n * k)), max(n, 1)
    return 1, max(2, budget // k)


@torch.no_grad()
def exact_step(
    x: torch.Tensor,
    c: torch.Tensor,
    *,
    weight: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    centre_mask: torch.Tensor | None = None,
    update: bool = True,
    inertia: bool = False,
    sums_dtype: torch.dtype | None = None,
    budget: int = _BUDGET,
    one_hot: bool | None = None,
    augmented: bool = False,
    labels: bool = True,
    workspace: Workspace | None = None,
) -> StepStats:
    """One exact Lloyd step of every problem of a batch: labels, sums, masses, inertia.

    Parameters
    ----------
    x : Tensor of shape (b, n, d), or (b, n, d + 1) with ``augmented``
        Points; padded rows must be finite.
    c : Tensor of shape (b, k, d)
        Centres, ``x``'s dtype and device.
    weight : Tensor of shape (b, n), default=None
        Non-negative point weights (None: 1).
    mask : bool Tensor of shape (b, n), default=None
        Which rows are points (None: all).
    centre_mask : bool Tensor of shape (b, k), default=None
        Which centres are centres (None: all); every problem needs one.
    update : bool, default=True
        Compute the sums and masses (False: labels, and inertia if asked, only).
    inertia : bool, default=False
        Also compute each problem's inertia under the labels.
    sums_dtype : torch.dtype, default=None
        Dtype of the sums and masses (None: ``x``'s). float64 sums of float32 points do
        not depend on how the rows are split into blocks (beyond float64 rounding).
    budget : int, default=2**22
        Largest (problems, rows, k) block of distances computed at once.
    one_hot : bool, default=None
        How a cluster's sum is made: True, one (k, rows) x (rows, d) product with the
        one-hot labels (the fastest for few clusters); False, a scatter-add of the rows
        in their order, which gives the same bits whatever the blocks and the padding;
        None, the product up to 12 clusters.
    augmented : bool, default=False
        ``x`` holds tokens ``[x ; 1]`` (a last column of ones): the distance product
        with ``[-2 c ; |c|^2]`` carries the centres' norms, and the sums' product with
        the one-hot codes the clusters' masses (two passes fewer over every block).
    labels : bool, default=True
        Return the labels (False: ``labels`` is None, unless the sums or the inertia
        need them anyway).
    workspace : Workspace, default=None
        Scratch buffers to reuse (for repeated calls); None allocates.

    Returns
    -------
    StepStats

    Notes
    -----
    The nearest centre is the argmin over ``j`` of ``|c_j|^2 - 2 x.c_j`` (one batched
    matrix product per block, as scikit-learn's Lloyd iteration), in ``x``'s dtype; a
    padded centre's ``|c_j|^2`` is infinite. Each problem's numbers depend on its own
    rows and centres only, never on the other problems of the batch; its labels do not
    depend on the blocks either, nor (with ``one_hot=False``) its sums.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [1.0], [10.0], [0.0]]])   # (b, n, d); last row padding
    >>> c = torch.tensor([[[0.0], [9.0], [50.0]]])           # (b, k, d)
    >>> out = exact_step(x, c, mask=torch.tensor([[True, True, True, False]]),
    ...                  centre_mask=torch.tensor([[True, True, False]]), inertia=True)
    >>> out.labels
    tensor([[ 0,  0,  1, -1]])
    >>> out.centres(c).ravel()
    tensor([ 0.5000, 10.0000, 50.0000])
    >>> out.inertia
    tensor([0.5000], dtype=torch.float64)
    """
    b, n, e = x.shape
    k, d = c.shape[-2:]
    if e != d + augmented:
        raise ValueError(f"x has {e} columns for centres of {d} features"
                         + (" (augmented: one more, the ones)" if augmented else "") + ".")
    sums_dtype = sums_dtype or x.dtype
    c_sq = c.square().sum(-1)
    if centre_mask is not None:
        c_sq = c_sq.masked_fill(~centre_mask, float("inf"))
    c_m2 = -2.0 * c  # exact: a power of two
    w = None if weight is None else weight.to(sums_dtype)
    if mask is not None:
        w = mask.to(sums_dtype) if w is None else w * mask
    one_hot = k <= _ONE_HOT_MAX if one_hot is None else one_hot
    keep = labels or inertia or (update and not (one_hot and k <= _EQ_MAX))
    out_labels = torch.empty((b, n), dtype=torch.long, device=x.device) if keep else None
    acc = mass = None
    if update:  # with tokens [x ; 1], the masses are the last column of the sums
        acc = torch.zeros((b, k, e), dtype=sums_dtype, device=x.device)
        mass = acc[..., d] if augmented else torch.zeros((b, k), dtype=sums_dtype,
                                                         device=x.device)
    total = torch.zeros(b, dtype=torch.float64, device=x.device) if inertia else None
    per, rows = _chunks(b, n, k, budget)
    for p in range(0, b, per):
        P = slice(p, p + per)
        for s in range(0, n, rows):
            R = slice(s, s + rows)
            xr = x[P, R]
            lab, codes = _nearest(xr, c_m2[P], c_sq[P], sums_dtype, workspace,
                                  augmented=augmented, labels=keep)
            wr = None if w is None else w[P, R]
            if update:
                _accumulate(acc[P], None if augmented else mass[P], xr, lab,
                            codes if one_hot else None, wr, workspace)
            if inertia:
                nearest = c[P].gather(1, lab.unsqueeze(-1).expand(-1, -1, d))
                diff = xr[..., :d] - nearest
                sq = (diff.square().sum(-1) if diff.dtype == torch.float64
                      else diff.square().sum(-1).double())
                total[P] += ordered_sum(sq if wr is None else sq * wr.double())
            if keep:
                if mask is not None:
                    lab = lab.masked_fill(~mask[P, R], -1)
                out_labels[P, R] = lab
    sums = None if acc is None else acc[..., :d]
    return StepStats(out_labels, sums, mass, total)


def _accumulate(sums: torch.Tensor, mass: torch.Tensor | None, x: torch.Tensor,
                lab: torch.Tensor | None, codes: torch.Tensor | None, w: torch.Tensor | None,
                workspace: Workspace | None) -> None:
    """Add the block's per-cluster sums of rows ``x`` (p, m, e) into ``sums`` (p, k, e)
    and the masses into ``mass`` (p, k) (None: the rows are tokens ``[x ; 1]``, whose
    last column sums to the masses), in their dtype (in place): with one-hot ``codes``
    (p, k, m), one (k, m) x (m, e) product per problem; without, a scatter-add of the
    rows in order."""
    p, m, e = x.shape
    k = sums.shape[1]
    if x.dtype != sums.dtype:
        x = _empty(workspace, "rows", x.shape, sums.dtype, x.device).copy_(x)
    if codes is not None:
        if w is not None:
            codes = codes.mul_(w.unsqueeze(1))
        if p == 1 and m >= _SPLIT * 1024:
            # One long (k, m) x (m, e) product runs on one thread (its reduction is the
            # long axis): as _SPLIT products of a part of the rows each, summed.
            part = m // _SPLIT
            head = torch.bmm(codes[0, :, : part * _SPLIT].view(k, _SPLIT, part).transpose(0, 1),
                             x[0, : part * _SPLIT].view(_SPLIT, part, e))
            sums[0] += head.sum(0)
            sums.baddbmm_(codes[:, :, part * _SPLIT :], x[:, part * _SPLIT :])
        else:
            sums.baddbmm_(codes, x)
        if mass is not None:
            mass += codes.sum(-1)
        return
    flat = (lab + k * torch.arange(p, device=x.device).unsqueeze(1)).reshape(-1)
    values = x.reshape(-1, e)
    if w is not None:
        values = values * w.reshape(-1, 1)
    if mass is not None:
        if w is None:
            mass.view(-1).add_(torch.bincount(flat, minlength=p * k).to(mass.dtype))
        else:
            mass.view(-1).index_add_(0, flat, w.reshape(-1).to(mass.dtype))
    sums.view(-1, e).index_add_(0, flat, values)
