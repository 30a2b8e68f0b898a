"""The learned clustering step for many points: chunked, with a bounded context.

Dimension legend: ``b`` batch, ``n`` points, ``r`` context points, ``k`` clusters,
``d`` features, ``e`` token width.

With re-embedding, the point tokens entering the layer are ``[x ; 0]`` at every step,
so the points-to-points attention A2, which reads nothing but point tokens, gives the
same output at every step. :func:`prepare_points` computes it once, together with
A1's query projections. A2 is the only attention whose cost grows as ``n x n``: its
keys are the ``r`` points of a *context* (all points by default; a seeded sample of
them past a size, see :class:`skformer.TransformerKMeans`'s ``max_context``).

A step then streams over chunks of points: A1 (points to the ``k`` centres) updates
the chunk's tokens, and the chunk's contribution to the centre update A3 (a softmax
over all points) is kept as a :class:`~skformer.nn.softmax.SoftmaxPartial`. Partials
of disjoint chunks merge exactly, so a step is a map-reduce over point blocks, with
``O(chunk x (k + e))`` memory beyond the prepared tokens. What a step needs of the
centres (their projections, the step's temperatures and, for a model with
``normalise=True``, A1's scale measured on the context points) is computed once per
step, before the blocks: a :class:`StepPlan`. For the whole point set as context, one
step equals ``model(x, c, step=t)`` in eval mode up to float rounding.

The functions are differentiable (no dropout): training unrolls re-embedded steps with
them, at ``O(n k e)`` per step instead of the layer's ``O(n e^2)`` (the point tokens'
projections are computed once). Inference calls them under :func:`torch.no_grad`.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .attention import distance_attention
from .embedding import embed_centres, embed_points
from .learned import LearnedKMeansModel
from .softmax import (
    SoftmaxPartial,
    _matmul,
    merge_partials,
    softmax_partial,
    softmax_weights,
)

__all__ = [
    "PreparedPoints",
    "StepPlan",
    "a2_is_silent",
    "centre_partial",
    "finish_step",
    "plan_step",
    "prepare_points",
    "streamed_step",
]

# Elements of one (b, rows, max(k, r, e)) block: 2**20 float32 values are 4 MiB.
_BLOCK = 2**20


class PreparedPoints(NamedTuple):
    """What a learned step needs of the points, computed once per data set."""

    tokens: torch.Tensor | None
    """Point tokens after A2, ``[x ; 0] + A2([x ; 0], context)``, shape (b, n, e); None
    when not kept (``keys_values`` holds what the steps need)."""
    queries: torch.Tensor
    """A1 query projections of the tokens ``[x ; 0]``, shape (b, n, e)."""
    keys_values: torch.Tensor | None = None
    """A3's key and value projections of ``tokens``, side by side, shape (b, n, 2e);
    None: computed from ``tokens`` at each step."""
    scale_queries: torch.Tensor | None = None
    """A1 queries of the context points, shape (b, r, e): the points on which A1's
    scale is measured when the model has ``normalise=True`` (None otherwise)."""
    scale_weight: torch.Tensor | None = None
    """Weights of ``scale_queries``, shape (b, r), or None."""
    scale_sq: torch.Tensor | None = None
    """Squared norms of ``scale_queries``, shape (b, r), or None."""

    def rows(self, start: int, stop: int) -> PreparedPoints:
        """The prepared points ``start:stop`` (a block of a map-reduce step); the
        context's queries stay whole."""
        kv = None if self.keys_values is None else self.keys_values[:, start:stop]
        tokens = None if self.tokens is None else self.tokens[:, start:stop]
        return PreparedPoints(tokens, self.queries[:, start:stop], kv, self.scale_queries,
                              self.scale_weight, self.scale_sq)


def _rows(b: int, width: int) -> int:
    return max(1, _BLOCK // max(1, b * width))


def _check_softmax(model: LearnedKMeansModel) -> None:
    if model.activation != "softmax":
        raise ValueError(
            "Streamed steps need softmax attention (a sparsemax row cannot be split "
            f"into blocks); this model uses {model.activation!r}."
        )


def prepare_points(
    model: LearnedKMeansModel,
    x: torch.Tensor,
    context: torch.Tensor | None = None,
    context_weight: torch.Tensor | None = None,
    *,
    chunk_rows: int | None = None,
    keep_tokens: bool = True,
) -> PreparedPoints:
    """Point tokens after A2 and A1's queries: the step-independent part of a step.

    Parameters
    ----------
    model : LearnedKMeansModel
        With softmax attention; used as in eval mode (no dropout).
    x : Tensor of shape (b, n, d)
    context : Tensor of shape (b, r, d), default=None
        The keys of A2. None means all of ``x`` (exactly the layer's A2).
    context_weight : Tensor of shape (b, r), default=None
        Multiplicities of the context points (sample weights).
    chunk_rows : int, default=None
        Points per chunk (default: about ``2**20 / max(r, e)``).
    keep_tokens : bool, default=True
        Keep the tokens after A2 (the steps read only A3's prepared keys and values;
        False saves ``n x e`` floats, and ``tokens`` is then None).

    Returns
    -------
    PreparedPoints

    Examples
    --------
    >>> import torch
    >>> from skformer.nn import LearnedKMeansModel
    >>> model = LearnedKMeansModel.from_exact(2, 3, scale=4.0)
    >>> prepared = prepare_points(model, torch.rand(1, 100, 2))
    >>> prepared.tokens.shape                  # (b, n, d + ceil(log2 k))
    torch.Size([1, 100, 4])
    """
    _check_softmax(model)
    kind, k = model.embedding, model.n_clusters
    # All the point tokens are needed at once only as A2's keys (no context given).
    points = embed_points(x, kind, k) if context is None else None
    ctx = points if context is None else embed_points(context, kind, k)
    a1, a2 = model.layer.points_to_centres, model.layer.points_to_points
    silent = a2_is_silent(model)
    keys, values = (None, None) if silent else (a2.k_proj(ctx), a2.v_proj(ctx))
    a3 = model.layer.centres_to_points
    b, n, e = *x.shape[:-1], ctx.shape[-1]
    tokens = x.new_empty((b, n, e)) if keep_tokens else None
    queries = x.new_empty((b, n, e))
    keys_values = x.new_empty((b, n, 2 * e))
    rows = chunk_rows or _rows(b, e if silent else max(ctx.shape[-2], e))
    for s in range(0, n, rows):
        p = embed_points(x[:, s : s + rows], kind, k) if points is None else points[:, s : s + rows]
        t = p if silent else p + distance_attention(
            a2.q_proj(p), keys, values, gamma=a2.gamma, key_weight=context_weight
        )
        if keep_tokens:
            tokens[:, s : s + rows] = t
        queries[:, s : s + rows] = a1.q_proj(p)
        keys_values[:, s : s + rows, :e] = a3.k_proj(t)
        keys_values[:, s : s + rows, e:] = a3.v_proj(t)
    scale_queries = scale_sq = None
    if a1.normalise:
        scale_queries = queries if context is None else a1.q_proj(ctx)
        scale_sq = scale_queries.square().sum(-1)
    return PreparedPoints(tokens, queries, keys_values, scale_queries,
                          context_weight if a1.normalise else None, scale_sq)


def a2_is_silent(model: LearnedKMeansModel) -> bool:
    """Whether A2's output on re-embedded point tokens ``[x ; 0]`` is exactly zero.

    Its value of a token is ``V2 [x ; 0] + b2 = V2[:, :d] x + b2``: when those weights and
    the bias are all zero (as in the exact construction, ``V2 = -P_c``, and in models
    whose training left the projections alone), every weighted average of values is 0,
    whatever the attention, and the ``n x r`` points-to-points attention need not run.
    """
    v = model.layer.points_to_points.v_proj
    d = model.n_features
    with torch.no_grad():
        zero_bias = v.bias is None or not bool(v.bias.any())
        return zero_bias and not bool(v.weight[:, :d].any())


class StepPlan(NamedTuple):
    """What one learned step needs of the centres, shared by every block of points."""

    step: int
    """Index of the step (the row of the model's schedule)."""
    tokens: torch.Tensor
    """Centre tokens ``[c ; code]``, shape (b, k, e)."""
    a1_keys: torch.Tensor
    """A1's keys of the centres, shape (b, k, e)."""
    a1_gamma: float | torch.Tensor
    """A1's inverse temperature: a float, or one per task (b,) with ``normalise``."""
    a3_queries: torch.Tensor
    """A3's queries of the centres, shape (b, k, e)."""
    a3_gamma: float | torch.Tensor
    """A3's inverse temperature."""
    a1_values_to_a3: torch.Tensor
    """A1's values of the centres through A3's key and value maps, shape (b, k, 2e)."""


def plan_step(
    model: LearnedKMeansModel,
    c: torch.Tensor,
    step: int = 0,
    prepared: PreparedPoints | None = None,
) -> StepPlan:
    """The per-step part of a learned step: centre projections and temperatures.

    Parameters
    ----------
    model : LearnedKMeansModel
    c : Tensor of shape (b, k, d)
        The current centres.
    step : int, default=0
        Index of the step (selects the row of the model's schedule).
    prepared : PreparedPoints, default=None
        Needed by a model with ``normalise=True``: A1's scale is measured on its
        ``scale_queries``.

    Returns
    -------
    StepPlan
    """
    layer = model.layer
    tokens = embed_centres(c, model.embedding)
    a1, a3 = layer.points_to_centres, layer.centres_to_points
    temperature = model.temperature(step)
    t = (1.0,) * 3 if temperature is None else temperature.unbind(-1)
    keys = a1.k_proj(tokens)
    if a1.normalise and (prepared is None or prepared.scale_queries is None):
        raise ValueError("A model with normalise=True needs the prepared context's queries "
                         "(prepare_points of this model).")
    a1_gamma = a1.inverse_temperature(
        None if prepared is None else prepared.scale_queries, keys, t[0],
        None if prepared is None else prepared.scale_weight,
        None if prepared is None else prepared.scale_sq,
    )
    kv_maps = torch.cat([a3.k_proj.weight, a3.v_proj.weight], dim=0)  # (2e, e)
    return StepPlan(int(step), tokens, keys, a1_gamma, a3.q_proj(tokens), a3.gamma * t[1],
                    a1.v_proj(tokens) @ kv_maps.T)


def centre_partial(
    model: LearnedKMeansModel,
    prepared: PreparedPoints,
    c: torch.Tensor,
    weight: torch.Tensor | None = None,
    *,
    plan: StepPlan | None = None,
) -> SoftmaxPartial:
    """One block of points' contribution to the centre update A3 (the map step).

    Parameters
    ----------
    model : LearnedKMeansModel
    prepared : PreparedPoints
        Of a block of points, shapes (b, n_block, e).
    c : Tensor of shape (b, k, d)
        The current centres.
    weight : Tensor of shape (b, n_block), default=None
        Sample weights of the block's points (their multiplicities as A3's keys).
    plan : StepPlan, default=None
        From :func:`plan_step` (computed once per step and shared by the blocks);
        None plans step 0 from ``prepared``.

    Returns
    -------
    SoftmaxPartial
        Over the block's points; merge blocks with
        :func:`~skformer.nn.softmax.merge_partials`, then :func:`finish_step`.
    """
    proj = plan if plan is not None else plan_step(model, c, 0, prepared)
    a3 = model.layer.centres_to_points
    kv = prepared.keys_values
    if kv is None:
        kv = torch.cat([a3.k_proj(prepared.tokens), a3.v_proj(prepared.tokens)], dim=-1)
    # A3 reads the points updated by A1, t + P V1 (P: A1's weights (b, m, k), V1: A1's
    # values of the centres); its keys and values are linear in them, so they are the
    # prepared ones plus P times A1's values through A3's maps: a (m, k) x (k, 2e) product
    # instead of re-projecting every point.
    weights = softmax_weights(prepared.queries, proj.a1_keys, gamma=proj.a1_gamma)
    kv = kv + _matmul(weights, proj.a1_values_to_a3)
    e = kv.shape[-1] // 2
    return softmax_partial(
        proj.a3_queries, kv[..., :e], kv[..., e:], gamma=proj.a3_gamma, key_weight=weight
    )


def finish_step(
    model: LearnedKMeansModel, c: torch.Tensor, partial: SoftmaxPartial, step: int = 0,
    *, plan: StepPlan | None = None,
) -> torch.Tensor:
    """New centres from A3's merged partial over all points (the reduce step).

    Parameters
    ----------
    model : LearnedKMeansModel
    c : Tensor of shape (b, k, d)
    partial : SoftmaxPartial
        A3 over every point, shapes (b, k, 1) and (b, k, e).
    step : int, default=0
        Index of the step (A4's temperature and the step size in the model's
        schedule).
    plan : StepPlan, default=None
        The step's plan, whose centre tokens are reused.

    Returns
    -------
    Tensor of shape (b, k, d)
    """
    tokens = embed_centres(c, model.embedding) if plan is None else plan.tokens
    a4 = model.layer.centres_to_centres
    temperature = model.temperature(step)
    t4 = 1.0 if temperature is None else temperature[2]
    update = partial.result() + a4(tokens, tokens, temperature=t4)
    size = model.step_size(step)
    new = tokens + (update if size is None else size * update)
    return new[..., : model.n_features]


def streamed_step(
    model: LearnedKMeansModel,
    prepared: PreparedPoints,
    c: torch.Tensor,
    weight: torch.Tensor | None = None,
    *,
    step: int = 0,
    chunk_rows: int | None = None,
) -> torch.Tensor:
    """One re-embedded learned step over prepared points, chunk by chunk.

    Parameters
    ----------
    model : LearnedKMeansModel
        With softmax attention; dropout is not applied.
    prepared : PreparedPoints
        From :func:`prepare_points`, shapes (b, n, e).
    c : Tensor of shape (b, k, d)
    weight : Tensor of shape (b, n), default=None
        Sample weights.
    step : int, default=0
        Index of the step (the row of the model's schedule).
    chunk_rows : int, default=None
        Points per chunk (default: about ``2**20 / max(k, e)``).

    Returns
    -------
    Tensor of shape (b, k, d)
        Equal to ``model.eval()(x, c, step=step)`` when the context of ``prepared`` is
        all of ``x`` (up to float rounding and the order of the sums).

    Examples
    --------
    >>> import torch
    >>> from skformer.nn import LearnedKMeansModel
    >>> model = LearnedKMeansModel.from_exact(2, 3, scale=4.0).eval()
    >>> x = torch.rand(1, 500, 2); c = x[:, :3]
    >>> step = streamed_step(model, prepare_points(model, x), c, chunk_rows=64)
    >>> torch.allclose(step, model(x, c), atol=1e-5)
    True
    """
    plan = plan_step(model, c, step, prepared)
    rows = chunk_rows or _rows(c.shape[0], max(c.shape[-2], 2 * prepared.queries.shape[-1]))
    total = None
    for s in range(0, prepared.queries.shape[-2], rows):
        w = None if weight is None else weight[:, s : s + rows]
        part = centre_partial(model, prepared.rows(s, s + rows), c, w, plan=plan)
        total = part if total is None else merge_partials(total, part)
    return finish_step(model, c, total, step, plan=plan)
