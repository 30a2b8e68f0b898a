"""Random clustering tasks: mixtures of five families, as in the paper's generator (spec §4).

Dimension legend: ``b`` tasks, ``n`` points, ``k`` clusters (mixture components),
``d`` features.

Every draw comes from an explicit :class:`torch.Generator`; nothing touches the global
seed. The same generator state gives bitwise identical tasks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import torch

from . import seeding
from .seeding import local_trials

__all__ = [
    "FAMILIES",
    "TaskBatch",
    "TaskConfig",
    "kmeans_plusplus",
    "minmax_scale",
    "sample_tasks",
    "standard_noise",
]

FAMILIES = ("normal", "cauchy", "gumbel", "laplace", "lognormal")


@dataclass(frozen=True)
class TaskConfig:
    """Distribution of random clustering tasks (spec §4.1).

    Parameters
    ----------
    n_points : int, default=512
        Points per task, ``n``.
    n_features : int, default=32
        Dimension of the points, ``d``.
    n_clusters : int, default=10
        Mixture components per task, ``k``; also the number of initial centres.
    family : {"normal", "cauchy", "gumbel", "laplace", "lognormal"}, default="normal"
        Family of every component, with :mod:`torch.distributions`' ``(loc, scale)``
        parametrisation.
    scale : float, default=0.1
        Per-dimension scale of each component.
    isotropic : bool, default=True
        If True, every component has scale ``scale`` in every dimension; if False, each
        component gets per-dimension scales ``scale * U(0, 1)^d``.
    equal_weights : bool, default=True
        If True, the mixture weights are ``1/k``; if False, ``U(0, 1)^k`` normalised (what
        the paper's code runs; the paper says "sampled from the simplex").
    n_components : int or None, default=None
        Mixture components, when not ``n_clusters`` (None). With fewer components than
        clusters the ``k`` clusters tile a few wide densities, as when pixels are
        quantised to a palette or a sub-space is given a codebook (not in the paper).

    Examples
    --------
    >>> TaskConfig(n_points=64, n_features=2, n_clusters=3, family="laplace")
    TaskConfig(n_points=64, n_features=2, n_clusters=3, family='laplace', scale=0.1, \
isotropic=True, equal_weights=True, n_components=None)
    """

    n_points: int = 512
    n_features: int = 32
    n_clusters: int = 10
    family: str = "normal"
    scale: float = 0.1
    isotropic: bool = True
    equal_weights: bool = True
    n_components: int | None = None

    def __post_init__(self) -> None:
        for name in ("n_points", "n_features", "n_clusters"):
            value = getattr(self, name)
            if not isinstance(value, Integral) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}.")
        if self.n_features < 1:
            raise ValueError(f"n_features must be >= 1, got {self.n_features}.")
        if self.n_clusters < 1:
            raise ValueError(f"n_clusters must be >= 1, got {self.n_clusters}.")
        if self.n_points < self.n_clusters:
            raise ValueError(f"n_points={self.n_points} should be >= n_clusters={self.n_clusters}.")
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}.")
        if self.n_components is not None and (
                not isinstance(self.n_components, Integral)
                or isinstance(self.n_components, bool) or self.n_components < 1):
            raise ValueError(f"n_components must be an int >= 1 or None, got "
                             f"{self.n_components!r}.")
        if (
            not isinstance(self.scale, Real)
            or isinstance(self.scale, bool)
            or not math.isfinite(self.scale)
            or self.scale <= 0
        ):
            raise ValueError(f"scale must be a finite number > 0, got {self.scale!r}.")


class TaskBatch(NamedTuple):
    """A batch of clustering tasks and their initial centres."""

    x: torch.Tensor
    """Points, shape (b, n, d), min-max scaled to [0, 1] per task and per dimension."""
    centres: torch.Tensor
    """Initial centres, shape (b, k, d): the first k points of ``x`` (``x`` is in random
    order, so they are a uniformly random k-subset of the task's points)."""


def _uniform_open(shape, generator, dtype) -> torch.Tensor:
    # U(0, 1) without the atom at 0 (torch.rand is in [0, 1)), so every inverse CDF is finite.
    u = torch.rand(shape, generator=generator, dtype=dtype, device=generator.device)
    return u.clamp_(min=torch.finfo(dtype).eps)


def standard_noise(
    family: str,
    shape: tuple[int, ...],
    *,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Standard (loc 0, scale 1) noise of a family, drawn from an explicit generator.

    :mod:`torch.distributions`' ``sample`` takes no generator, so the non-normal families
    use inverse-CDF transforms of ``torch.rand``. For ``"lognormal"`` the result is the
    standard *normal* noise ``z``: a LogNormal(loc, scale) point is ``exp(loc + scale * z)``.

    Parameters
    ----------
    family : {"normal", "cauchy", "gumbel", "laplace", "lognormal"}
    shape : tuple of int
    generator : torch.Generator
        The tensor is created on this generator's device.
    dtype : torch.dtype, default=torch.float32
        A floating dtype.

    Returns
    -------
    Tensor of shape ``shape``

    Notes
    -----
    With ``u ~ U(0, 1)`` (clamped below at the dtype's machine epsilon):

    - laplace: ``log(2u)`` if ``u < 1/2`` else ``-log(2(1 - u))``;
    - gumbel: ``-log(-log u)``;
    - cauchy: ``tan(pi (u - 1/2))``.

    These are the inverse CDFs of ``Laplace(0, 1)``, ``Gumbel(0, 1)`` and ``Cauchy(0, 1)``.

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> standard_noise("gumbel", (2, 3), generator=g).shape
    torch.Size([2, 3])
    """
    if family in ("normal", "lognormal"):
        return torch.randn(shape, generator=generator, dtype=dtype, device=generator.device)
    u = _uniform_open(shape, generator, dtype)
    if family == "laplace":
        return torch.where(u < 0.5, torch.log(2 * u), -torch.log(2 * (1 - u)))
    if family == "gumbel":
        return -torch.log(-torch.log(u))
    if family == "cauchy":
        return torch.tan(math.pi * (u - 0.5))
    raise ValueError(f"family must be one of {FAMILIES}, got {family!r}.")


def minmax_scale(x: torch.Tensor) -> torch.Tensor:
    """Scale every task and dimension to [0, 1] over the points.

    Parameters
    ----------
    x : Tensor of shape (b, n, d)

    Returns
    -------
    Tensor of shape (b, n, d)
        ``(x - min) / (max - min)`` along ``n``; 0 where the range is zero (a constant
        dimension) and wherever the result would be NaN (non-finite input).

    Examples
    --------
    >>> import torch
    >>> minmax_scale(torch.tensor([[[1.0, 5.0], [3.0, 5.0], [2.0, 5.0]]]))
    tensor([[[0.0000, 0.0000],
             [1.0000, 0.0000],
             [0.5000, 0.0000]]])
    """
    lo = x.amin(dim=1, keepdim=True)
    span = x.amax(dim=1, keepdim=True) - lo
    positive = span > 0
    scaled = (x - lo) / torch.where(positive, span, torch.ones_like(span))
    scaled = torch.where(positive, scaled, torch.zeros_like(scaled))
    return torch.nan_to_num(scaled, nan=0.0, posinf=1.0, neginf=0.0)


def sample_tasks(
    config: TaskConfig,
    batch_size: int,
    *,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> TaskBatch:
    """Draw a batch of random clustering tasks and their initial centres (spec §4.1).

    Parameters
    ----------
    config : TaskConfig
    batch_size : int
        Number of tasks ``b``.
    generator : torch.Generator
        The only source of randomness. Everything is drawn on the generator's device and
        then moved to ``device``, so a CPU generator gives the same tasks on every device.
    dtype : torch.dtype, default=torch.float32
        Floating dtype of the result (half precisions are drawn in float32, then cast).
    device : torch.device or str, default=None
        Device of the result; None means the generator's device.

    Returns
    -------
    TaskBatch
        ``x`` of shape (b, n, d) and ``centres`` of shape (b, k, d).

    Notes
    -----
    For each task, in this order of draws:

    1. means ``l_j ~ U(0, 1)^d`` (``j`` over the ``n_components``, ``k`` by default);
    2. scales ``s_j = scale * 1_d`` (isotropic) or ``scale * U(0, 1)^d``;
    3. weights ``1/k`` (equal) or ``U(0, 1)^k`` normalised;
    4. the component ``a_i`` of each point from the weights, then
       ``x_i = l_{a_i} + s_{a_i} * z_i`` with ``z_i`` standard noise of the family
       (:func:`standard_noise`), or ``exp(l_{a_i} + s_{a_i} * z_i)`` for lognormal;
    5. per-dimension min-max scaling to [0, 1] (:func:`minmax_scale`);
    6. a uniformly random permutation of the points; the centres are the first ``k``.

    Examples
    --------
    >>> import torch
    >>> config = TaskConfig(n_points=20, n_features=2, n_clusters=3)
    >>> batch = sample_tasks(config, 4, generator=torch.Generator().manual_seed(0))
    >>> batch.x.shape, batch.centres.shape
    (torch.Size([4, 20, 2]), torch.Size([4, 3, 2]))
    >>> bool(torch.equal(batch.centres, batch.x[:, :3]))
    True
    """
    if not isinstance(config, TaskConfig):
        raise TypeError(f"config must be a TaskConfig, got {type(config).__name__}.")
    if not isinstance(batch_size, Integral) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}.")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}.")
    if not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating dtype, got {dtype}.")
    b, n, d, k = int(batch_size), config.n_points, config.n_features, config.n_clusters
    components = k if config.n_components is None else int(config.n_components)
    work = torch.promote_types(dtype, torch.float32)
    gen_device = generator.device

    def rand(*shape):
        return torch.rand(shape, generator=generator, dtype=work, device=gen_device)

    means = rand(b, components, d)
    if config.isotropic:
        scales = torch.full((b, components, d), config.scale, dtype=work, device=gen_device)
    else:
        scales = config.scale * rand(b, components, d)
    weights = (
        torch.ones(b, components, dtype=work, device=gen_device) if config.equal_weights
        else rand(b, components)
    )
    component = torch.multinomial(weights, n, replacement=True, generator=generator)  # (b, n)
    index = component.unsqueeze(-1).expand(b, n, d)
    loc = means.gather(1, index)
    spread = scales.gather(1, index)
    z = standard_noise(config.family, (b, n, d), generator=generator, dtype=work)
    x = loc + spread * z
    if config.family == "lognormal":
        x = torch.exp(x)
    x = minmax_scale(x)
    order = torch.stack(
        [torch.randperm(n, generator=generator, device=gen_device) for _ in range(b)]
    )
    x = x.gather(1, order.unsqueeze(-1).expand(b, n, d))
    x = x.to(device=gen_device if device is None else device, dtype=dtype)
    return TaskBatch(x=x, centres=x[:, :k].clone())


def kmeans_plusplus(
    x: torch.Tensor,
    n_clusters: int,
    *,
    generator: torch.Generator,
    n_local_trials: int | None = None,
) -> torch.Tensor:
    """Greedy k-means++ seeding of every task of a batch.

    The rule of :func:`sklearn.cluster.kmeans_plusplus`: the first centre is a uniformly
    random point; each next one is the best (lowest potential) of ``n_local_trials``
    candidates drawn with probability proportional to the squared distance to the
    nearest centre chosen so far. This is :func:`skformer.seeding.kmeans_plusplus`
    with its uniforms drawn from ``generator``.

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    n_clusters : int
        ``k <= n``.
    generator : torch.Generator
        The only source of randomness (draws happen on its device).
    n_local_trials : int, default=None
        Candidates per centre; None is scikit-learn's ``2 + int(log(k))``.

    Returns
    -------
    Tensor of shape (b, k, d)
        Points of each task.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [0.1], [10.0], [10.1]]])
    >>> c = kmeans_plusplus(x, 2, generator=torch.Generator().manual_seed(0))
    >>> sorted(round(v) for v in c.ravel().tolist())  # one centre in each group
    [0, 10]
    """
    b, n, d = x.shape
    k = int(n_clusters)
    if not 1 <= k <= n:
        raise ValueError(f"n_clusters must be in [1, n_points={n}], got {n_clusters!r}.")
    trials = n_local_trials or local_trials(k)
    u = torch.rand((b, 1 + (k - 1) * trials), generator=generator, dtype=torch.float64,
                   device=generator.device)
    return seeding.kmeans_plusplus(x, k, u, n_local_trials=trials)[0]
