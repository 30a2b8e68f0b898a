"""Initial centres for many problems at once: k-means++ and random rows, batched.

Dimension legend: ``b`` problems, ``n`` points, ``k`` clusters, ``d`` features, ``t``
candidates per k-means++ step.

Both rules are scikit-learn's (:func:`sklearn.cluster.kmeans_plusplus`: the first
centre drawn with probability proportional to the weights, then each next one the best
of ``2 + int(ln k)`` candidates drawn proportionally to ``weight x squared distance to
the nearest centre so far``; ``init="random"``: ``k`` distinct rows drawn proportionally
to the weights), vectorised over the problems of a batch: ``O(k)`` tensor operations for
the whole batch instead of a Python loop per problem.

The functions take their random numbers as an argument (uniforms in [0, 1), one row per
problem), so the caller owns the randomness: a ``torch.Generator`` (training), or
:class:`ProblemStreams`, counter-based streams that give each problem its own numbers
whatever the other problems of the batch (:func:`skformer.batch_k_means`).
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
import torch

from .nn.kernel import ordered_sum

__all__ = [
    "ProblemStreams",
    "kmeans_plusplus",
    "kmeans_plusplus_draws",
    "local_trials",
    "random_rows",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(z) -> np.ndarray:
    """SplitMix64's output function of uint64 states (wrapping arithmetic)."""
    z = np.asarray(z, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def _step(index) -> np.ndarray:
    """``index * golden`` (wrapping) of uint64 counters."""
    with np.errstate(over="ignore"):
        return np.asarray(index, dtype=np.uint64) * _GOLDEN


class ProblemStreams:
    """Independent streams of random numbers, one per problem, counter-based.

    Draw ``j`` of the stream of key ``s`` is SplitMix64's ``j``-th output from seed
    ``s``: a pure function of ``(s, j)``. So a problem's numbers never depend on which
    other problems share its batch, on their sizes or on the order they are drawn in.

    Parameters
    ----------
    keys : ndarray of shape (b,), uint64
        One seed per problem.

    Examples
    --------
    >>> streams = ProblemStreams.from_random_state(0, 3)
    >>> u = streams.uniform(4)
    >>> u.shape, bool(((0 <= u) & (u < 1)).all())
    ((3, 4), True)
    >>> bool((ProblemStreams.from_random_state(0, 5).uniform(4)[:3] == u).all())
    True
    """

    def __init__(self, keys: np.ndarray):
        self.keys = np.asarray(keys, dtype=np.uint64).reshape(-1)

    @classmethod
    def from_random_state(cls, random_state, n_problems: int) -> ProblemStreams:
        """Streams for ``n_problems`` problems: problem ``i`` gets the ``i``-th child of
        one root seed drawn from ``random_state`` (None, an int, a
        ``numpy.random.RandomState`` or ``Generator``); or, given an array of
        ``n_problems`` ints, problem ``i`` gets its own seed ``random_state[i]`` (so its
        numbers depend on that seed alone, not on its place in the batch)."""
        if random_state is not None and not isinstance(
                random_state, (Integral, np.random.RandomState, np.random.Generator)):
            seeds = np.asarray(random_state)
            if seeds.shape != (n_problems,) or not np.issubdtype(seeds.dtype, np.integer):
                raise ValueError(
                    "random_state must be None, an int, a numpy RandomState or Generator, "
                    f"or an array of {n_problems} ints (one seed per problem); got "
                    f"{type(random_state).__name__} of shape {seeds.shape}.")
            with np.errstate(over="ignore"):
                return cls(_mix(_mix(seeds.astype(np.uint64)) + _GOLDEN))
        if isinstance(random_state, np.random.RandomState):
            root = random_state.randint(0, 2**63, dtype=np.int64)
        elif isinstance(random_state, np.random.Generator):
            root = random_state.integers(0, 2**63, dtype=np.int64)
        else:  # None (fresh entropy) or an int
            root = np.random.SeedSequence(random_state).generate_state(1, np.uint64)[0]
        with np.errstate(over="ignore"):
            return cls(_mix(np.uint64(root) + _step(np.arange(1, n_problems + 1))))

    def __len__(self) -> int:
        return self.keys.shape[0]

    def child(self, index: int) -> ProblemStreams:
        """Another set of streams, one per problem, apart from these (a problem's run
        ``index`` of ``n_init``, say)."""
        return ProblemStreams(_mix(self.keys ^ _mix(_step(index + 1))))

    def subset(self, rows) -> ProblemStreams:
        """The streams of problems ``rows``."""
        return ProblemStreams(self.keys[rows])

    def uniform(self, count: int, start: int = 0) -> np.ndarray:
        """Draws ``start`` to ``start + count - 1`` of every stream: uniforms in [0, 1)
        with 53 random bits, shape (b, count), float64."""
        draws = _step(np.arange(start + 1, start + count + 1))
        with np.errstate(over="ignore"):
            bits = _mix(self.keys[:, None] + draws[None, :]) >> np.uint64(11)
        return bits.astype(np.float64) * 2.0**-53


def local_trials(n_clusters) -> torch.Tensor | int:
    """scikit-learn's number of k-means++ candidates per centre, ``2 + int(ln k)``
    (an int, or a tensor of one per problem).

    Examples
    --------
    >>> local_trials(8), local_trials(torch.tensor([1, 20]))
    (4, tensor([2, 4]))
    """
    if isinstance(n_clusters, torch.Tensor):
        return 2 + torch.log(n_clusters.double()).floor().long()
    return 2 + int(math.log(n_clusters))


def kmeans_plusplus_draws(n_clusters) -> int:
    """How many uniforms k-means++ draws for ``n_clusters`` centres (the first centre,
    then ``local_trials`` per further centre)."""
    return 1 + (int(n_clusters) - 1) * local_trials(int(n_clusters))


def _weights(x: torch.Tensor, weight, mask) -> torch.Tensor:
    """Float64 weights (b, n) with padded rows at 0."""
    w = (torch.ones(x.shape[:2], dtype=torch.float64, device=x.device) if weight is None
         else weight.to(torch.float64))
    return w if mask is None else w * mask


def _pick(cdf: torch.Tensor, values: torch.Tensor, last: torch.Tensor,
          right: bool) -> torch.Tensor:
    """Rows of the cumulative weights ``cdf`` (b, n) where ``values`` (b, t) fall, at
    most each problem's ``last`` valid row (rounding of the sums)."""
    picks = torch.searchsorted(cdf, values.contiguous(), right=right)
    return torch.minimum(picks, last.unsqueeze(-1))


@torch.no_grad()
def kmeans_plusplus(
    x: torch.Tensor,
    n_clusters: int | torch.Tensor,
    uniforms: torch.Tensor,
    *,
    weight: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    n_local_trials: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy k-means++ centres of every problem of a batch (scikit-learn's rule).

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
        Points; padded rows must be finite.
    n_clusters : int or Tensor of shape (b,)
        Centres per problem.
    uniforms : Tensor of shape (b, m)
        Each problem's random numbers in [0, 1), at least
        :func:`kmeans_plusplus_draws` of its ``n_clusters``: draw 0 picks the first
        centre, draws ``1 + (c - 1) t`` to ``c t`` the candidates of centre ``c``
        (``t = local_trials(k)``).
    weight : Tensor of shape (b, n), default=None
        Sample weights (None: 1).
    mask : bool Tensor of shape (b, n), default=None
        Which rows are points (None: all).
    n_local_trials : int, default=None
        Candidates per centre for every problem; None is scikit-learn's
        ``2 + int(ln k)`` (:func:`local_trials`).

    Returns
    -------
    centres : Tensor of shape (b, k_max, d)
        ``x``'s dtype; the rows past a problem's ``n_clusters`` are zeros.
    indices : LongTensor of shape (b, k_max)
        The rows chosen; -1 past a problem's ``n_clusters``.

    Notes
    -----
    A candidate is drawn by inverse transform sampling on the cumulative sum (float64)
    of ``weight x closest squared distance``; squared distances are computed as
    ``|x|^2 + |c|^2 - 2 x.c`` in ``x``'s dtype and clipped at 0, and each candidate's
    potential is summed in ``x``'s dtype, as scikit-learn does, but term after term (so
    padding a problem's rows changes none of its numbers).

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0], [0.1], [10.0], [10.1]]])
    >>> u = torch.rand(1, kmeans_plusplus_draws(2), generator=torch.Generator().manual_seed(0),
    ...                dtype=torch.float64)
    >>> centres, rows = kmeans_plusplus(x, 2, u)
    >>> sorted(round(v) for v in centres.ravel().tolist())  # one centre in each group
    [0, 10]
    """
    b, n, d = x.shape
    dev = x.device
    ks = (n_clusters.to(dev) if isinstance(n_clusters, torch.Tensor)
          else torch.full((b,), int(n_clusters), device=dev))
    k_max = int(ks.max()) if b else 0
    trials = (local_trials(ks) if n_local_trials is None
              else torch.full_like(ks, int(n_local_trials)))  # (b,)
    t_max = int(trials.max()) if b else 0
    u = uniforms.to(dev, torch.float64)
    w = _weights(x, weight, mask)
    last = (n - 1 - torch.flip(w > 0, [1]).int().argmax(1)).clamp_min(0)  # last row of weight
    rows = torch.arange(b, device=dev)
    x_sq = x.square().sum(-1)  # (b, n)

    def sq_dist(cand: torch.Tensor) -> torch.Tensor:  # (b, t, d) -> (b, t, n)
        dist = torch.baddbmm(x_sq.unsqueeze(1), cand, x.transpose(1, 2), alpha=-2.0)
        return dist.add_(cand.square().sum(-1, keepdim=True)).clamp_min_(0.0)

    cdf = torch.cumsum(w, 1)
    first = _pick(cdf, (u[:, :1] * cdf[:, -1:]), last, right=True)[:, 0]
    indices = torch.full((b, k_max), -1, dtype=torch.long, device=dev)
    indices[:, 0] = first
    wx = w.to(x.dtype)
    closest = sq_dist(x[rows, first].unsqueeze(1))[:, 0]  # (b, n)
    potential = ordered_sum(wx * closest).double()
    columns = torch.arange(t_max, device=dev)
    for c in range(1, k_max):
        active = ks > c
        draw = (1 + (c - 1) * trials).unsqueeze(-1) + columns  # (b, t_max)
        values = u.gather(1, draw.clamp_max(u.shape[1] - 1)) * potential.unsqueeze(-1)
        cand_rows = _pick(torch.cumsum(w * closest, 1), values, last, right=False)
        cand = x.gather(1, cand_rows.unsqueeze(-1).expand(-1, -1, d))  # (b, t, d)
        dist = torch.minimum(sq_dist(cand), closest.unsqueeze(1))  # (b, t, n)
        cand_pot = ordered_sum(dist * wx.unsqueeze(1)).double()
        cand_pot = cand_pot.masked_fill(columns >= trials.unsqueeze(-1), float("inf"))
        best = cand_pot.argmin(-1)
        potential = torch.where(active, cand_pot[rows, best], potential)
        closest = torch.where(active.unsqueeze(-1), dist[rows, best], closest)
        indices[:, c] = torch.where(active, cand_rows[rows, best], -1)
    centres = x.gather(1, indices.clamp_min(0).unsqueeze(-1).expand(-1, -1, d))
    return centres.masked_fill((indices < 0).unsqueeze(-1), 0.0), indices


@torch.no_grad()
def random_rows(
    x: torch.Tensor,
    n_clusters: int | torch.Tensor,
    uniforms: torch.Tensor,
    *,
    weight: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n_clusters`` distinct rows of every problem, drawn without replacement with
    probability proportional to their weights (``init="random"``).

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    n_clusters : int or Tensor of shape (b,)
    uniforms : Tensor of shape (b, n)
        One uniform in [0, 1) per row (row ``j``'s number is draw ``j`` of its
        problem's stream, so it does not depend on the padding).
    weight : Tensor of shape (b, n), default=None
    mask : bool Tensor of shape (b, n), default=None

    Returns
    -------
    centres : Tensor of shape (b, k_max, d)
        Zeros past a problem's ``n_clusters``.
    indices : LongTensor of shape (b, k_max)
        -1 past a problem's ``n_clusters``.

    Notes
    -----
    Efraimidis and Spirakis' weighted sampling without replacement: the rows of the
    ``k`` largest keys ``log(u) / w`` (rows of weight 0 never drawn), in decreasing key
    order.

    Examples
    --------
    >>> import torch
    >>> x = torch.arange(10.0).reshape(1, 5, 2)
    >>> u = torch.tensor([[0.5, 0.9, 0.1, 0.7, 0.3]], dtype=torch.float64)
    >>> random_rows(x, 2, u)[1]
    tensor([[1, 3]])
    """
    b, n, d = x.shape
    dev = x.device
    ks = (n_clusters.to(dev) if isinstance(n_clusters, torch.Tensor)
          else torch.full((b,), int(n_clusters), device=dev))
    k_max = int(ks.max()) if b else 0
    w = _weights(x, weight, mask)
    u = uniforms.to(dev, torch.float64)[:, :n]
    keys = torch.log1p(-u) / w  # log(1 - u): u in [0, 1) keeps the logarithm finite
    keys = keys.masked_fill(w <= 0, -float("inf"))
    indices = keys.topk(k_max, dim=1).indices
    indices = indices.masked_fill(torch.arange(k_max, device=dev) >= ks.unsqueeze(-1), -1)
    centres = x.gather(1, indices.clamp_min(0).unsqueeze(-1).expand(-1, -1, d))
    return centres.masked_fill((indices < 0).unsqueeze(-1), 0.0), indices
