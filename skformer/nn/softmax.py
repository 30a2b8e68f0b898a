"""Softmax over squared distances: the shifted scores, weights, and merge-able partials.

Dimension legend: ``b`` batch (tasks), ``q`` query tokens, ``r`` key tokens,
``e`` token width, ``v`` value width.

The scores of distance attention ``-(gamma / sqrt(e)) ||q_i - k_j||^2`` are computed in
the shifted form ``-(gamma / sqrt(e)) (|k_j|^2 - 2 q_i.k_j)``: the ``|q_i|^2`` term is the
same for every key of a query, so every softmax cancels it. This module holds the pieces
that :func:`skformer.nn.attention.distance_attention` and the streamed learned steps
(:mod:`skformer.nn.streaming`) share: weights over all keys at once
(:func:`softmax_weights`), and the partial softmax over a block of keys that merges
exactly with the partials of other blocks (:class:`SoftmaxPartial`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

__all__ = ["SoftmaxPartial", "merge_partials", "softmax_partial", "softmax_weights"]


def _shift_form(q: torch.Tensor, k: torch.Tensor, gamma):
    """Queries, keys, the keys' squared norms and the float score scale of softmax
    attention in its shifted form ``-scale (g |k|^2 - 2 g q.k)`` (the ``|q|^2`` term
    cancels in every softmax): a per-task ``gamma`` multiplies the smaller of the two
    sides and the keys' norms, not every token."""
    k_sq = k.square().sum(-1)
    e = q.shape[-1]
    if not isinstance(gamma, torch.Tensor):
        return q, k, k_sq, gamma / math.sqrt(e)
    g = gamma.to(q.dtype).reshape(-1, 1)
    if q.shape[-2] <= k.shape[-2]:
        q = q * g.unsqueeze(-1)
    else:
        k = k * g.unsqueeze(-1)
    return q, k, k_sq * g, 1.0 / math.sqrt(e)


def _log_weights(key_weight: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """``log w`` of key multiplicities (``-inf`` for absent keys), outside autograd."""
    if key_weight is None:
        return None
    with torch.no_grad():
        return torch.where(key_weight > 0, key_weight.log(), -math.inf).to(dtype)


def _dropout(p: torch.Tensor, rate: float, generator: torch.Generator | None) -> torch.Tensor:
    """Inverted dropout of attention weights: PyTorch's fused kernel (global generator),
    or a boolean mask drawn from ``generator``; either way autograd keeps one byte per
    weight, not a float."""
    if rate <= 0.0:
        return p
    if generator is None:
        return torch.nn.functional.dropout(p, rate, training=True)
    # Drawn where the generator lives (a CPU generator may drive a CUDA model).
    keep = torch.empty(p.shape, dtype=torch.bool, device=generator.device)
    keep = keep.bernoulli_(1.0 - rate, generator=generator).to(p.device)
    return p * keep * (1.0 / (1.0 - rate))


def _matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for (b, m, p) and (b, p, q); one task goes through the 2-D product,
    which the CPU backends run several times faster than a batch of one."""
    if a.shape[0] == 1:
        return (a[0] @ b[0]).unsqueeze(0)
    return a @ b


def _score_floor(dtype: torch.dtype, n_keys: int) -> float:
    """Lowest score, relative to a row's maximum, worth exponentiating.

    Weights below ``exp(floor) ~ 1e-34 / n_keys`` (float32) change nothing a float can
    show, but exponentials and products of subnormal floats run many times slower on
    CPUs, and softmaxes over distances produce them in bulk. Raising lower scores to
    the floor keeps every weight normal. Applied on the CPU without autograd (where the
    streamed inference runs); under autograd it would cost a saved copy of the scores.
    """
    return math.log(torch.finfo(dtype).tiny) + math.log(max(n_keys, 1)) + 1.0


def _shifted_scores(qc: torch.Tensor, k: torch.Tensor, k_sq: torch.Tensor, scale: float):
    """``-scale * (|k_j|^2 - 2 q_i.k_j)``: the scores ``-scale ||q_i - k_j||^2`` shifted by
    ``scale |q_i|^2``, a constant of each query row that every softmax cancels (one
    fused matrix product, and no cancellation error from the ``|q_i|^2`` term)."""
    if qc.shape[0] == 1:
        out = torch.addmm(k_sq, qc[0], k[0].T, beta=-scale, alpha=2.0 * scale)
        return out.unsqueeze(0)
    return torch.baddbmm(k_sq.unsqueeze(-2), qc, k.transpose(-1, -2), beta=-scale,
                         alpha=2.0 * scale)


def _shifted_scores_keys_major(qc, k, k_sq, scale):
    """The transpose of :func:`_shifted_scores`, shape (b, r, q), computed as such."""
    if qc.shape[0] == 1:
        out = torch.addmm(k_sq[0].unsqueeze(-1), k[0], qc[0].T, beta=-scale,
                          alpha=2.0 * scale)
        return out.unsqueeze(0)
    return torch.baddbmm(k_sq.unsqueeze(-1), k, qc.transpose(-1, -2), beta=-scale,
                         alpha=2.0 * scale)


def _floored(scores: torch.Tensor) -> bool:
    """Whether scores get the floor of :func:`_score_floor`: on the CPU, outside autograd."""
    return scores.device.type == "cpu" and not scores.requires_grad


def _exp_above_floor(x, log_w, start, length):
    """``exp(x)`` for scores ``x <= 0`` relative to a running maximum, with the scores
    below the floor raised to it where :func:`_floored` says so, and absent keys (``log_w``
    of ``-inf``, columns ``start:start + length``) kept at weight 0."""
    if _floored(x):
        x = x.clamp_min(_score_floor(x.dtype, x.shape[-1]))
    p = torch.exp(x)
    if log_w is not None:
        p = p.masked_fill(torch.isinf(log_w[:, None, start : start + length]), 0.0)
    return p


def _weights(qc, k, k_sq, scale, log_w):
    """Softmax weights of queries ``qc`` over all keys ``k``, shape (b, q, r).

    Fewer than ``_FEW_KEYS`` keys are normalised keys-major (a (b, r, q) layout,
    returned as a transposed view): PyTorch's CPU softmax over a last dimension shorter
    than one SIMD vector runs element by element, many times slower than across rows.
    Scores are floored (:func:`_score_floor`); absent keys weigh 0, and a query
    with no key present gets all-zero weights.
    """
    few = k.shape[-2] < _FEW_KEYS
    if few:
        s = _shifted_scores_keys_major(qc, k, k_sq, scale)  # (b, r, q)
        dim = -2
    else:
        s = _shifted_scores(qc, k, k_sq, scale)  # (b, q, r)
        dim = -1
    if log_w is not None:
        s = s + (log_w.unsqueeze(-1) if few else log_w.unsqueeze(-2))
    if _floored(s):
        s = torch.maximum(s, s.amax(dim, keepdim=True) + _score_floor(s.dtype, s.shape[dim]))
    p = torch.softmax(s, dim=dim)
    if log_w is not None:
        absent = torch.isinf(log_w).unsqueeze(-1 if few else -2)
        p = torch.nan_to_num(p, nan=0.0).masked_fill(absent, 0.0)
    return p.transpose(-1, -2) if few else p


# Below this many keys, softmax weights are computed keys-major (see _weights).
_FEW_KEYS = 32


def softmax_weights(
    q: torch.Tensor, k: torch.Tensor, *, gamma: float = 1.0,
    key_weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """The weights of softmax distance attention, all keys at once.

    Parameters
    ----------
    q : Tensor of shape (b, q, e)
    k : Tensor of shape (b, r, e)
    gamma : float or Tensor of shape (b,), default=1.0
    key_weight : Tensor of shape (b, r), default=None

    Returns
    -------
    Tensor of shape (b, q, r)
        Rows sum to one (zero for a query with no key of positive weight);
        ``softmax_weights(q, k) @ v == distance_attention(q, k, v)``.

    Examples
    --------
    >>> import torch
    >>> from skformer.nn.attention import distance_attention
    >>> q, k, v = torch.randn(2, 5, 3), torch.randn(2, 4, 3), torch.randn(2, 4, 6)
    >>> torch.allclose(softmax_weights(q, k) @ v, distance_attention(q, k, v), atol=1e-6)
    True
    """
    q, k, k_sq, scale = _shift_form(q, k, gamma)
    log_w = _log_weights(key_weight, q.dtype)
    return _weights(q, k, k_sq, scale, log_w)


class SoftmaxPartial(NamedTuple):
    """Softmax attention over a subset of the keys, in a form that merges.

    For queries ``q`` and a block of keys with scores ``s`` (each query's scores
    shifted by the same constant, which the softmax cancels): ``max`` is the largest
    score, ``norm = sum exp(s - max)`` and ``out = sum exp(s - max) v``. Two partials
    over disjoint key blocks merge exactly (:func:`merge_partials`) and
    ``out / norm`` is the attention over all the keys seen: the map-reduce form of a
    softmax over a sum that is too large to hold (or spread over machines).
    """

    max: torch.Tensor
    """Running maximum score, shape (b, q, 1); ``-inf`` when no key was seen."""
    norm: torch.Tensor
    """``sum exp(s - max)``, shape (b, q, 1)."""
    out: torch.Tensor
    """``sum exp(s - max) v``, shape (b, q, v)."""

    def result(self) -> torch.Tensor:
        """The attention output ``out / norm`` (zero for a query that saw no key)."""
        seen = self.norm > 0
        return torch.where(seen, self.out / torch.where(seen, self.norm, 1.0), 0.0)


def softmax_partial(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    gamma: float = 1.0,
    key_weight: torch.Tensor | None = None,
) -> SoftmaxPartial:
    """Softmax distance attention of ``q`` over one block of keys, unnormalised.

    Parameters
    ----------
    q : Tensor of shape (b, q, e)
    k : Tensor of shape (b, r, e)
    v : Tensor of shape (b, r, v)
    gamma : float or Tensor of shape (b,), default=1.0
        Inverse temperature; scores are ``-(gamma / sqrt(e)) ||q_i - k_j||^2``.
    key_weight : Tensor of shape (b, r), default=None
        Key multiplicities, as in :func:`distance_attention`.

    Returns
    -------
    SoftmaxPartial

    Examples
    --------
    >>> import torch
    >>> from skformer.nn.attention import distance_attention
    >>> q, k, v = torch.randn(1, 2, 3), torch.randn(1, 10, 3), torch.randn(1, 10, 4)
    >>> a = softmax_partial(q, k[:, :6], v[:, :6])
    >>> b = softmax_partial(q, k[:, 6:], v[:, 6:])
    >>> full = distance_attention(q, k, v)
    >>> torch.allclose(merge_partials(a, b).result(), full, atol=1e-6)
    True
    """
    q, k, k_sq, scale = _shift_form(q, k, gamma)
    s = _shifted_scores(q, k, k_sq, scale)
    log_w = _log_weights(key_weight, q.dtype)
    if log_w is not None:
        s = s + log_w.unsqueeze(-2)
    m = s.detach().amax(-1, keepdim=True)  # a stabilising constant: the result ignores it
    p = _exp_above_floor(s - torch.where(torch.isinf(m), 0.0, m), log_w, 0, s.shape[-1])
    return SoftmaxPartial(m, p.sum(-1, keepdim=True), _matmul(p, v))


def merge_partials(a: SoftmaxPartial, b: SoftmaxPartial) -> SoftmaxPartial:
    """Combine two partials over disjoint key blocks (associative and commutative)."""
    m = torch.maximum(a.max, b.max)
    m_safe = torch.where(torch.isinf(m), 0.0, m)
    alpha, beta = torch.exp(a.max - m_safe), torch.exp(b.max - m_safe)
    return SoftmaxPartial(m, a.norm * alpha + b.norm * beta, a.out * alpha + b.out * beta)
