"""The exact Lloyd transformer: one layer of hand-set hard attention per iteration.

Dimension legend: ``b`` batch, ``n`` points, ``k`` clusters, ``d`` features,
``e`` token width.

Every model in skformer honours one contract, the single clustering step
``step(x, c) -> c_new`` on ``x`` of shape (b, n, d) and ``c`` of shape (b, k, d):
embed the points and the centres, run the layer, read out the first ``d`` coordinates
of the centre tokens. Iterating is a loop over ``step``.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from .embedding import check_step_shapes, decode_index, embed_centres, embed_points
from .kernel import exact_step
from .layer import EMPTY_RULES, centre_flag_column, exact_lloyd_layer

__all__ = ["PATHS", "ExactLloydModel", "LloydStep", "lloyd_update", "nearest_centre"]

PATHS = ("dense", "fused")

class LloydStep(NamedTuple):
    """Result of one step of the exact model."""

    centres: torch.Tensor
    """Updated centres, shape (b, k, d)."""
    labels: torch.Tensor
    """Index of the centre each point was assigned to (before the update), shape (b, n)."""


def nearest_centre(
    x: torch.Tensor, c: torch.Tensor, *, chunk_rows: int | None = None
) -> torch.Tensor:
    """Index of the nearest centre of every point, lowest index on ties.

    Uses ``argmin_j (|c_j|^2 - 2 x.c_j)`` (the ``|x|^2`` term is the same for every
    centre), one matrix product per chunk of points, as scikit-learn does
    (:func:`~skformer.nn.kernel.exact_step` without the update).

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
    chunk_rows : int, default=None
        Points per chunk; by default about ``2**20 / k``.

    Returns
    -------
    LongTensor of shape (b, n)

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [0.9], [2.0]]]); c = torch.tensor([[[0.0], [1.0]]])
    >>> nearest_centre(x, c)
    tensor([[0, 1, 1]])
    """
    budget = {} if chunk_rows is None else {"budget": chunk_rows * c.shape[-2]}
    return exact_step(x, c, update=False, **budget).labels


def lloyd_update(
    x: torch.Tensor, c: torch.Tensor, sample_weight: torch.Tensor | None = None
) -> LloydStep:
    """One Lloyd iteration as the hard-attention layer computes it, without the tokens.

    A1 is the nearest centre (lowest index on ties), A3 the (weighted) mean of each
    cluster, A2 and A4 erase the previous scratch and centre; a cluster of zero weight
    keeps its centre. This is :func:`~skformer.nn.kernel.exact_step`: O(n k d) time,
    O(chunk k) extra memory.

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    c : Tensor of shape (b, k, d)
    sample_weight : Tensor of shape (b, n), default=None

    Returns
    -------
    LloydStep

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [1.0], [10.0]]])
    >>> lloyd_update(x, torch.tensor([[[0.0], [10.0], [50.0]]])).centres.ravel()
    tensor([ 0.5000, 10.0000, 50.0000])
    """
    stats = exact_step(x, c, weight=sample_weight)
    return LloydStep(stats.centres(c), stats.labels)


class ExactLloydModel(nn.Module):
    """A transformer whose every layer is exactly one iteration of Lloyd's algorithm.

    Parameters
    ----------
    n_features : int
        Data dimension ``d``.
    n_clusters : int
        Number of centres ``k``.
    embedding : {"binary", "onehot"}, default="binary"
        Cluster-index embedding: token width ``d + ceil(log2 k)`` (BN) or ``d + k``
        (OH), plus one type flag when ``empty="keep"``.
    path : {"fused", "dense"}, default="fused"
        ``"dense"`` runs the literal attention layer (O(n^2) time for the
        points-to-points attention, memory chunked). ``"fused"`` uses what hard
        attention with these weights computes: A2 and A4 subtract the previous
        scratch and centre, A1 is the nearest centre, A3 a (weighted) mean per
        cluster; O(n k d) time and O(chunk k) extra memory. Both give the same
        result.
    empty : {"keep", "paper"}, default="keep"
        What an empty cluster's centre becomes; see :func:`exact_lloyd_layer`.
        The fused path implements ``"keep"`` only.
    tie_break : {"first", "average"}, default="first"
        Assignment tie rule; the fused path implements ``"first"`` only.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [1.0], [9.0], [11.0]]], dtype=torch.float64)
    >>> c = torch.tensor([[[0.0], [9.0]]], dtype=torch.float64)
    >>> model = ExactLloydModel(1, 2, path="dense")
    >>> model.step(x, c)
    tensor([[[ 0.5000],
             [10.0000]]], dtype=torch.float64)
    """

    def __init__(
        self,
        n_features: int,
        n_clusters: int,
        *,
        embedding: str = "binary",
        path: str = "fused",
        empty: str = "keep",
        tie_break: str = "first",
    ) -> None:
        super().__init__()
        if path not in PATHS:
            raise ValueError(f"path must be one of {PATHS}, got {path!r}.")
        if embedding not in ("binary", "onehot"):
            raise ValueError(
                f"The exact construction needs a cluster-index embedding ('binary' or "
                f"'onehot'), got {embedding!r}."
            )
        if empty not in EMPTY_RULES:
            raise ValueError(f"empty must be one of {EMPTY_RULES}, got {empty!r}.")
        if path == "fused" and (empty != "keep" or tie_break != "first"):
            raise ValueError(
                "The fused path implements empty='keep' and tie_break='first' only; "
                "use path='dense' for the paper's verbatim rules."
            )
        self.n_features = n_features
        self.n_clusters = n_clusters
        self.embedding = embedding
        self.path = path
        self.empty = empty
        self.tie_break = tie_break
        # The literal layer holds twelve e x e matrices (e = d + k + 1 with one-hot):
        # built for the dense path only.
        self.layer = (
            exact_lloyd_layer(
                n_features, n_clusters, embedding=embedding, empty=empty, tie_break=tie_break
            )
            if path == "dense"
            else None
        )

    def forward(
        self, x: torch.Tensor, c: torch.Tensor, sample_weight: torch.Tensor | None = None
    ) -> LloydStep:
        """One Lloyd iteration.

        Parameters
        ----------
        x : Tensor of shape (b, n, d)
        c : Tensor of shape (b, k, d)
        sample_weight : Tensor of shape (b, n), default=None
            Non-negative point weights; the centre update is the weighted mean.

        Returns
        -------
        LloydStep
            ``centres`` (b, k, d) and ``labels`` (b, n).
        """
        check_step_shapes(x, c, self.n_features, self.n_clusters)
        if self.path == "fused":
            return self._fused(x, c, sample_weight)
        return self._dense(x, c, sample_weight)

    def step(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """One clustering step: centres (b, k, d) from points (b, n, d) and centres."""
        return self(x, c).centres

    def _dense(self, x, c, sample_weight) -> LloydStep:
        layer = self.layer.to(dtype=x.dtype, device=x.device)  # in place; exact 0/1 weights
        points = embed_points(x, self.embedding, self.n_clusters)
        centres = embed_centres(c, self.embedding)
        if self.empty == "keep":
            points = torch.cat([points, torch.zeros_like(points[..., :1])], dim=-1)
            centres = torch.cat([centres, centre_flag_column(centres)], dim=-1)
        out = layer(points, centres, sample_weight)
        d = self.n_features
        m = out.points.shape[-1] - d - (self.empty == "keep")
        labels = decode_index(out.points[..., d : d + m], self.embedding, self.n_clusters)
        return LloydStep(out.centres[..., :d], labels)

    def _fused(self, x, c, sample_weight) -> LloydStep:
        return lloyd_update(x, c, sample_weight)

    def extra_repr(self) -> str:
        return (
            f"n_features={self.n_features}, n_clusters={self.n_clusters}, "
            f"embedding={self.embedding!r}, path={self.path!r}, empty={self.empty!r}"
        )
