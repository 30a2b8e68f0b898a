"""Distance attention: softmax, sparsemax and averaging hardmax over squared distances.

Dimension legend: ``b`` batch (tasks), ``q`` query tokens, ``r`` key tokens,
``e`` token width, ``v`` value width.

The operator is the distance attention of the paper (eq. 3)::

    A(Z, Z') = act(-(gamma / sqrt(e)) * ||Q z_i - K z'_j||^2) V z'_j

where ``act`` normalises over the keys of each query. It is computed in chunks of
queries and keys, with online (running max) accumulation for softmax and hardmax,
so that no ``q x r`` score matrix larger than one chunk is ever held in memory.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .softmax import (
    _FEW_KEYS,
    SoftmaxPartial,
    _dropout,
    _exp_above_floor,
    _log_weights,
    _matmul,
    _shifted_scores,
    _weights,
    merge_partials,
    softmax_partial,
    softmax_weights,
)

__all__ = [
    "ACTIVATIONS",
    "TIE_BREAKS",
    "DistanceAttention",
    "SoftmaxPartial",
    "distance_attention",
    "mean_nearest_sqdist",
    "merge_partials",
    "softmax_partial",
    "softmax_weights",
    "sqdist",
]

ACTIVATIONS = ("softmax", "sparsemax", "hardmax")
TIE_BREAKS = ("average", "first")

# Elements of one (b, q_chunk, r_chunk) score block (and of the (.., e) difference
# block the exact distance needs): 2**22 float64 values are 32 MiB.
_BLOCK_ELEMENTS = 2**22


def sqdist(q: torch.Tensor, k: torch.Tensor, *, exact: bool = False) -> torch.Tensor:
    """Pairwise squared Euclidean distances between query and key tokens.

    Parameters
    ----------
    q : Tensor of shape (b, q, e)
        Projected queries.
    k : Tensor of shape (b, r, e)
        Projected keys.
    exact : bool, default=False
        If True, sum the squared coordinate differences literally: ties and zeros are
        then exact (what hard attention relies on). If False, use the faster expansion
        ``|q|^2 - 2 q.k + |k|^2`` (one matrix product), clamped at zero.

    Returns
    -------
    Tensor of shape (b, q, r)

    Examples
    --------
    >>> import torch
    >>> q = torch.tensor([[[0.0, 0.0]]]); k = torch.tensor([[[3.0, 4.0], [0.0, 1.0]]])
    >>> sqdist(q, k, exact=True)
    tensor([[[25.,  1.]]])
    """
    if exact:
        return (q.unsqueeze(-2) - k.unsqueeze(-3)).square().sum(-1)
    q_sq = q.square().sum(-1, keepdim=True)
    k_sq = k.square().sum(-1).unsqueeze(-2)
    return (q_sq + k_sq - 2.0 * (q @ k.transpose(-1, -2))).clamp_min_(0.0)


def _fold_gamma(q: torch.Tensor, k: torch.Tensor, gamma):
    """Queries, keys and a float inverse temperature equivalent to ``gamma``.

    A per-task inverse temperature (a tensor of shape (b,), or one broadcast to every
    task) is folded into the queries and keys: ``g ||q - k||^2 = ||sqrt(g) q - sqrt(g) k||^2``,
    so every path (chunked, online, sparsemax, partials) takes a plain float.
    """
    if not isinstance(gamma, torch.Tensor):
        return q, k, gamma
    root = gamma.to(q.dtype).sqrt().reshape(-1, 1, 1)
    return q * root, k * root, 1.0


def mean_nearest_sqdist(
    q: torch.Tensor, k: torch.Tensor, weight: torch.Tensor | None = None,
    q_sq: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean over queries of the squared distance to the nearest key, per task.

    The scale of the scores of a distance attention: dividing its inverse temperature
    by this makes the attention invariant to the scale of the tokens (a translation
    and one global scale of the data give the same weights).

    Parameters
    ----------
    q : Tensor of shape (b, q, e)
    k : Tensor of shape (b, r, e)
    weight : Tensor of shape (b, q), default=None
        Non-negative weights of the queries in the mean.
    q_sq : Tensor of shape (b, q), default=None
        The queries' squared norms, if known (queries reused across calls).

    Returns
    -------
    Tensor of shape (b,)
        ``sum_i w_i min_j ||q_i - k_j||^2 / sum_i w_i``, floored at ``eps * mean_i |q_i|^2``
        (plus the smallest normal float) so that its inverse stays finite.

    Examples
    --------
    >>> import torch
    >>> q = torch.tensor([[[0.0], [3.0]]]); k = torch.tensor([[[1.0], [4.0]]])
    >>> mean_nearest_sqdist(q, k)
    tensor([1.])
    """
    if q_sq is None:
        q_sq = q.square().sum(-1)
    k_sq = k.square().sum(-1).unsqueeze(-2)  # (b, 1, r)
    nearest = (torch.baddbmm(k_sq, q, k.transpose(-1, -2), alpha=-2.0).amin(-1)
               + q_sq).clamp_min(0.0)  # (b, q)
    q_sq = q_sq.detach()
    if weight is None:
        mean, size = nearest.mean(-1), q_sq.mean(-1)
    else:
        total = weight.sum(-1).clamp_min(torch.finfo(q.dtype).tiny)
        mean, size = (nearest * weight).sum(-1) / total, (q_sq * weight).sum(-1) / total
    finfo = torch.finfo(q.dtype)
    return torch.maximum(mean, finfo.eps * size + finfo.tiny)


def _chunk_sizes(n_queries: int, n_keys: int, width: int, exact: bool) -> tuple[int, int]:
    per_pair = width if exact else 1
    key_chunk = max(1, min(n_keys, _BLOCK_ELEMENTS // max(1, per_pair * 64)))
    query_chunk = max(1, min(n_queries, _BLOCK_ELEMENTS // max(1, per_pair * key_chunk)))
    return query_chunk, key_chunk


def distance_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    gamma: float = 1.0,
    activation: str = "softmax",
    key_weight: torch.Tensor | None = None,
    tie_break: str = "average",
    dropout: float = 0.0,
    generator: torch.Generator | None = None,
    chunk_size: tuple[int, int] | None = None,
) -> torch.Tensor:
    """Attention weights from negative squared distances, applied to values.

    Parameters
    ----------
    q : Tensor of shape (b, q, e)
        Projected queries ``Q z``.
    k : Tensor of shape (b, r, e)
        Projected keys ``K z'``.
    v : Tensor of shape (b, r, v)
        Projected values ``V z'``.
    gamma : float or Tensor of shape (b,), default=1.0
        Inverse temperature, one for all tasks or one per task. ``math.inf`` with
        ``activation="hardmax"`` is the
        averaging hard attention of the exact construction; the scores are then the
        raw negative squared distances (the ``1/sqrt(e)`` scale is irrelevant).
    activation : {"softmax", "sparsemax", "hardmax"}, default="softmax"
        How scores become weights over the keys of each query. ``"hardmax"`` puts
        uniform weight on the keys whose score ties for the maximum.
    key_weight : Tensor of shape (b, r), default=None
        Non-negative multiplicities of the keys: a key of weight ``w`` counts as
        ``w`` identical keys (softmax: ``w exp(s)``; hardmax: weighted average of
        the tied keys). Keys of weight 0 are absent. A query with no key of positive
        weight gets a zero output. Not supported with sparsemax.
    tie_break : {"average", "first"}, default="average"
        Hardmax only. ``"average"`` averages the tied keys (the paper's AHAT);
        ``"first"`` takes the tied key of lowest index (as ``argmin`` does).
    dropout : float, default=0.0
        Dropout probability on the attention weights (softmax and sparsemax).
        Apply it only in training: pass ``0.0`` otherwise.
    generator : torch.Generator, default=None
        Source of the dropout masks.
    chunk_size : (int, int), default=None
        Query and key chunk lengths; by default chosen so one score block holds
        about 4 million elements.

    Returns
    -------
    Tensor of shape (b, q, v)

    Notes
    -----
    Scores are ``s_ij = -(gamma / sqrt(e)) ||q_i - k_j||^2``. Softmax and hardmax
    are accumulated over key chunks with a running maximum (as in memory-efficient
    attention); sparsemax needs whole rows of scores, so it chunks queries only.
    Hardmax compares squared distances computed literally, so exact ties are
    detected exactly.

    Examples
    --------
    >>> import math, torch
    >>> q = torch.tensor([[[0.0], [1.0]]])            # (1, 2, 1)
    >>> k = torch.tensor([[[0.1], [0.9], [1.1]]])     # (1, 3, 1)
    >>> v = torch.tensor([[[10.0], [20.0], [30.0]]])  # (1, 3, 1)
    >>> distance_attention(q, k, v, gamma=math.inf, activation="hardmax")
    tensor([[[10.],
             [25.]]])
    """
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}.")
    q, k, gamma = _fold_gamma(q, k, gamma)
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}.")
    if math.isinf(gamma) and activation != "hardmax":
        raise ValueError("gamma=inf is only meaningful with activation='hardmax'.")
    if activation == "sparsemax" and key_weight is not None:
        raise ValueError("key_weight is not supported with activation='sparsemax'.")
    hard = activation == "hardmax"
    scale = 1.0 if hard else gamma / math.sqrt(q.shape[-1])
    n_q, n_k = q.shape[-2], k.shape[-2]
    if chunk_size is None:
        chunk_size = _chunk_sizes(n_q, n_k, q.shape[-1], exact=hard)
    q_chunk, k_chunk = chunk_size
    if activation == "sparsemax":
        k_chunk = n_k
    log_w = _log_weights(key_weight, q.dtype)
    outputs = []
    for qs in range(0, n_q, q_chunk):
        qc = q[:, qs : qs + q_chunk]
        if activation == "sparsemax":
            outputs.append(_sparsemax_block(qc, k, v, scale, dropout, generator))
        elif hard:
            outputs.append(_hardmax_block(qc, k, v, key_weight, log_w, tie_break, k_chunk))
        else:
            outputs.append(_softmax_block(qc, k, v, scale, log_w, dropout, generator, k_chunk))
    return torch.cat(outputs, dim=-2)


def _sparsemax_block(qc, k, v, scale, dropout, generator):
    from entmax import sparsemax

    p = sparsemax(-scale * sqdist(qc, k), dim=-1)
    return _dropout(p, dropout, generator) @ v


def _softmax_block(qc, k, v, scale, log_w, dropout, generator, k_chunk):
    k_sq = k.square().sum(-1)
    if k_chunk >= k.shape[-2] or k.shape[-2] < _FEW_KEYS:  # all keys at once
        p = _weights(qc, k, k_sq, scale, log_w)
        return _matmul(_dropout(p, dropout, generator), v)
    # Online softmax: running max m, normaliser l, unnormalised output o.
    b, n_q = qc.shape[0], qc.shape[1]
    m = qc.new_full((b, n_q, 1), -math.inf)
    l = qc.new_zeros((b, n_q, 1))  # noqa: E741
    o = qc.new_zeros((b, n_q, v.shape[-1]))
    for ks in range(0, k.shape[-2], k_chunk):
        s = _shifted_scores(qc, k[:, ks : ks + k_chunk], k_sq[:, ks : ks + k_chunk], scale)
        if log_w is not None:
            s = s + log_w[:, None, ks : ks + k_chunk]
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        m_safe = torch.where(torch.isinf(m_new), 0.0, m_new)
        alpha = torch.exp(m - m_safe)
        p = _exp_above_floor(s - m_safe, log_w, ks, k_chunk)
        l = l * alpha + p.sum(-1, keepdim=True)  # noqa: E741
        o = o * alpha + _matmul(_dropout(p, dropout, generator), v[:, ks : ks + k_chunk])
        m = m_new
    return torch.where(l > 0, o / torch.where(l > 0, l, 1.0), 0.0)


def _hardmax_block(qc, k, v, key_weight, log_w, tie_break, k_chunk):
    b, n_q = qc.shape[0], qc.shape[1]
    best = qc.new_full((b, n_q), -math.inf)
    o = qc.new_zeros((b, n_q, v.shape[-1]))
    count = qc.new_zeros((b, n_q))
    for ks in range(0, k.shape[-2], k_chunk):
        s = -sqdist(qc, k[:, ks : ks + k_chunk], exact=True)
        vc = v[:, ks : ks + k_chunk]
        if log_w is not None:  # absent keys can never win
            s = s.masked_fill(torch.isinf(log_w[:, None, ks : ks + k_chunk]), -math.inf)
        chunk_best = s.amax(-1)
        if tie_break == "first":
            idx = s.argmax(-1, keepdim=True)
            chunk_o = torch.gather(vc, 1, idx.expand(-1, -1, vc.shape[-1]))
            chunk_count = torch.isfinite(chunk_best).to(qc.dtype)
            take_new = chunk_best > best  # strictly better: earlier chunks win ties
            keep_old = ~take_new
        else:
            tied = (s == chunk_best.unsqueeze(-1)) & torch.isfinite(s)
            w = tied.to(qc.dtype)
            if key_weight is not None:
                w = w * key_weight[:, None, ks : ks + k_chunk]
            chunk_o, chunk_count = w @ vc, w.sum(-1)
            new_best = torch.maximum(best, chunk_best)
            take_new, keep_old = chunk_best == new_best, best == new_best
        o = o * keep_old.unsqueeze(-1) + chunk_o * take_new.unsqueeze(-1)
        count = count * keep_old + chunk_count * take_new
        best = torch.where(take_new, chunk_best, best)
    present = count.unsqueeze(-1) > 0
    return torch.where(present, o / torch.where(present, count.unsqueeze(-1), 1.0), 0.0)


class DistanceAttention(nn.Module):
    """One distance-attention head with query, key and value projections.

    Parameters
    ----------
    embed_dim : int
        Token width ``e``; all three projections are ``e x e``.
    activation : {"softmax", "sparsemax", "hardmax"}, default="softmax"
    gamma : float, default=1.0
        Inverse temperature (``math.inf`` for the exact hard attention).
    bias : bool, default=True
        Whether the projections carry biases.
    dropout : float, default=0.0
        Dropout on the attention weights, active in training mode only.
    tie_break : {"average", "first"}, default="average"
        Tie rule of the hardmax.
    normalise : bool, default=False
        Divide the inverse temperature of each task by the mean squared distance from
        a query to its nearest key (:func:`mean_nearest_sqdist`, computed on the
        projected tokens): the weights then depend on distances *relative* to that
        typical distance, the same at every scale of the data.

    Examples
    --------
    >>> import torch
    >>> att = DistanceAttention(4, gamma=1.0)
    >>> att(torch.randn(2, 5, 4), torch.randn(2, 3, 4)).shape
    torch.Size([2, 5, 4])
    """

    def __init__(
        self,
        embed_dim: int,
        *,
        activation: str = "softmax",
        gamma: float = 1.0,
        bias: bool = True,
        dropout: float = 0.0,
        tie_break: str = "average",
        normalise: bool = False,
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}.")
        self.embed_dim = embed_dim
        self.activation = activation
        self.gamma = gamma
        self.dropout = dropout
        self.tie_break = tie_break
        self.normalise = normalise
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        key_weight: torch.Tensor | None = None,
        *,
        temperature: float | torch.Tensor = 1.0,
        query_weight: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Attend from ``queries`` (b, q, e) to ``keys`` (b, r, e); returns (b, q, e).

        ``temperature`` (a float, or a tensor of shape () or (b,)) multiplies the
        inverse temperature ``gamma``; ``query_weight`` (b, q) weighs the queries in
        the normaliser of ``normalise=True``.
        """
        q, k = self.q_proj(queries), self.k_proj(keys)
        return distance_attention(
            q,
            k,
            self.v_proj(keys),
            gamma=self.inverse_temperature(q, k, temperature, query_weight),
            activation=self.activation,
            key_weight=key_weight,
            tie_break=self.tie_break,
            dropout=self.dropout if self.training else 0.0,
            generator=generator,
        )

    def inverse_temperature(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        temperature: float | torch.Tensor = 1.0,
        query_weight: torch.Tensor | None = None,
        q_sq: torch.Tensor | None = None,
    ) -> float | torch.Tensor:
        """``gamma * temperature``, divided per task by :func:`mean_nearest_sqdist` of the
        projected queries ``q`` (b, q, e) and keys ``k`` (b, r, e) if ``normalise``
        (``q_sq``: the queries' squared norms, if known)."""
        gamma = self.gamma * temperature
        if self.normalise:
            gamma = gamma / mean_nearest_sqdist(q, k, query_weight, q_sq)
        return gamma

    def extra_repr(self) -> str:
        return (
            f"embed_dim={self.embed_dim}, activation={self.activation!r}, gamma={self.gamma}, "
            f"tie_break={self.tie_break!r}, normalise={self.normalise}"
        )
