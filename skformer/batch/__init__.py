"""Many clustering problems in one call: :func:`batch_k_means`.

The transformer's own form is a batch of problems, points ``(b, n, d)`` and centres
``(b, k, d)``. :func:`batch_k_means` clusters every problem of such a batch at once -
product-quantisation codebooks (one k-means per sub-space), a colour palette per image
or tile, k-means over each image's patch tokens or each attention head's keys - where a
loop of :class:`sklearn.cluster.KMeans` pays a fixed cost per problem.

Per problem, the result is :class:`~sklearn.cluster.KMeans`' (``algorithm="lloyd"``,
the same ``init`` centres, ``tol`` relative to that problem's variance), except that a
cluster left without points keeps its centre. Problems of different sizes are padded
and masked; each stops on its own; a problem's result never depends on the other
problems of the batch.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from .._fit.blas import one_blas_thread
from .._fit.learned import LearnedSetup, auto_context, auto_polish, learned_pace
from .._fit.moves import BREATHING_DEPTH
from .._fit.runs import breathe_problem
from ..seeding import ProblemStreams, kmeans_plusplus, kmeans_plusplus_draws, random_rows
from ..store.selection import choose_model
from ._inputs import ProblemBlock, Problems, as_problems, warn_explicit_init
from ._large import fit_large, large_problems, split_blocks
from ._learned import block_context, learned_steps, problem_polish
from ._lloyd import RunState, final_assignment, pick_best, run_batch_lloyd, split_runs

__all__ = ["BatchKMeansResult", "batch_k_means"]

# Largest (problems, candidates, rows) block of k-means++ distances at once.
_SEED_BUDGET = 2**21


class BatchKMeansResult(NamedTuple):
    """The result of :func:`batch_k_means`; unpacks like a tuple.

    With a 3-D ``X``: arrays (NumPy in, NumPy out; a tensor in, tensors out on its
    device). With a list ``X``: ``cluster_centers`` and ``labels`` are lists, one entry
    per problem, and ``inertia`` and ``n_iter`` arrays.
    """

    cluster_centers: np.ndarray | torch.Tensor | list
    """Shape (b, k, d), X's float dtype; the rows past a problem's ``n_clusters`` are
    NaN (a list: one (k_i, d) array per problem)."""
    labels: np.ndarray | torch.Tensor | list
    """Shape (b, n): int32 for NumPy, int64 for torch; -1 on padded rows (a list: one
    (n_i,) array per problem)."""
    inertia: np.ndarray | torch.Tensor
    """Shape (b,), float64: each problem's sum of weighted squared distances."""
    n_iter: np.ndarray | torch.Tensor
    """Shape (b,), int64: iterations of each problem's best run."""


def _check_params(init, n_init, max_iter, tol, learned_starts, breathing_depth,
                  hartigan, learned_polish) -> None:
    if isinstance(init, str) and init not in ("k-means++", "random"):
        raise ValueError(f"init must be 'k-means++', 'random', an array of shape "
                         f"(n_problems, n_clusters, n_features) or a list of arrays; got "
                         f"{init!r}.")
    for name, value, low in (("n_init", n_init, 1), ("max_iter", max_iter, 1),
                             ("learned_starts", learned_starts, 0)):
        if not isinstance(value, Integral) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}.")
    if not isinstance(tol, Real) or isinstance(tol, bool) or not tol >= 0:
        raise ValueError(f"tol must be a float >= 0, got {tol!r}.")
    if breathing_depth != "auto" and (not isinstance(breathing_depth, Integral)
                                      or isinstance(breathing_depth, bool)
                                      or breathing_depth < 0):
        raise ValueError(f"breathing_depth must be 'auto' or an int >= 0, got "
                         f"{breathing_depth!r}.")
    for name, value in (("hartigan", hartigan), ("learned_polish", learned_polish)):
        if not (isinstance(value, (bool, np.bool_)) or (isinstance(value, str)
                                                        and value == "auto")):
            raise ValueError(f"{name} must be 'auto', True or False, got {value!r}.")
    if not isinstance(learned_polish, str) and learned_polish and learned_starts == 0:
        raise ValueError("learned_polish=True needs learned_starts >= 1 (the polish runs "
                         "the learned model); set learned_polish=False.")


def _rows(problems: Problems, i: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Problem ``i``'s rows (user frame, its dtype) and weights as NumPy arrays."""
    n = int(problems.lengths[i])
    x = problems.data[i][:n].cpu().numpy()
    w = None if problems.weights is None else problems.weights[i][:n].cpu().numpy()
    return x, w


def _breathe(problems: Problems, depth: int, hartigan: bool, *, max_iter: int, tol: float,
             centres, labels, inertia, polish: Callable[[int], Callable] | None = None
             ) -> None:
    """Each problem's global moves (``depth``), learned polish (``polish(i)``: problem
    ``i``'s learned steps) and single-point moves (``hartigan``) from its result, as
    :class:`~skformer.TransformerKMeans` makes them
    (:func:`~skformer._fit.runs.breathe_problem`); where they improve on it,
    its centres, labels and inertia are replaced in place (``n_iter`` stays its run's)."""
    for i in range(problems.n_problems):
        k = int(problems.ks[i])
        if k == 1:
            continue
        x, w = _rows(problems, i)
        found, _ = breathe_problem(x, w, centres[i, :k].cpu().numpy().astype(x.dtype),
                                   max_iter=max_iter, tol=tol, depth=depth,
                                   device=problems.device, hartigan=hartigan,
                                   learned=None if polish is None else polish(i))
        if found is None:
            continue
        dev = centres.device
        centres[i, :k] = torch.from_numpy(np.asarray(found.centers, np.float64)).to(dev)
        labels[i, : x.shape[0]] = torch.from_numpy(np.asarray(found.labels, np.int64)).to(dev)
        inertia[i] = found.inertia


def _explicit_init(init, problems: Problems) -> torch.Tensor:
    """Initial centres given by the caller, as one (b, k_max, d) float64 tensor (rows past
    a problem's ``n_clusters`` zero), checked against the problems."""
    b, d = problems.n_problems, problems.n_features
    k_max = int(problems.ks.max())
    out = torch.zeros((b, k_max, d), dtype=torch.float64, device=problems.device)
    if isinstance(init, (list, tuple)):
        if len(init) != b:
            raise ValueError(f"init has {len(init)} arrays for {b} problems.")
        for i, c in enumerate(init):
            c = torch.as_tensor(np.asarray(c) if not isinstance(c, torch.Tensor) else c,
                                dtype=torch.float64).to(problems.device)
            if tuple(c.shape) != (int(problems.ks[i]), d):
                raise ValueError(f"The shape of the initial centers {tuple(c.shape)} does "
                                 f"not match (n_clusters, n_features) = "
                                 f"({problems.ks[i]}, {d}) (problem {i}).")
            out[i, : c.shape[0]] = c
    else:
        c = init.detach() if isinstance(init, torch.Tensor) else torch.from_numpy(
            np.asarray(init, dtype=np.float64))
        c = c.to(problems.device, torch.float64)
        if tuple(c.shape) != (b, k_max, d):
            raise ValueError(f"The shape of the initial centers {tuple(c.shape)} does not "
                             f"match (n_problems, n_clusters, n_features) = ({b}, {k_max}, "
                             f"{d}).")
        # Rows past a problem's n_clusters are padding, never read: any values (the NaN
        # rows of a result's ``cluster_centers`` too) become zeros.
        rows = torch.arange(k_max, device=out.device).view(1, -1, 1) < torch.as_tensor(
            problems.ks, device=out.device).view(-1, 1, 1)
        out.copy_(c.masked_fill(~rows, 0.0))
    bad = torch.nonzero(~torch.isfinite(out).all(-1).all(-1))
    if bad.numel():
        raise ValueError(f"The initial centers contain NaN or infinity (problem "
                         f"{int(bad[0, 0])}).")
    return out


def _block_init(explicit: torch.Tensor, block: ProblemBlock) -> torch.Tensor:
    """The caller's initial centres of the block's problems, user frame, shape
    (p, k, d) with ``k`` the block's own largest ``n_clusters``: the batch's ``k_max``
    may be larger, and its zero rows past a problem's ``n_clusters`` are no centres
    (the block's centre mask covers its own ``k`` only)."""
    k = int(block.ks.max())
    return explicit[torch.as_tensor(block.index, device=explicit.device), :k]


def _seed(block: ProblemBlock, init, streams: ProblemStreams) -> torch.Tensor:
    """Initial centres (p, k_max, d) of one run of each of the block's problems (working
    frame), from each problem's own stream."""
    p, n, d = block.x.shape
    k_max = int(block.ks.max())
    out = torch.empty((p, k_max, d), dtype=block.x.dtype, device=block.x.device)
    if init == "random":
        u = torch.from_numpy(streams.subset(block.index).uniform(n))
        out[:] = random_rows(block.x, block.ks, u, weight=block.weight, mask=block.mask)[0]
        return out
    draws = max(kmeans_plusplus_draws(int(k)) for k in np.unique(block.ks.cpu().numpy()))
    u = torch.from_numpy(streams.subset(block.index).uniform(draws))
    trials = 2 + int(np.log(k_max))
    per = max(1, _SEED_BUDGET // max(1, trials * n))
    for s in range(0, p, per):
        part = slice(s, s + per)
        out[part] = kmeans_plusplus(
            block.x[part], block.ks[part], u[part],
            weight=None if block.weight is None else block.weight[part],
            mask=None if block.mask is None else block.mask[part])[0]
    return out


def _learned_model(problems: Problems, learned_starts: int, init,
                   breathing: bool) -> LearnedSetup | None:
    """The learned model of the call, or None (with a warning saying why); its
    temperature scales as :class:`~skformer.TransformerKMeans` chooses them (fewer where
    global moves follow)."""
    ks = np.unique(problems.ks)
    if len(ks) > 1:
        raise ValueError(f"learned_starts={learned_starts} needs one n_clusters for every "
                         f"problem (the learned steps of a call share one model); got "
                         f"{len(ks)} different values: call batch_k_means once per "
                         "n_clusters.")
    choice = choose_model(problems.n_features, int(ks[0]), init=init, device=problems.device)
    if choice.model is None:
        warnings.warn(f"learned_starts={learned_starts}: learned steps skipped, "
                      f"{choice.skipped}; the result is Lloyd's algorithm's.", UserWarning,
                      stacklevel=3)
        return None
    return LearnedSetup(choice.model, choice.padding,
                        auto_context(int(ks[0]), choice.model.layer.embed_dim), choice.project,
                        **learned_pace(breathing))


def _lloyd_runs(block: ProblemBlock, problem: torch.Tensor, starts: torch.Tensor,
                max_iter: int) -> RunState:
    """Lloyd runs of ``problem`` (rows of the block) from ``starts``, to the end."""
    state = RunState(problem, starts.clone(), torch.zeros(problem.numel(), dtype=torch.int64,
                                                          device=starts.device))
    return final_assignment(block, run_batch_lloyd(block, state, max_iter))


def _with_learned_runs(block: ProblemBlock, state: RunState, starts: torch.Tensor,
                       setup: LearnedSetup, streams: ProblemStreams, *, n_init: int,
                       learned_starts: int, max_iter: int, tol: float) -> RunState:
    """Each run of ``state`` (from ``starts``) against its learned runs: the first from
    the same start, the others from further k-means++ centres; per run, the best
    (KMeans' rule)."""
    context = block_context(block, setup, streams)
    candidates = [state]
    for j in range(learned_starts):
        if j:  # further k-means++ centres, a stream of their own per (run, start)
            starts = torch.cat([_seed(block, "k-means++",
                                      streams.child(n_init + r * learned_starts + j))
                                for r in range(n_init)])
        centres, n_learned = learned_steps(setup, context, starts, state.problem,
                                           max_iter=max_iter, tol=block.tol[state.problem],
                                           rel_tol=tol)
        run = _lloyd_runs(block, state.problem, centres, max_iter)
        run.n_iter += n_learned
        candidates.append(run)
    return pick_best(candidates)


@one_blas_thread()
def batch_k_means(
    X,
    n_clusters,
    *,
    sample_weight=None,
    lengths=None,
    init="k-means++",
    n_init=1,
    max_iter=300,
    tol=1e-4,
    learned_starts=0,
    breathing_depth="auto",
    hartigan="auto",
    learned_polish="auto",
    random_state=None,
    device="auto",
) -> BatchKMeansResult:
    """K-means clustering of many independent problems in one call.

    Shaped like :func:`sklearn.cluster.k_means`, for a batch: problem ``i``'s result is
    what ``KMeans(n_clusters[i], init=C_i, n_init=1, algorithm="lloyd")`` returns on
    ``X[i]`` from the same initial centres ``C_i`` - labels, centres (up to rounding),
    inertia and number of iterations - except that a cluster left without points keeps
    its centre (KMeans moves it to a far point).

    Parameters
    ----------
    X : array-like or Tensor of shape (b, n, d), or list of b arrays of shape (n_i, d)
        The problems. A 3-D array may hold problems of different lengths (see
        ``lengths``); a list holds them as they are. A tensor stays on its device;
        float32 stays float32 (other dtypes become float64).
    n_clusters : int or array-like of b ints
        Clusters per problem. Where they differ, ``cluster_centers`` is padded to the
        largest with NaN rows, which no computation reads.
    sample_weight : array-like of shape (b, n), or list of b arrays of shape (n_i,), \
            default=None
        Non-negative weights of the points (padded rows' are ignored). Not used by an
        explicit ``init``. A list for a 3-D ``X``: entry ``i`` holds ``lengths[i]``
        weights, or one per row of ``X`` (padding included); other lengths are an error.
    lengths : array-like of b ints, default=None
        With a 3-D ``X``: problem ``i``'s points are its first ``lengths[i]`` rows; the
        other rows are padding (any values) and get label -1. None: all rows.
    init : {"k-means++", "random"}, array-like of shape (b, k, d) or list of (k_i, d) \
            arrays, default="k-means++"
        ``"k-means++"``: scikit-learn's greedy k-means++ (``2 + int(ln k)`` candidates
        per centre); ``"random"``: ``k`` distinct points drawn in proportion to their
        weights; or the initial centres themselves (then ``n_init`` is 1). In a 3-D
        array, ``k`` is the largest ``n_clusters`` and the rows past a problem's own
        are padding, never read (they may hold anything, e.g. a result's NaN rows).
    n_init : int, default=1
        Runs per problem from different initial centres; each problem keeps its run of
        lowest inertia (KMeans' rule).
    max_iter : int, default=300
        Maximum Lloyd iterations of a run.
    tol : float, default=1e-4
        Relative tolerance: a run stops when its squared centre shift is within ``tol``
        times the mean variance of its problem's features (or its labels did not
        change).
    learned_starts : int, default=0
        Learned runs per start, as in :class:`~skformer.TransformerKMeans`: 0 runs
        Lloyd's algorithm only; 1 adds, from the same initial centres, a run of the
        learned model's steps (the soft-attention transformer for the shape ``(d, k)``,
        chosen as :class:`~skformer.TransformerKMeans` chooses it: every shape is served,
        wide data in their top 64 principal directions; on each problem's points or a
        seeded sample of ``max(2048, 16 k)`` of them) then Lloyd steps, and each problem
        keeps the better run; each further one adds a learned run from further k-means++
        centres. Every learned run gets its Lloyd steps (TransformerKMeans first screens
        them on its sample when a problem has more points than its sample). Needs one
        ``n_clusters`` for every problem. Where no model can run (``n_clusters=1``), a
        ``UserWarning`` says why and the result is Lloyd's.
    breathing_depth : int or "auto", default="auto"
        Global moves from each problem's result, as in
        :class:`~skformer.TransformerKMeans` (breathing k-means, made problem by problem
        as that estimator makes them on the problem alone). 0: none. ``"auto"``: 7 with
        ``learned_starts >= 1``, 0 otherwise.
    hartigan : bool or "auto", default="auto"
        Hartigan and Wong's single-point moves from each problem's result, after its
        global moves, as in :class:`~skformer.TransformerKMeans`. ``"auto"``: where
        global moves run.
    learned_polish : bool or "auto", default="auto"
        The learned steps once more from each problem's end of the global moves (or its
        result), then Lloyd steps, kept where they lower its inertia, before the
        single-point moves, as in :class:`~skformer.TransformerKMeans` (on the context of
        the problem's learned runs). True needs ``learned_starts >= 1``. ``"auto"``:
        where learned runs and global moves run, with ``n_clusters >= 64``.
    random_state : None, int, numpy RandomState or Generator, or array of b ints, \
            default=None
        Seeds the initialisation. Every problem draws from its own stream, a function
        of one root seed and the problem's index (or of ``random_state[i]`` alone when
        one seed per problem is given), so a problem's result does not depend on the
        other problems of the batch.
    device : str or torch.device, default="auto"
        Where the work runs: ``"auto"`` is a tensor's own device, or CUDA when present
        for NumPy input. Results come back where ``X`` came from.

    Returns
    -------
    BatchKMeansResult
        ``(cluster_centers, labels, inertia, n_iter)``.

    Warns
    -----
    ConvergenceWarning
        Once per call, where problems end with fewer distinct clusters than their
        ``n_clusters`` (as KMeans warns; e.g. duplicate points), naming the first ten.

    See Also
    --------
    sklearn.cluster.k_means : One problem.
    skformer.TransformerKMeans : One problem, as a scikit-learn estimator.

    Notes
    -----
    Each iteration is one exact step of every unfinished problem
    (:func:`skformer.nn.exact_step`: nearest centre by ``|c|^2 - 2 x.c``, the cluster
    means; what a layer of the exact transformer computes), on each problem's rows
    translated by their mean and scaled by a power of two, as KMeans translates them.
    A problem leaves the batch when it stops. The problems are processed in blocks of
    about 2**22 values (a list, sorted by length, so padding stays small): extra memory
    is one block and its distances, whatever ``b``. On a CPU a problem's results are
    the same to the bit in any batch.

    On a CPU, a problem of at least 8192 rows and 2**19 rows x clusters is run apart,
    by :class:`~skformer.ExactLloydTransformer`'s one-problem driver (compiled kernels
    that skip distances with bounds), from the batch's own initial centres, with the
    same result; calls with ``learned_starts >= 1`` keep every problem in the batch.

    Examples
    --------
    >>> import numpy as np
    >>> from skformer import batch_k_means
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 64, 2)) + 8 * rng.integers(0, 2, size=(100, 64, 1))
    >>> centers, labels, inertia, n_iter = batch_k_means(X, 2, random_state=0)
    >>> centers.shape, labels.shape, inertia.shape, n_iter.shape
    ((100, 2, 2), (100, 64), (100,), (100,))

    Problems of different lengths and numbers of clusters, as a list:

    >>> problems = [rng.normal(size=(m, 3)) for m in (30, 50, 40)]
    >>> result = batch_k_means(problems, [2, 3, 4], random_state=0)
    >>> [c.shape for c in result.cluster_centers], [len(lab) for lab in result.labels]
    ([(2, 3), (3, 3), (4, 3)], [30, 50, 40])
    """
    _check_params(init, n_init, max_iter, tol, learned_starts, breathing_depth, hartigan,
                  learned_polish)
    depth = ((BREATHING_DEPTH if learned_starts else 0) if breathing_depth == "auto"
             else int(breathing_depth))
    hartigan = depth > 0 if isinstance(hartigan, str) else bool(hartigan)
    problems = as_problems(X, n_clusters, lengths=lengths, sample_weight=sample_weight,
                           device=device)
    setup = (_learned_model(problems, learned_starts, init, depth > 0) if learned_starts
             else None)
    explicit = None if isinstance(init, str) else _explicit_init(init, problems)
    if explicit is not None:
        n_init = warn_explicit_init(n_init)
    streams = ProblemStreams.from_random_state(random_state, problems.n_problems)
    b, d = problems.n_problems, problems.n_features
    k_max, n_max = int(problems.ks.max()), int(problems.lengths.max())
    dev = problems.device
    centres = torch.empty((b, k_max, d), dtype=torch.float64, device=dev)
    labels = torch.full((b, n_max), -1, dtype=torch.int64, device=dev)
    inertia = torch.empty(b, dtype=torch.float64, device=dev)
    n_iter = torch.empty(b, dtype=torch.int64, device=dev)
    small, large = split_blocks(problems.blocks, large_problems(problems, learned_starts))
    for index in small:
        block = problems.block(index, float(tol))
        p = len(index)
        if explicit is not None:
            starts = block.to_working(_block_init(explicit, block))
        else:
            starts = torch.cat([_seed(block, init, streams.child(r)) for r in range(n_init)])
        problem = torch.arange(p, device=dev).repeat(n_init)
        state = _lloyd_runs(block, problem, starts, int(max_iter))
        if setup is not None:
            state = _with_learned_runs(block, state, starts, setup, streams, n_init=n_init,
                                       learned_starts=learned_starts, max_iter=int(max_iter),
                                       tol=float(tol))
        best = pick_best(split_runs(state, p))
        where = torch.as_tensor(index, device=dev)
        centres[where, : best.centres.shape[1]] = block.to_user(best.centres)
        labels[where, : block.x.shape[1]] = best.labels
        inertia[where] = block.squared_to_user(best.inertia)
        n_iter[where] = best.n_iter
    fit_large(problems, large, explicit=explicit,
              seed=lambda block, r: _seed(block, init, streams.child(r)), n_init=n_init,
              max_iter=int(max_iter), tol=float(tol), centres=centres, labels=labels,
              inertia=inertia, n_iter=n_iter)
    polish_of = None
    if setup is None:  # no learned steps, nothing to polish with
        polish = False
    elif isinstance(learned_polish, str):  # "auto" (a setup means one n_clusters)
        polish = auto_polish(int(problems.ks[0]), learned_starts, depth)
    else:
        polish = bool(learned_polish)
    if polish:
        def polish_of(i: int) -> Callable:
            return problem_polish(problems, i, setup, streams, max_iter=int(max_iter),
                                  tol=float(tol))
    if depth or hartigan or polish_of is not None:
        _breathe(problems, depth, hartigan, max_iter=int(max_iter), tol=float(tol),
                 centres=centres, labels=labels, inertia=inertia, polish=polish_of)
    _warn_distinct(labels, problems.ks)
    centre_rows = torch.arange(k_max, device=dev) < torch.as_tensor(problems.ks, device=dev
                                                                   ).unsqueeze(-1)
    centres = centres.masked_fill(~centre_rows.unsqueeze(-1), float("nan"))
    return _result(problems, centres.to(problems.dtype), labels, inertia, n_iter)


# Problems named at most in the warning for fewer distinct clusters than n_clusters.
_NAMED = 10


def _warn_distinct(labels: torch.Tensor, ks: np.ndarray) -> None:
    """KMeans' ConvergenceWarning where a problem's labels (b, n_max) (-1 on padding)
    name fewer distinct clusters than its ``n_clusters`` (b,): one warning per call,
    naming the first :data:`_NAMED` such problems and counting the others."""
    b, k_max = labels.shape[0], int(ks.max())
    sizes = torch.zeros((b, k_max), dtype=torch.int64, device=labels.device)
    sizes.scatter_add_(1, labels.clamp_min(0), (labels >= 0).long())  # padding adds 0
    distinct = (sizes > 0).sum(1).cpu().numpy()
    short = np.flatnonzero(distinct < ks)
    if not short.size:
        return
    if short.size == 1:
        i = short[0]
        message = (f"Number of distinct clusters ({distinct[i]}) found smaller than "
                   f"n_clusters ({ks[i]}) in problem {i}.")
    else:
        named = ", ".join(f"problem {i} ({distinct[i]} < {ks[i]})" for i in short[:_NAMED])
        more = f", and {short.size - _NAMED} more" if short.size > _NAMED else ""
        message = (f"Number of distinct clusters found smaller than n_clusters in "
                   f"{short.size} of {b} problems: {named}{more}.")
    warnings.warn(f"{message} Possibly due to duplicate points in X.", ConvergenceWarning,
                  stacklevel=3)


def _result(problems: Problems, centres, labels, inertia, n_iter) -> BatchKMeansResult:
    """The results in the form the caller passed ``X``."""
    if problems.form == "torch":
        to = problems.source_device
        return BatchKMeansResult(centres.to(to), labels.to(to), inertia.to(to), n_iter.to(to))
    centres_np, labels_np = centres.cpu().numpy(), labels.cpu().numpy().astype(np.int32)
    inertia_np, n_iter_np = inertia.cpu().numpy(), n_iter.cpu().numpy()
    if problems.form == "numpy":
        return BatchKMeansResult(centres_np, labels_np, inertia_np, n_iter_np)
    ks, lengths = problems.ks, problems.lengths
    if problems.form == "torch-list":
        to = problems.source_device
        return BatchKMeansResult([centres[i, : ks[i]].to(to) for i in range(len(ks))],
                                 [labels[i, : lengths[i]].to(to) for i in range(len(ks))],
                                 inertia.to(to), n_iter.to(to))
    return BatchKMeansResult([centres_np[i, : ks[i]] for i in range(len(ks))],
                             [labels_np[i, : lengths[i]] for i in range(len(ks))],
                             inertia_np, n_iter_np)
