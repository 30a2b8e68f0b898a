"""The k-means objective, its smoothed surrogates and the relative loss (spec §3.2, §3.3).

Dimension legend: ``b`` tasks, ``n`` points, ``k`` centres, ``d`` features.

All functions take batches: points ``x`` of shape (b, n, d) and centres ``c`` of shape
(b, k, d).
"""

from __future__ import annotations

import torch
from entmax import sparsemax

from .nn.model import lloyd_update, nearest_centre

__all__ = [
    "KINDS",
    "kmeans_cost",
    "lloyd_costs",
    "lloyd_step",
    "pairwise_sq_dist",
    "relative_loss",
    "smoothed_kmeans_loss",
]

KINDS = ("ne", "l2")
_REDUCTIONS = ("mean", "sum", "none")


def _check_pair(x: torch.Tensor, c: torch.Tensor) -> None:
    if x.ndim != 3 or c.ndim != 3:
        raise ValueError(
            f"x and c must be 3-D, of shapes (b, n, d) and (b, k, d); got {tuple(x.shape)} "
            f"and {tuple(c.shape)}."
        )
    if x.shape[0] != c.shape[0] or x.shape[2] != c.shape[2]:
        raise ValueError(
            f"x of shape {tuple(x.shape)} and c of shape {tuple(c.shape)} must agree in "
            "the batch (b) and feature (d) dimensions."
        )


def _reduce(values: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    if reduction == "none":
        return values
    raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}.")


def pairwise_sq_dist(x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances from every point to every centre.

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)

    Returns
    -------
    Tensor of shape (b, n, k)
        ``|x_i|^2 - 2 x_i.c_j + |c_j|^2`` (one batched matrix product), clamped at 0.
        Differentiable with respect to both inputs.

    Examples
    --------
    >>> import torch
    >>> pairwise_sq_dist(torch.tensor([[[0.0, 0.0]]]), torch.tensor([[[3.0, 4.0], [0.0, 1.0]]]))
    tensor([[[25.,  1.]]])
    """
    _check_pair(x, c)
    x_sq = x.square().sum(-1, keepdim=True)  # (b, n, 1)
    c_sq = c.square().sum(-1).unsqueeze(-2)  # (b, 1, k)
    cross = torch.baddbmm(x_sq + c_sq, x, c.transpose(-1, -2), alpha=-2.0)
    return cross.clamp_min(0.0)


def _nearest(x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Index of the nearest centre, shape (b, n); lowest index on ties."""
    _check_pair(x, c)
    with torch.no_grad():
        return nearest_centre(x, c)


def kmeans_cost(
    x: torch.Tensor, c: torch.Tensor, sample_weight: torch.Tensor | None = None
) -> torch.Tensor:
    """The k-means objective of every task.

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
    sample_weight : Tensor of shape (n,) or (b, n), default=None
        Weight of each point; None means 1.

    Returns
    -------
    Tensor of shape (b,)
        ``sum_i w_i min_j ||x_i - c_j||^2``.

    Notes
    -----
    The nearest centre is found with :func:`pairwise_sq_dist`; the distance to it is then
    recomputed from the coordinate differences, so a point lying on a centre costs exactly
    0. Differentiable with respect to ``c`` (and ``x``).

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [1.0], [10.0]]])
    >>> kmeans_cost(x, torch.tensor([[[0.0], [10.0]]]))
    tensor([1.])
    """
    labels = _nearest(x, c)
    nearest = c.gather(1, labels.unsqueeze(-1).expand(-1, -1, c.shape[-1]))  # (b, n, d)
    sq = (x - nearest).square().sum(-1)  # (b, n)
    if sample_weight is not None:
        sq = sq * torch.as_tensor(sample_weight, dtype=sq.dtype, device=sq.device)
    return sq.sum(-1)


def smoothed_kmeans_loss(
    x: torch.Tensor,
    c: torch.Tensor,
    *,
    tau: float = 0.1,
    kind: str = "l2",
    reduction: str = "mean",
) -> torch.Tensor:
    """Smoothed k-means loss: expected distance under regularised argmin weights.

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
        Centres, typically a model's output; the loss is differentiable with respect to it.
    tau : float, default=0.1
        Temperature, > 0.
    kind : {"ne", "l2"}, default="l2"
        Regulariser: negative entropy (softmax weights) or squared L2 (sparsemax weights).
    reduction : {"mean", "sum", "none"}, default="mean"
        Over tasks: the mean (the paper's code), the sum (the paper's Algorithm 1), or none.

    Returns
    -------
    Tensor
        A scalar, or of shape (b,) for ``reduction="none"``.

    Notes
    -----
    With ``r_ij = ||x_i - c_j||^2`` the loss of a task is (paper B eqs (26), (29))::

        sum_i <P(r_i / tau), r_i>,   P(z) = softmax(-z) (NE)  or  sparsemax(-z) (L2).

    ``P`` lies on the simplex, so each term is at least ``min_j r_ij``: the loss is an upper
    bound of :func:`kmeans_cost`, tight as ``tau -> 0`` (NE) or once the margin between
    the two nearest centres exceeds ``tau`` (L2). It is *not* ``-tau * logsumexp(-r / tau)``,
    which is a lower bound.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [1.0], [10.0]]])
    >>> c = torch.tensor([[[0.0], [10.0]]], requires_grad=True)
    >>> loss = smoothed_kmeans_loss(x, c, tau=0.1, kind="l2")
    >>> loss
    tensor(1., grad_fn=<MeanBackward0>)
    >>> loss.backward(); c.grad.shape
    torch.Size([1, 2, 1])
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be 'ne' or 'l2', got {kind!r}.")
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau!r}.")
    r = pairwise_sq_dist(x, c)  # (b, n, k)
    z = -r / tau
    weights = torch.softmax(z, dim=-1) if kind == "ne" else sparsemax(z, dim=-1)
    per_task = (weights * r).sum(dim=(-1, -2))
    return _reduce(per_task, reduction)


@torch.no_grad()
def lloyd_step(
    x: torch.Tensor, c: torch.Tensor, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """One Lloyd iteration, with the paper's re-seeding of empty clusters.

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
    generator : torch.Generator, default=None
        If given, a cluster that receives no point is re-seeded with a random point of its
        task (the baseline of the paper's code, spec §2.4). If None, it keeps its centre.

    Returns
    -------
    Tensor of shape (b, k, d)
        The new centres (no gradient).

    Notes
    -----
    Each point goes to its nearest centre (lowest index on ties); each centre moves to the
    mean of its points. With a generator, every call draws ``b * n`` uniforms (whether or
    not a cluster is empty) and takes, per task, the first ``k`` points of the random order
    they define, so the empty clusters of one task get distinct points. The draws happen on
    the generator's device.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [1.0], [10.0]]])
    >>> lloyd_step(x, torch.tensor([[[0.0], [10.0], [50.0]]])).ravel()
    tensor([ 0.5000, 10.0000, 50.0000])
    >>> g = torch.Generator().manual_seed(0)
    >>> new = lloyd_step(x, torch.tensor([[[0.0], [10.0], [50.0]]]), generator=g)
    >>> bool(torch.isin(new[0, 2], x).item())
    True
    """
    _check_pair(x, c)
    b, n, d = x.shape
    k = c.shape[1]
    with torch.no_grad():
        new, labels = lloyd_update(x, c)  # empty clusters keep their centre
    counts = torch.zeros(b, k, dtype=x.dtype, device=x.device).scatter_add_(
        1, labels, torch.ones_like(labels, dtype=x.dtype)
    )
    filled = counts.unsqueeze(-1) > 0
    if generator is not None:
        u = torch.rand(b, n, generator=generator, dtype=torch.float32, device=generator.device)
        pick = u.argsort(dim=1)[:, :k].to(x.device)  # (b, k) distinct points per task
        seeds = x.gather(1, pick.unsqueeze(-1).expand(b, k, d))
        new = torch.where(filled, new, seeds)
    return new.detach()


def lloyd_costs(
    x: torch.Tensor,
    c: torch.Tensor,
    n_steps: int,
    *,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """k-means cost along ``n_steps`` Lloyd iterations (the multi-step baseline, spec §5).

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
        Initial centres.
    n_steps : int
        Number of Lloyd iterations, >= 0.
    generator : torch.Generator, default=None
        Passed to :func:`lloyd_step` (re-seeding of empty clusters).

    Returns
    -------
    Tensor of shape (b, n_steps + 1)
        Column ``t`` is the cost after ``t`` steps; column 0 is the cost of ``c``.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [2.0], [10.0], [12.0]]])
    >>> lloyd_costs(x, x[:, :2], 2)
    tensor([[164.,  24.,   4.]])
    """
    if isinstance(n_steps, bool) or int(n_steps) != n_steps or n_steps < 0:
        raise ValueError(f"n_steps must be an int >= 0, got {n_steps!r}.")
    with torch.no_grad():
        costs = [kmeans_cost(x, c)]
        for _ in range(int(n_steps)):
            c = lloyd_step(x, c, generator=generator)
            costs.append(kmeans_cost(x, c))
    return torch.stack(costs, dim=1)


def relative_loss(
    x: torch.Tensor,
    c_init: torch.Tensor,
    c_model: torch.Tensor,
    *,
    generator: torch.Generator | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """Cost of a model's centres relative to one Lloyd step from the same start (eq. 20).

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    c_init : Tensor of shape (b, k, d)
        The centres the model started from.
    c_model : Tensor of shape (b, k, d)
        The model's output centres.
    generator : torch.Generator, default=None
        Passed to :func:`lloyd_step` for the baseline (re-seeding of empty clusters).
    reduction : {"mean", "sum", "none"}, default="mean"
        Over tasks.

    Returns
    -------
    Tensor
        A scalar, or of shape (b,) for ``reduction="none"``. 1.0 means "as good as one
        Lloyd step"; below 1 is better.

    Notes
    -----
    Per task, ``kmeans_cost(x, c_model) / kmeans_cost(x, lloyd_step(x, c_init))``. When the
    Lloyd cost is 0 (every point on a centre) the ratio is defined as 1.0 if the model's
    cost is also 0, and ``inf`` otherwise.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [2.0], [10.0], [12.0]]])
    >>> relative_loss(x, x[:, :2], torch.tensor([[[1.0], [11.0]]]))  # 4 / 24
    tensor(0.1667)
    """
    num = kmeans_cost(x, c_model)
    den = kmeans_cost(x, lloyd_step(x, c_init, generator=generator)).to(num.dtype)
    zero = den == 0
    ratio = num / torch.where(zero, torch.ones_like(den), den)
    degenerate = torch.where(num == 0, torch.ones_like(num), torch.full_like(num, torch.inf))
    ratio = torch.where(zero, degenerate, ratio)
    return _reduce(ratio, reduction)
