"""The learned step for inference: everything that does not depend on the centres
computed once.

Dimension legend: ``b`` problems, ``n`` points, ``k`` clusters, ``d`` features, ``e``
token width.

:func:`~skformer.nn.streaming.streamed_step` serves training and inference alike: per
step it embeds the centres, projects their tokens by four separate maps (A1's keys,
A3's queries, A1's values through A3's maps, and A4's queries, keys and values inside
A4), looks up the step's temperatures and concatenates A3's key and value maps again.
On a CPU the fixed cost of those small operations is most of a step on a context of
a few thousand points. :class:`LearnedStepper` folds what is constant across steps into
its setup:

* the centre tokens are ``[c ; code(j)]`` and every map of them is linear, so all seven
  maps are one ``(d, 7e)`` matrix applied to ``c`` plus a ``(k, 7e)`` constant that
  holds the codes' part and the biases: one product a step;
* the temperatures and step sizes of every step of the schedule, as floats;
* A3's key and value maps composed with A1's value map.

A step is then that product, A1's scale (for a model with ``normalise=True``), A1's
weights over the ``k`` centres, the points' keys and values updated by them, A3's softmax
over the points, and A4 among the centres: fewer tensor operations than the streamed
step, and no linear layer, weight concatenation or exponential of the schedule, so less
fixed cost a step where that cost dominates (small contexts on a CPU). It equals
:func:`~skformer.nn.streaming.streamed_step` up to float rounding (the maps are composed
before they are applied); no gradients.

A model at the exact construction (its projections the block selectors, only its
temperatures and step sizes learned: every shape-generic model of the store) steps in
closed form instead (:mod:`~skformer.nn.selector_step`): A1's weights over the centres
from the distances in the data's columns, the points' soft codes, A3's softmax of each
centre's code against them, A4 as a constant matrix of the codes. That reads one
``(k, n)`` array a few times and no ``e``-wide token, and equals the general path up to
float rounding.
"""

from __future__ import annotations

import copy

import torch

from .attention import distance_attention
from .embedding import index_codes
from .learned import LearnedKMeansModel
from .selector_step import SelectorStep, selector_scales
from .softmax import _matmul, softmax_partial, softmax_weights
from .streaming import PreparedPoints, _check_softmax

__all__ = ["LearnedStepper"]


def _bias(linear: torch.nn.Linear) -> torch.Tensor:
    return (linear.bias if linear.bias is not None
            else linear.weight.new_zeros(linear.weight.shape[0]))


class LearnedStepper:
    """Re-embedded learned steps on prepared points (a batch of problems).

    Parameters
    ----------
    model : LearnedKMeansModel
        With softmax attention; used as in eval mode. Its weights are read once, here:
        a model changed afterwards needs a new stepper.
    prepared : PreparedPoints
        From :func:`~skformer.nn.streaming.prepare_points`, shapes (b, n, e), with the
        keys and values (``keep_tokens`` either way).
    weight : Tensor of shape (b, n), default=None
        Sample weights of the points.

    Attributes
    ----------
    closed : SelectorStep or None
        The closed-form step of a model at the exact construction
        (:func:`~skformer.nn.selector_step.selector_scales`), which :meth:`step` takes;
        None for any other model (every projection applied).

    Examples
    --------
    >>> import torch
    >>> from skformer.nn import LearnedKMeansModel
    >>> from skformer.nn.streaming import prepare_points, streamed_step
    >>> model = LearnedKMeansModel.from_exact(2, 3, scale=4.0).eval()
    >>> x = torch.rand(1, 500, 2); c = x[:, :3]
    >>> prepared = prepare_points(model, x)
    >>> new = LearnedStepper(model, prepared).step(c)      # (b, k, d)
    >>> torch.allclose(new, streamed_step(model, prepared, c), atol=1e-5)
    True
    """

    @torch.no_grad()
    def __init__(self, model: LearnedKMeansModel, prepared: PreparedPoints,
                 weight: torch.Tensor | None = None):
        _check_softmax(model)
        if prepared.keys_values is None:
            raise ValueError("LearnedStepper needs the prepared points' keys and values "
                             "(prepare_points keeps them).")
        layer = model.layer
        a1, a3, a4 = (layer.points_to_centres, layer.centres_to_points,
                      layer.centres_to_centres)
        self.a1, self.a3, self.a4 = a1, a3, a4
        self.prepared, self.weight = prepared, weight
        self.d, self.e = model.n_features, prepared.queries.shape[-1]
        dtype, device = prepared.queries.dtype, prepared.queries.device
        kv_maps = torch.cat([a3.k_proj.weight, a3.v_proj.weight])  # (2e, e)
        maps = [(a1.k_proj.weight, _bias(a1.k_proj)),
                (a3.q_proj.weight, _bias(a3.q_proj)),
                (kv_maps @ a1.v_proj.weight, kv_maps @ _bias(a1.v_proj)),
                (a4.q_proj.weight, _bias(a4.q_proj)),
                (a4.k_proj.weight, _bias(a4.k_proj)),
                (a4.v_proj.weight, _bias(a4.v_proj))]
        w = torch.cat([m for m, _ in maps]).to(device, dtype)  # (7e, e)
        b = torch.cat([v for _, v in maps]).to(device, dtype)  # (7e,)
        codes = index_codes(model.embedding, model.n_clusters, dtype=dtype, device=device)
        self.centre_map = w[:, : self.d].T.contiguous()  # (d, 7e)
        self.centre_base = torch.addmm(b, codes, w[:, self.d :].T)  # (k, 7e)
        steps = max(1, model.schedule)
        self.temperatures = [
            (1.0, 1.0, 1.0) if model.temperature(s) is None
            else tuple(float(t) for t in model.temperature(s)) for s in range(steps)]
        self.step_sizes = [1.0 if model.step_size(s) is None else float(model.step_size(s))
                           for s in range(steps)]
        scales = selector_scales(model)
        self.closed = None if scales is None else SelectorStep(model, prepared, weight, scales)

    @property
    def measures(self) -> bool:
        """Whether :meth:`measured_step` gives the objective (the closed form)."""
        return self.closed is not None

    def scaled(self, factor: float) -> LearnedStepper:
        """This stepper with every step's inverse temperatures (A1's, A3's and A4's)
        multiplied by ``factor``: sharper attention for ``factor > 1``. It shares the
        prepared points and maps; step sizes are unchanged.

        Examples
        --------
        >>> import torch
        >>> from skformer.nn import LearnedKMeansModel
        >>> from skformer.nn.streaming import prepare_points
        >>> schedule = torch.log(torch.tensor([[4.0, 20.0, 20.0]]))
        >>> model = LearnedKMeansModel.from_schedule(2, 3, schedule).eval()
        >>> sharp = LearnedKMeansModel.from_schedule(2, 3, schedule + torch.log(torch.tensor(2.0)))
        >>> x = torch.rand(1, 300, 2); c = x[:, :3]
        >>> a = LearnedStepper(model, prepare_points(model, x)).scaled(2.0).step(c)
        >>> b = LearnedStepper(sharp, prepare_points(sharp, x)).step(c)
        >>> torch.allclose(a, b, atol=1e-5)
        True
        """
        factor = float(factor)
        if not (factor > 0 and factor < float("inf")):
            raise ValueError(f"factor must be a finite number > 0, got {factor!r}.")
        out = copy.copy(self)
        out.temperatures = [tuple(factor * t for t in row) for row in self.temperatures]
        return out

    @torch.no_grad()
    def step(self, c: torch.Tensor, step: int = 0,
             problems: torch.Tensor | None = None) -> torch.Tensor:
        """One learned step from centres ``c`` (b, k, d) (the model frame) of the
        prepared problems, or of those at the indices ``problems`` (b,); returns the new
        centres (b, k, d). A problem's step does not depend on the others in the batch."""
        return self._step(c, step, problems, False)[0]

    @torch.no_grad()
    def measured_step(self, c: torch.Tensor, step: int = 0,
                      problems: torch.Tensor | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """:meth:`step`, and the k-means objective of the points (b,) float64 at ``c``
        where the step finds it on the way: the closed form (:attr:`closed`) measures
        each point's nearest distance for A1; None for any other model.

        Examples
        --------
        >>> import torch
        >>> from skformer.nn import LearnedKMeansModel
        >>> from skformer.nn.streaming import prepare_points
        >>> model = LearnedKMeansModel.from_exact(2, 3, scale=4.0).eval()
        >>> x = torch.rand(1, 500, 2); c = x[:, :3]
        >>> new, value = LearnedStepper(model, prepare_points(model, x)).measured_step(c)
        >>> exact = torch.cdist(x, c).square().amin(-1).double().sum(-1)
        >>> new.shape, torch.allclose(value, exact, rtol=1e-4)
        (torch.Size([1, 3, 2]), True)
        """
        return self._step(c, step, problems, True)

    def _step(self, c: torch.Tensor, step: int, problems: torch.Tensor | None,
              measure: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        e, d = self.e, self.d
        t1, t3, t4 = self.temperatures[min(int(step), len(self.temperatures) - 1)]
        p, weight = self.prepared, self.weight
        size = self.step_sizes[min(int(step), len(self.step_sizes) - 1)]
        if self.closed is not None:
            if measure:
                return self.closed.step(c, (t1, t3, t4), size, problems, measure=True)
            return self.closed.step(c, (t1, t3, t4), size, problems), None
        if problems is not None:
            p = p._replace(**{f: None if v is None else v[problems]
                              for f, v in p._asdict().items()})
            weight = None if weight is None else weight[problems]
        proj = torch.matmul(c, self.centre_map) + self.centre_base  # (b, k, 7e)
        a1_keys, a3_queries = proj[..., :e], proj[..., e : 2 * e]
        a1_values, a4_qkv = proj[..., 2 * e : 4 * e], proj[..., 4 * e :]
        a1_gamma = self.a1.inverse_temperature(p.scale_queries, a1_keys, t1, p.scale_weight,
                                               p.scale_sq)
        weights = softmax_weights(p.queries, a1_keys, gamma=a1_gamma)  # (b, n, k)
        kv = p.keys_values + _matmul(weights, a1_values)
        update = softmax_partial(a3_queries, kv[..., :e], kv[..., e:],
                                 gamma=self.a3.gamma * t3, key_weight=weight).result()
        q4, k4, v4 = a4_qkv[..., :e], a4_qkv[..., e : 2 * e], a4_qkv[..., 2 * e :]
        a4 = self.a4
        among = distance_attention(q4, k4, v4, gamma=a4.inverse_temperature(q4, k4, t4),
                                   activation=a4.activation, tie_break=a4.tie_break)
        move = (update + among)[..., :d]
        return c + (move if size == 1.0 else size * move), None
