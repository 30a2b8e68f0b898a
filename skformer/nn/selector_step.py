"""The learned step of a model at the exact construction, in closed form.

Dimension legend: ``b`` problems, ``n`` points, ``k`` clusters, ``d`` features, ``m``
code columns, ``e`` token width (``d + m``).

A model whose projections are the block selectors of Theorem 2.1, queries and keys
multiplied by a scale (``Q = K = a P``), with no biases, is what
:meth:`~skformer.nn.learned.LearnedKMeansModel.from_exact` and
:meth:`~skformer.nn.learned.LearnedKMeansModel.from_schedule` build (every shape-generic
model of the store): only its temperatures and step sizes are learned. Its re-embedded
step on point tokens ``[x ; 0]`` and centre tokens ``[c ; code_j]`` needs none of the
``e``-wide tokens:

* A1 reads the data columns (``Q1 = K1 = a1 P_x``) and writes the codes (``V1 = P_c``):
  each point's weights over the centres are ``W_ij = softmax_j(-g1 ||x_i - c_j||^2)`` and
  its code columns become its *soft code* ``s_i = sum_j W_ij code_j`` (``m`` columns);
  A2's values ``-P_c [x ; 0]`` are zero, so it adds nothing;
* A3 compares codes (``Q3 = K3 = a3 P_c``) and reads the data (``V3 = P_x``): centre ``j``
  moves to the mean of the ``x_i`` under ``softmax_i(-g3 ||code_j - s_i||^2 + log w_i)``
  (``w``: the points' weights);
* A4 compares codes and reads ``-P_x``: ``-M c`` with ``M = softmax(-g4 H)`` over the
  codes' squared distances ``H`` (Hamming distances for binary codes), a constant of
  the step's temperature;

and ``c' = c + size (A3 + A4)``, with ``g = gamma t a^2 / sqrt(e)`` for each attention
(``t`` the step's temperature multiplier), A1's divided by the mean squared distance from
a point to its nearest centre where the model normalises (``a1`` then cancels).

:class:`SelectorStep` computes that with a few passes over one ``(k, n)`` array,
keys-major (reductions over the centres run across points, whatever ``k``): the
distances, their minimum over the centres (the nearest centre's distance, which A1's
normaliser needs too), A1's weights, the soft codes by a ``(m + 1, k)`` product, A3's
scores by one ``(k, m + 2)`` product, and its sums by one ``(k, n) x (n, d + 1)`` product.
A3's exponentials are taken without subtracting each centre's maximum (the scores are
at most ``log w_i``): a centre whose sum of weights is too small for its weights to be
normal floats (a centre far from every point's soft code) is computed again with its
maximum subtracted, as :func:`~skformer.nn.softmax.softmax_partial` does. The result equals
:func:`~skformer.nn.streaming.streamed_step` up to float rounding.
"""

from __future__ import annotations

import math
import threading
from typing import NamedTuple

import torch

from .embedding import index_codes
from .learned import LearnedKMeansModel
from .softmax import _score_floor
from .streaming import PreparedPoints, a2_is_silent

__all__ = ["SelectorScales", "SelectorStep", "selector_scales"]

# A3's scores are floored at log(tiny) plus this (CPU): the products of the floor's
# weights with points' coordinates then stay normal floats (subnormal operands make a
# matrix product many times slower on CPUs); the centres whose weights all lie near the
# floor are computed again from their maximum (SelectorStep.step).
_A3_FLOOR = 40 * math.log(2.0)


def _weight_floor(dtype: torch.dtype, k: int) -> float:
    """A1's lowest score relative to a point's maximum: ``k`` weights at it add less
    than ``eps / 50`` to the point's sum (below rounding), and the soft codes' squares
    stay normal floats (see :data:`_A3_FLOOR`)."""
    return max(_score_floor(dtype, k), math.log(torch.finfo(dtype).eps / max(k, 1)) - 4.0)


class SelectorScales(NamedTuple):
    """The query and key scales ``a`` of A1, A3 and A4 (``Q = K = a P``) and their
    attentions' inverse temperatures ``gamma``."""

    a1: float
    a3: float
    a4: float
    gamma1: float
    gamma3: float
    gamma4: float


def _zero_bias(linear: torch.nn.Linear) -> bool:
    return linear.bias is None or not bool(linear.bias.any())


def _scale(att, selector: torch.Tensor, column: int) -> float | None:
    """``a`` where ``att``'s query and key maps are both ``a * selector`` with a finite
    ``a > 0``, else None."""
    q, k = att.q_proj.weight, att.k_proj.weight
    a = float(q[column, column])
    if not (0 < a < math.inf):
        return None
    target = a * selector.to(q.dtype)
    return a if torch.equal(q, target) and torch.equal(k, target) else None


@torch.no_grad()
def selector_scales(model: LearnedKMeansModel) -> SelectorScales | None:
    """The scales of a model at the exact construction (the step of
    :class:`SelectorStep` is its step), or None for any other model.

    The model qualifies when it has a cluster-index embedding, softmax attention with
    finite inverse temperatures, no biases (or all zero), ``Q = K = a P_x`` and
    ``V = P_c`` in A1, a silent A2, ``Q = K = a P_c`` and ``V = P_x`` in A3, and
    ``Q = K = a P_c`` and ``V = -P_x`` in A4 (``P_x``, ``P_c``: the selectors of the
    data and code columns).

    Examples
    --------
    >>> from skformer.nn import LearnedKMeansModel
    >>> selector_scales(LearnedKMeansModel.from_exact(2, 5, scale=3.0)).a1
    3.0
    >>> selector_scales(LearnedKMeansModel(2, 5)) is None   # random weights
    True
    """
    if model.embedding not in ("binary", "onehot") or model.activation != "softmax":
        return None
    layer = model.layer
    a1, a3, a4 = layer.points_to_centres, layer.centres_to_points, layer.centres_to_centres
    d, e = model.n_features, layer.embed_dim
    if layer.centre_keys_in_update or e <= d or a3.normalise or a4.normalise:
        return None
    if not all(_zero_bias(p) for att in (a1, a3, a4)
               for p in (att.q_proj, att.k_proj, att.v_proj)):
        return None
    if not all(0 < float(att.gamma) < math.inf for att in (a1, a3, a4)):
        return None
    p_x = torch.diag(torch.arange(e) < d).double()
    p_c = torch.diag(torch.arange(e) >= d).double()
    scales = (_scale(a1, p_x, 0), _scale(a3, p_c, d), _scale(a4, p_c, d))
    values = (torch.equal(a1.v_proj.weight, p_c.to(a1.v_proj.weight.dtype))
              and torch.equal(a3.v_proj.weight, p_x.to(a3.v_proj.weight.dtype))
              and torch.equal(a4.v_proj.weight, -p_x.to(a4.v_proj.weight.dtype)))
    if None in scales or not values or not a2_is_silent(model):
        return None
    return SelectorScales(*scales, float(a1.gamma), float(a3.gamma), float(a4.gamma))


def _mm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b`` (into ``out``, where given) with ``b`` of shape (p, q, r) and ``a`` of
    shape (o, q) or (p, o, q); one problem goes through the 2-D product, which the CPU
    backends run faster than a batch of one."""
    if b.shape[0] == 1:
        a = a if a.ndim == 2 else a[0]
        if out is None:
            return a.mm(b[0]).unsqueeze(0)
        torch.mm(a, b[0], out=out[0])
        return out
    if a.ndim == 2:
        a = a.expand(b.shape[0], *a.shape)
    return torch.bmm(a, b, out=out)


class SelectorStep:
    """The closed-form step of a model at the exact construction, on prepared points
    (see the module's docstring).

    Parameters
    ----------
    model : LearnedKMeansModel
        A model for which :func:`selector_scales` is not None (``scales``).
    prepared : PreparedPoints
        From :func:`~skformer.nn.streaming.prepare_points` of that model, with the keys
        and values, shapes (b, n, e).
    weight : Tensor of shape (b, n) or None
        The points' weights as A3's keys (and in the objective :meth:`step` measures).
    scales : SelectorScales

    Examples
    --------
    >>> import torch
    >>> from skformer.nn.streaming import prepare_points, streamed_step
    >>> model = LearnedKMeansModel.from_exact(2, 3, scale=4.0).eval()
    >>> x = torch.rand(1, 500, 2); c = x[:, :3]
    >>> prepared = prepare_points(model, x)
    >>> step = SelectorStep(model, prepared, None, selector_scales(model))
    >>> new = step.step(c, (1.0, 1.0, 1.0), 1.0)
    >>> torch.allclose(new, streamed_step(model, prepared, c), atol=1e-5)
    True
    """

    def __init__(self, model: LearnedKMeansModel, prepared: PreparedPoints,
                 weight: torch.Tensor | None, scales: SelectorScales):
        d, e = model.n_features, prepared.queries.shape[-1]
        dtype, device = prepared.queries.dtype, prepared.queries.device
        self.d, self.e, self.scales, self.prepared = d, e, scales, prepared
        self.a1 = model.layer.points_to_centres
        # A3's values of the point tokens [x ; 0] are x itself (V3 = P_x): [x ; 1] gives
        # A3's sums and their normaliser in one product.
        x = prepared.keys_values[..., e : e + d]
        self.x1 = torch.cat([x, x.new_ones((*x.shape[:-1], 1))], -1).contiguous()
        self.x_sq = x.square().sum(-1)  # (b, n)
        self.weight = weight
        self.log_w = None if weight is None else torch.where(
            weight > 0, weight.log(), -math.inf).to(dtype)
        # A1's normaliser (mean_nearest_sqdist) on the points themselves: their weights,
        # total weight and mean squared norm are the same at every step.
        self.on_points = self.a1.normalise and prepared.scale_queries is prepared.queries
        if self.on_points:
            w = prepared.scale_weight
            if w is None:
                self.scale_w, total = None, None
                self.x_size = self.x_sq.mean(-1)
            else:
                self.scale_w = w.to(dtype)
                total = self.scale_w.sum(-1).clamp_min(torch.finfo(dtype).tiny)
                self.x_size = (self.x_sq * self.scale_w).sum(-1) / total
            self.scale_total = total
        codes = index_codes(model.embedding, model.n_clusters, dtype=dtype, device=device)
        ones = codes.new_ones((codes.shape[0], 1))
        self.codes = codes
        self.codes1 = torch.cat([codes, ones], -1).T.contiguous()  # (m + 1, k)
        self.left = torch.cat([codes, ones, codes.square().sum(-1, keepdim=True)], -1)
        self.hamming = (codes.unsqueeze(1) - codes.unsqueeze(0)).square().sum(-1)  # (k, k)
        self._among: tuple[float, torch.Tensor] | None = None
        self._local = threading.local()

    def _buffer(self, shape: tuple[int, int, int], like: torch.Tensor) -> torch.Tensor:
        """A (b, k, n) array kept from step to step (one per thread): fresh arrays of
        that size, freed at the end of each step, are mapped again by the allocator,
        and their page faults cost more than the arithmetic on them."""
        size = math.prod(shape)
        buf = getattr(self._local, "buffer", None)
        if (buf is None or buf.numel() < size or buf.dtype != like.dtype
                or buf.device != like.device):
            buf = like.new_empty(size)
            self._local.buffer = buf
        return buf[:size].view(shape)

    def _a1_gamma(self, c: torch.Tensor, nearest: torch.Tensor, t1: float,
                  problems: torch.Tensor | None) -> float | torch.Tensor:
        """A1's inverse temperature ``gamma t1``, divided per problem by the mean squared
        distance from a query to its nearest key (A1's ``a1 x`` and ``a1 c``,
        :func:`~skformer.nn.attention.mean_nearest_sqdist`) where the model normalises;
        ``nearest``: each point's squared distance to its nearest centre (b, n)."""
        gamma = self.scales.gamma1 * t1
        if not self.a1.normalise:
            return gamma

        def pick(v):
            return v if v is None or problems is None else v[problems]

        if not self.on_points:  # a context of its own: its queries, as the model does
            p = self.prepared
            keys = torch.nn.functional.pad(self.scales.a1 * c, (0, self.e - self.d))
            return self.a1.inverse_temperature(pick(p.scale_queries), keys, t1,
                                               pick(p.scale_weight), pick(p.scale_sq))
        w, size = pick(self.scale_w), pick(self.x_size)
        mean = nearest.mean(-1) if w is None else (nearest * w).sum(-1) / pick(
            self.scale_total)
        finfo, a2 = torch.finfo(nearest.dtype), self.scales.a1**2
        return gamma / torch.maximum(a2 * mean, finfo.eps * (a2 * size) + finfo.tiny)

    def _a4(self, t4: float, dtype: torch.dtype) -> torch.Tensor:
        """A4's (k, k) weights among the codes at multiplier ``t4`` (the last one is
        kept: the steps after the schedule share it)."""
        if self._among is None or self._among[0] != t4:
            s = self.scales
            g = s.gamma4 * t4 * s.a4**2 / math.sqrt(self.e)
            scores = self.hamming * -g  # each code's largest score is 0, its own
            if scores.device.type == "cpu":
                scores.clamp_min_(_score_floor(scores.dtype, scores.shape[-1]))
            self._among = (t4, torch.softmax(scores, -1))
        return self._among[1].to(dtype)

    @torch.no_grad()
    def step(self, c: torch.Tensor, temperatures: tuple[float, float, float],
             size: float, problems: torch.Tensor | None = None, *,
             measure: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """One step from centres ``c`` (b, k, d) of the prepared problems, or of those at
        the indices ``problems`` (b,), at the multipliers ``temperatures`` of A1's, A3's
        and A4's inverse temperatures and the step size ``size``; returns the new
        centres (b, k, d), and with ``measure`` also the k-means objective of the points
        at ``c`` (b,) float64: ``sum_i w_i min_j ||x_i - c_j||^2``, from the nearest
        distances A1 finds (float products, a float64 sum)."""
        t1, t3, t4 = temperatures
        s, d, e = self.scales, self.d, self.e
        x1, x_sq, log_w, weight = self.x1, self.x_sq, self.log_w, self.weight
        if problems is not None:
            x1, x_sq = x1[problems], x_sq[problems]
            log_w = None if log_w is None else log_w[problems]
            weight = None if weight is None else weight[problems]
        cpu = c.device.type == "cpu"
        n = x1.shape[1]
        buffer = self._buffer((c.shape[0], c.shape[1], n), c)
        # A1: the distances keys-major, |c_j|^2 - 2 c_j.x_i = [-2 c_j ; |c_j|^2].[x_i ; 1]
        # (b, k, n), each point's nearest, and its weights exp(-g1 (dist - nearest)).
        cc = torch.cat([-2.0 * c, c.square().sum(-1, keepdim=True)], -1)
        dist = _mm(cc, x1.transpose(1, 2), out=buffer)
        low = dist.amin(1, keepdim=True)  # (b, 1, n)
        nearest = (low[:, 0] + x_sq).clamp_min(0.0)
        value = None
        if measure:
            value = (nearest.double() if weight is None
                     else nearest.double() * weight.double()).sum(-1)
        g1 = self._a1_gamma(c, nearest, t1, problems) * s.a1**2 / math.sqrt(e)
        if isinstance(g1, torch.Tensor):
            g1 = g1.to(dist.dtype).view(-1, 1, 1)
        weights = dist.sub_(low).mul_(-g1)  # each point's largest score is 0
        if cpu:
            weights.clamp_min_(_weight_floor(dist.dtype, dist.shape[1]))
        # The points' codes weighted, and the weights' sums: (b, m + 1, n).
        codes = _mm(self.codes1, weights.exp_())
        m = codes.shape[1] - 1
        soft = codes[:, :m] / codes[:, m:]  # (b, m, n): the points' soft codes
        # A3: the scores -g3 ||code_j - s_i||^2 + log w_i, one product of
        # [code_j, 1, |code_j|^2] (k, m + 2) with [2 g3 s_i ; log w_i - g3 |s_i|^2 ; -g3].
        g3 = s.gamma3 * t3 * s.a3**2 / math.sqrt(e)
        right = soft.new_empty((soft.shape[0], m + 2, n))
        torch.mul(soft, 2.0 * g3, out=right[:, :m])
        torch.mul(soft.square().sum(1), -g3, out=right[:, m])
        if log_w is not None:
            right[:, m] += log_w
        right[:, m + 1] = -g3
        scores = _mm(self.left, right, out=buffer)  # (b, k, n)
        floor = _A3_FLOOR + math.log(torch.finfo(scores.dtype).tiny)
        if cpu:
            scores.clamp_min_(floor)
        sums = _mm(scores.exp_(), x1)  # (b, k, d + 1): weighted sums of x, masses
        mass = sums[..., d]
        update = sums[..., :d] / mass.unsqueeze(-1)
        # A centre of this mass or more has its largest weights normal floats and the
        # floor's weights below its rounding; the others are computed again (one test
        # of all the centres first: a sum is finite where all its terms are).
        least = 4 * n * math.exp(floor) / torch.finfo(mass.dtype).eps
        if not (float(mass.min()) >= least and math.isfinite(float(sums.sum()))):
            normal = (mass >= least) & torch.isfinite(sums).all(-1)
            update = self._exact_a3(update, ~normal, soft, g3, log_w, x1, cpu)
        move = update - _mm(self._a4(t4, c.dtype), c)
        new = c + (move if size == 1.0 else size * move)
        return (new, value) if measure else new

    def _exact_a3(self, update, redo, soft, g3, log_w, x1, cpu):
        """``update`` (b, k, d) with the centres ``redo`` (b, k) computed from their
        largest score, as :func:`~skformer.nn.softmax.softmax_partial` does (a softmax
        with no point of positive weight gives 0)."""
        bi, ji = redo.nonzero(as_tuple=True)
        d = update.shape[-1]
        diff = self.codes[ji].unsqueeze(-1) - soft[bi]  # (r, m, n)
        scores = diff.square().sum(1) * -g3  # (r, n)
        absent = None
        if log_w is not None:
            scores = scores + log_w[bi]
            absent = torch.isinf(log_w[bi])
        top = scores.amax(-1, keepdim=True)
        shifted = scores - torch.where(torch.isinf(top), 0.0, top)
        if cpu:
            shifted = shifted.clamp_min(_score_floor(shifted.dtype, shifted.shape[-1]))
        p = shifted.exp()
        if absent is not None:
            p = p.masked_fill(absent, 0.0)
        sums = torch.bmm(p.unsqueeze(1), x1[bi])[:, 0]  # (r, d + 1)
        mass = sums[:, d : d + 1]
        out = update.clone()
        out[bi, ji] = torch.where(mass > 0, sums[:, :d] / torch.where(mass > 0, mass, 1.0),
                                  0.0)
        return out
