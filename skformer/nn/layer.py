"""The k-means transformer layer of paper eq. (4) and its exact Lloyd weights.

Dimension legend: ``b`` batch, ``n`` points, ``k`` clusters, ``d`` features,
``m`` index columns, ``e`` token width (``d + m``, plus one type flag in the
"keep previous centre" construction).

One layer updates the point stream, then the centre stream::

    X' = X + A1(X, C) + A2(X, X)
    C' = C + A3(C, X') + A4(C, C)

A1 and A3 are cross-attentions (points to centres, centres to updated points), A2 and
A4 self-attentions. There is no feed-forward block and no normalisation.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from .attention import DistanceAttention
from .embedding import index_width

__all__ = [
    "EMPTY_RULES",
    "KMeansLayer",
    "LayerOutput",
    "exact_lloyd_layer",
    "set_block_selectors",
]

EMPTY_RULES = ("keep", "paper")

# Type flag of centre tokens in the "keep previous centre" construction. Any value
# with 0 < flag**2 < 1 works; the squared distance from a centre's query to its own
# key is then flag**2, strictly between assigned points (0) and anything else (>= 1).
_CENTRE_FLAG = math.sqrt(0.5)


class LayerOutput(NamedTuple):
    """Updated token streams of one layer."""

    points: torch.Tensor
    """Point tokens, shape (b, n, e)."""
    centres: torch.Tensor
    """Centre tokens, shape (b, k, e)."""


class KMeansLayer(nn.Module):
    """Four distance attentions with residual connections (paper eq. 4).

    Parameters
    ----------
    embed_dim : int
        Token width ``e``.
    activation : {"softmax", "sparsemax", "hardmax"}, default="softmax"
        Activation of all four attentions.
    gamma : float, default=1.0
        Inverse temperature (``math.inf`` for hard attention).
    bias : bool, default=True
        Biases in the twelve projections.
    dropout : float, default=0.0
        Attention dropout, active in training mode only.
    centre_keys_in_update : bool, default=False
        If True, the centre update A3 attends to the updated points *and* the current
        centres (the "keep previous centre" construction; not in the paper's eq. 4).
    normalise : bool, default=False
        Scale-free assignment: A1's inverse temperature is divided, per task, by the
        mean squared distance from a point's query to its nearest centre key (see
        :class:`~skformer.nn.attention.DistanceAttention`). Not in the paper.

    Attributes
    ----------
    points_to_centres, points_to_points, centres_to_points, centres_to_centres :
        DistanceAttention
        A1, A2, A3 and A4 of eq. (4).

    Examples
    --------
    >>> import torch
    >>> layer = KMeansLayer(6)
    >>> out = layer(torch.randn(2, 50, 6), torch.randn(2, 3, 6))
    >>> out.points.shape, out.centres.shape
    (torch.Size([2, 50, 6]), torch.Size([2, 3, 6]))
    """

    def __init__(
        self,
        embed_dim: int,
        *,
        activation: str = "softmax",
        gamma: float = 1.0,
        bias: bool = True,
        dropout: float = 0.0,
        centre_keys_in_update: bool = False,
        normalise: bool = False,
    ) -> None:
        super().__init__()
        self.embed_dim = embed_dim
        self.centre_keys_in_update = centre_keys_in_update

        def head() -> DistanceAttention:
            return DistanceAttention(
                embed_dim, activation=activation, gamma=gamma, bias=bias, dropout=dropout
            )

        self.points_to_centres = head()
        self.points_to_centres.normalise = normalise
        self.points_to_points = head()
        self.centres_to_points = head()
        self.centres_to_centres = head()


    def forward(
        self,
        points: torch.Tensor,
        centres: torch.Tensor,
        point_weight: torch.Tensor | None = None,
        *,
        temperature: torch.Tensor | None = None,
        step_size: torch.Tensor | float | None = None,
        points_update: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> LayerOutput:
        """Apply eq. (4).

        Parameters
        ----------
        points : Tensor of shape (b, n, e)
        centres : Tensor of shape (b, k, e)
        point_weight : Tensor of shape (b, n), default=None
            Multiplicities of the points as keys of the point update A2 and the centre
            update A3 (sample weights: a point of weight 2 counts as two copies).
            None means all ones.
        temperature : Tensor of shape (3,), default=None
            Multipliers of the inverse temperatures of A1, A3 and A4 (a learned step
            schedule; A2, which reads only point tokens, keeps its own so that it stays
            the same at every re-embedded step); None means all ones.
        step_size : Tensor or float, default=None
            Multiplier of the centre update: ``C' = C + s (A3 + A4)`` (a learned,
            over-relaxed step); None is eq. (4)'s ``s = 1``.
        points_update : Tensor of shape (b, n, e), default=None
            A2's output ``A2(points, points)``, if already computed (it reads only the
            point tokens, so re-embedded steps can share it).
        generator : torch.Generator, default=None
            Source of dropout masks in training mode.

        Returns
        -------
        LayerOutput
            ``points`` of shape (b, n, e) and ``centres`` of shape (b, k, e).
        """
        t = (1.0,) * 3 if temperature is None else temperature.unbind(-1)
        points = (
            points
            + self.points_to_centres(points, centres, temperature=t[0],
                                     query_weight=point_weight, generator=generator)
            + (self.points_to_points(points, points, point_weight, generator=generator)
               if points_update is None else points_update)
        )
        keys, key_weight = points, point_weight
        if self.centre_keys_in_update:
            keys = torch.cat([points, centres], dim=-2)
            if point_weight is not None:
                ones = point_weight.new_ones(centres.shape[:-1])
                key_weight = torch.cat([point_weight, ones], dim=-1)
        update = (
            self.centres_to_points(centres, keys, key_weight, temperature=t[1],
                                   generator=generator)
            + self.centres_to_centres(centres, centres, temperature=t[2], generator=generator)
        )
        return LayerOutput(points, centres + (update if step_size is None
                                              else step_size * update))


def _selector(e: int, columns: slice, *, dtype: torch.dtype) -> torch.Tensor:
    """Diagonal 0/1 matrix keeping ``columns`` of an ``e``-wide token."""
    diag = torch.zeros(e, dtype=dtype)
    diag[columns] = 1.0
    return torch.diag(diag)


def set_block_selectors(
    layer: KMeansLayer, n_features: int, index_columns: int, *, qk_scale: float = 1.0
) -> KMeansLayer:
    """Write the Theorem 2.1 block selectors into a layer's twelve projections.

    With ``P_x`` keeping the ``d`` data columns, ``P_c`` the ``m`` index columns and
    ``P_f`` any columns after them (the type flag of the ``empty="keep"`` layer):
    ``Q1 = K1 = Q2 = K2 = P_x``, ``V1 = P_c``, ``V2 = -P_c``, ``Q3 = Q4 = K4 = P_c``,
    ``K3 = P_c + P_f``, ``V3 = P_x``, ``V4 = -P_x``; query and key matrices are
    multiplied by ``qk_scale``; biases, if any, are zeroed.

    Parameters
    ----------
    layer : KMeansLayer
    n_features : int
        ``d``.
    index_columns : int
        ``m``.
    qk_scale : float, default=1.0

    Returns
    -------
    KMeansLayer
        The same layer.
    """
    e, d, m = layer.embed_dim, n_features, index_columns
    dtype = layer.points_to_centres.q_proj.weight.dtype
    p_x = _selector(e, slice(0, d), dtype=dtype)
    p_c = _selector(e, slice(d, d + m), dtype=dtype)
    p_flag = _selector(e, slice(d + m, e), dtype=dtype)
    weights = {
        "points_to_centres": (p_x, p_x, p_c),
        "points_to_points": (p_x, p_x, -p_c),
        "centres_to_points": (p_c, p_c + p_flag, p_x),
        "centres_to_centres": (p_c, p_c, -p_x),
    }
    with torch.no_grad():
        for name, (q, k, v) in weights.items():
            att = getattr(layer, name)
            att.q_proj.weight.copy_(qk_scale * q)
            att.k_proj.weight.copy_(qk_scale * k)
            att.v_proj.weight.copy_(v)
            for proj in (att.q_proj, att.k_proj, att.v_proj):
                if proj.bias is not None:
                    proj.bias.zero_()
    return layer


def exact_lloyd_layer(
    n_features: int,
    n_clusters: int,
    *,
    embedding: str = "binary",
    empty: str = "keep",
    tie_break: str = "first",
    dtype: torch.dtype = torch.float64,
) -> KMeansLayer:
    """A hard-attention layer whose forward pass is exactly one Lloyd iteration.

    Parameters
    ----------
    n_features : int
        Data dimension ``d``.
    n_clusters : int
        Number of centres ``k``.
    embedding : {"binary", "onehot"}, default="binary"
        Cluster-index embedding; ``m = ceil(log2 k)`` or ``k`` index columns.
    empty : {"keep", "paper"}, default="keep"
        ``"keep"``: a centre with no assigned point keeps its previous value, through
        one extra type-flag column (tokens are ``d + m + 1`` wide) and centre keys in
        A3. ``"paper"``: the weights of Theorem 2.1 verbatim (``d + m`` wide); an empty
        cluster's centre then becomes the mean of the points whose codes are nearest
        to its code (all points with one-hot), which is not a Lloyd rule.
    tie_break : {"first", "average"}, default="first"
        Rule of A1 when a point is equally near several centres: the lowest centre
        index (as ``argmin`` and :class:`sklearn.cluster.KMeans`), or the paper's
        averaging hardmax, which writes the average of the tied codes.
    dtype : torch.dtype, default=torch.float64

    Returns
    -------
    KMeansLayer
        With ``gamma = inf``, hardmax attention, no biases and the block selectors
        of Theorem 2.1: ``Q1 = K1 = Q2 = K2 = P_x``, ``V1 = P_c``, ``V2 = -P_c``,
        ``Q3 = Q4 = K4 = P_c``, ``K3 = P_c (+ P_flag)``, ``V3 = P_x``, ``V4 = -P_x``.

    Examples
    --------
    >>> layer = exact_lloyd_layer(2, 5, embedding="binary")
    >>> layer.embed_dim  # d + ceil(log2 k) + 1 type flag
    6
    """
    if embedding not in ("binary", "onehot"):
        raise ValueError(
            f"The exact construction needs a cluster-index embedding ('binary' or "
            f"'onehot'), got {embedding!r}."
        )
    if empty not in EMPTY_RULES:
        raise ValueError(f"empty must be one of {EMPTY_RULES}, got {empty!r}.")
    d, m = n_features, index_width(embedding, n_clusters)
    keep = empty == "keep"
    e = d + m + int(keep)
    with torch.device("meta"):  # no default initialisation drawn: every weight is set below
        layer = KMeansLayer(
            e, activation="hardmax", gamma=math.inf, bias=False, centre_keys_in_update=keep
        )
    layer.to_empty(device="cpu")
    set_block_selectors(layer, d, m)
    layer.requires_grad_(False)
    layer.points_to_centres.tie_break = tie_break
    return layer.to(dtype)


def centre_flag_column(centres: torch.Tensor) -> torch.Tensor:
    """The type-flag column appended to centre tokens in the ``empty="keep"`` layer."""
    return centres.new_full((*centres.shape[:-1], 1), _CENTRE_FLAG)
