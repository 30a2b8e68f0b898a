"""The learned k-means transformer: one soft-attention layer of eq. (4).

Dimension legend: ``b`` batch, ``n`` points, ``k`` clusters, ``d`` features,
``e`` token width (``d + m``, ``m`` index columns of the embedding).

A single layer with inverse temperature ``gamma = 1``, softmax (or sparsemax) distance
attention and biased projections, trained so that one forward pass is a good clustering
step. It is tied to one ``(d, k)``. Every call of :meth:`LearnedKMeansModel.step`
re-embeds: fresh point tokens ``[x ; 0]`` from the original points and fresh centre
tokens ``[c ; code]`` from the current centres, so iterating steps is iterating a map
``C -> F(X, C)`` on centres (the paper's re-embedding).

Two options go beyond the paper, for models trained over several re-embedded steps:

- ``normalise=True``: A1's scores are divided, per task, by the mean squared distance
  from a point to its nearest centre (in A1's projected space). The softness of the
  assignment is then relative to the current spread of the clusters: the same at every
  scale of the data, and it hardens by itself as the centres converge.
- ``schedule=S``: learned inverse-temperature multipliers of A1, A3 and A4 for each of
  the first ``S`` steps (``log_temperature``, shape (S, 3)); step ``t >= S`` uses row
  ``S - 1``. (A2 reads only point tokens, which re-embedding makes the same at every
  step; keeping its temperature fixed keeps its output computable once.) Iterated,
  the model anneals: soft steps that move centres out of poor configurations, then
  sharper ones that settle.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .embedding import EMBEDDINGS, check_step_shapes, embed_centres, embed_points, index_width
from .layer import KMeansLayer, set_block_selectors

__all__ = ["LearnedKMeansModel"]


class LearnedKMeansModel(nn.Module):
    """One trainable layer of eq. (4) that maps centres to better centres.

    Parameters
    ----------
    n_features : int
        Data dimension ``d``.
    n_clusters : int
        Number of centres ``k``.
    embedding : {"binary", "onehot", "none"}, default="binary"
        Cluster-index embedding: token width ``d + ceil(log2 k)``, ``d + k`` or ``d``.
    gamma : float, default=1.0
        Inverse temperature of the four attentions.
    activation : {"softmax", "sparsemax"}, default="softmax"
    bias : bool, default=True
        Biases in the twelve projections.
    dropout : float, default=0.01
        Dropout on attention weights, in training mode only.
    normalise : bool, default=False
        Scale-free assignment in A1 (see the module's docstring).
    schedule : int, default=0
        Number of steps with their own learned inverse-temperature multipliers
        (0: none, every step is the same map, as in the paper).
    step_size : bool, default=False
        With ``schedule > 0``: a learned multiplier of the centre update per scheduled
        step (see the module's docstring); False keeps eq. (4)'s unit step.

    Attributes
    ----------
    layer : KMeansLayer
        The twelve projections of eq. (4).
    log_temperature : Parameter of shape (schedule, 3) or None
        Log inverse-temperature multipliers of A1, A3 and A4 for each scheduled step.
    log_step_size : Parameter of shape (schedule,) or None
        Log multipliers of the centre update for each scheduled step
        (``step_size=True``; zeros, a unit step, at construction).

    Examples
    --------
    >>> import torch
    >>> model = LearnedKMeansModel.from_exact(2, 3, scale=4.0)
    >>> x = torch.rand(5, 64, 2)            # (b, n, d)
    >>> c = x[:, :3]                          # (b, k, d)
    >>> model.step(x, c).shape
    torch.Size([5, 3, 2])
    >>> model.iterate(x, c, 4).shape          # (b, T + 1, k, d), step 0 = c
    torch.Size([5, 5, 3, 2])
    """

    def __init__(
        self,
        n_features: int,
        n_clusters: int,
        *,
        embedding: str = "binary",
        gamma: float = 1.0,
        activation: str = "softmax",
        bias: bool = True,
        dropout: float = 0.01,
        normalise: bool = False,
        schedule: int = 0,
        step_size: bool = False,
    ) -> None:
        super().__init__()
        if embedding not in EMBEDDINGS:
            raise ValueError(f"embedding must be one of {EMBEDDINGS}, got {embedding!r}.")
        if activation not in ("softmax", "sparsemax"):
            raise ValueError(
                f"activation must be 'softmax' or 'sparsemax', got {activation!r}."
            )
        self.n_features = n_features
        self.n_clusters = n_clusters
        self.embedding = embedding
        self.gamma = gamma
        self.activation = activation
        self.bias = bias
        self.dropout = dropout
        if isinstance(schedule, bool) or int(schedule) != schedule or schedule < 0:
            raise ValueError(f"schedule must be an int >= 0, got {schedule!r}.")
        self.normalise = bool(normalise)
        self.schedule = int(schedule)
        width = n_features + index_width(embedding, n_clusters)
        self.layer = KMeansLayer(
            width, activation=activation, gamma=gamma, bias=bias, dropout=dropout,
            normalise=self.normalise,
        )
        self.log_temperature = (
            nn.Parameter(torch.zeros(self.schedule, 3)) if self.schedule else None
        )
        if step_size and not self.schedule:
            raise ValueError("step_size=True needs a schedule (schedule >= 1).")
        self.log_step_size = (
            nn.Parameter(torch.zeros(self.schedule)) if step_size else None
        )

    @property
    def config(self) -> dict:
        """Constructor arguments: ``LearnedKMeansModel(**model.config)`` rebuilds it."""
        return {
            "n_features": self.n_features,
            "n_clusters": self.n_clusters,
            "embedding": self.embedding,
            "gamma": self.gamma,
            "activation": self.activation,
            "bias": self.bias,
            "dropout": self.dropout,
            "normalise": self.normalise,
            "schedule": self.schedule,
            "step_size": self.log_step_size is not None,
        }

    def temperature(self, step: int = 0) -> torch.Tensor | None:
        """Inverse-temperature multipliers of A1, A3 and A4 at ``step`` (shape (3,)), or
        None for a model without a schedule."""
        if self.log_temperature is None:
            return None
        return self.log_temperature[min(int(step), self.schedule - 1)].exp()

    def step_size(self, step: int = 0) -> torch.Tensor | None:
        """Multiplier of the centre update at ``step`` (a 0-d tensor), or None for a
        model without learned step sizes (a unit step)."""
        if self.log_step_size is None:
            return None
        return self.log_step_size[min(int(step), self.schedule - 1)].exp()

    @classmethod
    def from_exact(
        cls,
        n_features: int,
        n_clusters: int,
        *,
        scale: float = 4.0,
        temperature: tuple[float, float, float] | None = None,
        **kwargs,
    ) -> LearnedKMeansModel:
        """A model initialised at the exact construction, softened.

        The projections are the block selectors of Theorem 2.1 with every query and key
        matrix multiplied by ``scale`` (the attention's inverse temperature becomes
        ``gamma * scale**2``) and zero biases. ``scale -> inf`` is Lloyd's algorithm;
        a finite scale is a soft Lloyd step, a principled start for training.
        Requires the ``"binary"`` or ``"onehot"`` embedding.

        Parameters
        ----------
        n_features, n_clusters : int
        scale : float, default=4.0
        temperature : 3 floats, default=None
            Initial inverse-temperature multipliers of A1, A3 and A4 at every scheduled
            step (with ``schedule > 0``); None leaves them at 1.
        **kwargs
            Other constructor arguments (``embedding``, ``gamma``, ``normalise``,
            ``schedule``, ...).

        Examples
        --------
        >>> model = LearnedKMeansModel.from_exact(2, 3, scale=1.0, normalise=True,
        ...                                       schedule=5, temperature=(8, 40, 40))
        >>> model.temperature(7).tolist()  # step 7 uses the last scheduled row
        [8.0, 40.0, 40.0]
        """
        model = cls(n_features, n_clusters, **kwargs)
        if model.embedding == "none":
            raise ValueError("from_exact needs the 'binary' or 'onehot' embedding.")
        set_block_selectors(
            model.layer, n_features, index_width(model.embedding, n_clusters), qk_scale=scale
        )
        if temperature is not None and model.log_temperature is not None:
            with torch.no_grad():
                values = torch.as_tensor(temperature, dtype=model.log_temperature.dtype)
                model.log_temperature.copy_(values.log().expand_as(model.log_temperature))
        return model

    @classmethod
    def from_schedule(
        cls,
        n_features: int,
        n_clusters: int,
        log_effective: torch.Tensor,
        *,
        log_step_size: torch.Tensor | None = None,
        embedding: str = "binary",
    ) -> LearnedKMeansModel:
        """The exact construction at any ``(d, k)`` driven by a shape-free schedule.

        A scheduled model whose projections are the exact construction (``scale=1``,
        ``normalise=True``) is described entirely by its *effective* inverse
        temperatures: A1's per mean squared distance to the nearest centre, A3's and
        A4's per differing code bit. None of them depends on ``d`` or ``k``, so one
        schedule serves every shape; only the attention's ``1/sqrt(e)`` is compensated
        here, for the token width ``e`` of the shape built.

        Parameters
        ----------
        n_features, n_clusters : int
        log_effective : Tensor of shape (S, 3)
            Log effective inverse temperatures of A1, A3 and A4 for each of ``S`` steps.
        log_step_size : Tensor of shape (S,), default=None
            Log step sizes of the centre update (shape-free as well); None: unit steps
            and no ``log_step_size`` parameter.
        embedding : {"binary", "onehot"}, default="binary"

        Examples
        --------
        >>> import torch
        >>> schedule = torch.log(torch.tensor([[4.0, 20.0, 20.0], [50.0, 40.0, 40.0]]))
        >>> a = LearnedKMeansModel.from_schedule(3, 64, schedule)
        >>> b = LearnedKMeansModel.from_schedule(700, 5, schedule)
        >>> a.schedule, a.layer.embed_dim, b.layer.embed_dim
        (2, 9, 703)
        >>> x = torch.rand(1, 200, 3)
        >>> a.iterate(x, x[:, :64], 3).shape
        torch.Size([1, 4, 64, 3])
        """
        log_effective = torch.as_tensor(log_effective, dtype=torch.float32)
        if log_effective.ndim != 2 or log_effective.shape[1] != 3 or not len(log_effective):
            raise ValueError("log_effective must have shape (S, 3) with S >= 1, got "
                             f"{tuple(log_effective.shape)}.")
        model = cls.from_exact(n_features, n_clusters, scale=1.0, embedding=embedding,
                               normalise=True, schedule=len(log_effective), dropout=0.0,
                               step_size=log_step_size is not None)
        model.set_effective_schedule(log_effective)
        if log_step_size is not None:
            log_step_size = torch.as_tensor(log_step_size, dtype=torch.float32)
            if log_step_size.shape != (len(log_effective),):
                raise ValueError(f"log_step_size must have shape ({len(log_effective)},), "
                                 f"got {tuple(log_step_size.shape)}.")
            with torch.no_grad():
                model.log_step_size.copy_(log_step_size)
        return model

    def _schedule_shift(self) -> float:
        """Log of the factor between the model's multipliers and the effective inverse
        temperatures at ``scale=1``: the attention's ``gamma / sqrt(e)`` compensated."""
        width = self.n_features + index_width(self.embedding, self.n_clusters)
        return 0.5 * math.log(width) - math.log(self.gamma)

    @torch.no_grad()
    def set_effective_schedule(self, log_effective: torch.Tensor) -> None:
        """Set the schedule from log effective inverse temperatures (S, 3) (a model at
        ``scale=1``, as :meth:`from_schedule` builds)."""
        if self.log_temperature is None:
            raise ValueError("the model has no temperature schedule.")
        self.log_temperature.copy_(log_effective + self._schedule_shift())

    def effective_schedule(self) -> torch.Tensor:
        """The log effective inverse temperatures of a scheduled model at ``scale=1``
        (the inverse of :meth:`set_effective_schedule`), shape (S, 3)."""
        if self.log_temperature is None:
            raise ValueError("the model has no temperature schedule.")
        return self.log_temperature.detach() - self._schedule_shift()

    def forward(
        self,
        x: torch.Tensor,
        c: torch.Tensor,
        *,
        step: int = 0,
        generator: torch.Generator | None = None,
        points_update: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """One re-embedded clustering step.

        Parameters
        ----------
        x : Tensor of shape (b, n, d)
        c : Tensor of shape (b, k, d)
        step : int, default=0
            Index of the step in an iteration (selects the row of the schedule).
        generator : torch.Generator, default=None
            Source of the dropout masks in training mode.
        points_update : Tensor of shape (b, n, e), default=None
            A2's output on the point tokens ``[x ; 0]``, from :meth:`points_update`
            (the same at every re-embedded step); None computes it.

        Returns
        -------
        Tensor of shape (b, k, d)
            The first ``d`` coordinates of the updated centre tokens.
        """
        check_step_shapes(x, c, self.n_features, self.n_clusters)
        points = embed_points(x, self.embedding, self.n_clusters)
        centres = embed_centres(c, self.embedding)
        out = self.layer(points, centres, temperature=self.temperature(step),
                         step_size=self.step_size(step), points_update=points_update,
                         generator=generator)
        return out.centres[..., : self.n_features]

    def points_update(
        self, x: torch.Tensor, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """A2's output on the point tokens ``[x ; 0]``, shape (b, n, e).

        Re-embedded steps all start from these tokens, so one computation serves every
        step of an iteration (pass it to :meth:`forward` as ``points_update``).
        """
        points = embed_points(x, self.embedding, self.n_clusters)
        return self.layer.points_to_points(points, points, generator=generator)

    def step(self, x: torch.Tensor, c: torch.Tensor, step: int = 0) -> torch.Tensor:
        """One clustering step: centres (b, k, d) from points (b, n, d) and centres."""
        return self(x, c, step=step)

    def iterate(
        self, x: torch.Tensor, c: torch.Tensor, n_steps: int, *, reembed: bool = True
    ) -> torch.Tensor:
        """Several steps, re-embedded (the default) or by naive iteration of eq. (4).

        Parameters
        ----------
        x : Tensor of shape (b, n, d)
        c : Tensor of shape (b, k, d)
        n_steps : int
        reembed : bool, default=True
            If True, each step rebuilds the tokens from ``x`` and the current centres.
            If False, the layer is applied to its own output tokens (points and codes
            as the layer left them), reading out the centres after each application.

        Returns
        -------
        Tensor of shape (b, n_steps + 1, k, d)
            The centres before the first step and after each step.
        """
        history = [c]
        if reembed:
            update = self.points_update(x) if n_steps > 1 else None
            for t in range(n_steps):
                c = self(x, c, step=t, points_update=update)
                history.append(c)
        else:
            points = embed_points(x, self.embedding, self.n_clusters)
            centres = embed_centres(c, self.embedding)
            for t in range(n_steps):
                points, centres = self.layer(points, centres, temperature=self.temperature(t),
                                             step_size=self.step_size(t))
                history.append(centres[..., : self.n_features])
        return torch.stack(history, dim=1)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.config.items())
