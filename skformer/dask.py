"""The skformer clusterers on dask arrays: every step a map-reduce over row blocks.

Dimension legend: ``n`` points, ``m`` points of one block, ``k`` clusters, ``d`` features,
``e`` token width of the learned model.

``fit`` on a 2-D :class:`dask.array.Array` never holds the data in one place: each pass
maps a function over the row blocks (a block is ``m x d``) and reduces the small results
with a fixed tree of sums, one :func:`dask.compute` (one graph) per pass, on whatever
scheduler is active (a :class:`distributed.Client` when the user made one).

* An exact Lloyd step maps each block to its per-cluster sums ``(k, d)`` and weights
  ``(k,)`` of the nearest-centre assignment and sums them; a cluster of zero weight keeps
  its centre, as :func:`skformer.nn.model.lloyd_update` does.
* A learned step of :class:`~skformer.TransformerKMeans` maps each block to its
  contribution to the centre update A3, an online-softmax partial
  (:func:`skformer.nn.streaming.centre_partial`), merges them with
  :func:`skformer.nn.attention.merge_partials` (associative) and finishes the step with
  :func:`skformer.nn.streaming.finish_step`. The step-independent point tokens (after A2)
  are computed once per fit and persisted with dask (``n x e`` float32, like the data).

Everything else is the in-memory fit's, reused: parameter validation, the stopping rules
(``_iterate``, ``_learned_steps``), the model choice and frame, the context sample. What
differs: the ``"k-means++"`` / ``"random"`` initialisation runs on a seeded sample of
rows (see :func:`fit_dask`), and ``labels_`` is a lazy dask array.

dask is imported lazily; see the user guide page "Dask" of the documentation.
"""

from __future__ import annotations

import copy
import functools
import logging
import warnings
from dataclasses import dataclass, replace
from numbers import Real

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils import check_random_state
from sklearn.utils.validation import (
    _check_sample_weight,
    _is_arraylike_not_scalar,
    check_array,
    check_is_fitted,
)

from ._base import _Run, _verbose_logging, labels_inertia, resolve_device
from .kmeans import _context_indices, _Engine
from .nn.attention import SoftmaxPartial, merge_partials
from .nn.embedding import embed_points
from .nn.model import LloydStep, nearest_centre
from .nn.streaming import PreparedPoints, centre_partial, finish_step, prepare_points

__all__ = ["fit_dask", "predict_dask", "score_dask", "transform_dask"]

logger = logging.getLogger("skformer")

# Rows of the sample that "k-means++" and "random" initialise on: at least this many,
# and at least 20 per cluster.
INIT_SAMPLE = 10_000
# Block results combined per task of the reduction tree.
_FAN_IN = 8


def _import_dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - dask is there when X is a dask array
        raise ImportError(
            "Fitting on dask arrays requires dask. Install with: pip install skformer[dask]"
        ) from exc
    return dask, da


# -- checks ---------------------------------------------------------------------------


def _check_array(estimator, X, *, reset: bool):
    """A 2-D float dask array with one block of columns (lazy: nothing is computed)."""
    _, da = _import_dask()
    if not isinstance(X, da.Array):
        raise TypeError(
            f"{type(X).__module__}.{type(X).__name__} is not supported: pass a "
            "dask.array.Array (a dask DataFrame converts with .to_dask_array(lengths=True))."
        )
    if X.ndim != 2:
        raise ValueError(
            f"Expected 2D array, got {X.ndim}D array instead. Reshape your data either "
            "using X.reshape(-1, 1) if your data has a single feature or X.reshape(1, -1) "
            "if it contains a single sample."
        )
    if any(np.isnan(size) for size in X.chunks[0]):
        raise ValueError(
            "X has unknown chunk sizes (NaN); call X.compute_chunk_sizes() first."
        )
    if np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError("Complex data not supported")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    for axis, name in ((0, "sample"), (1, "feature")):
        if X.shape[axis] == 0:
            raise ValueError(
                f"Found array with 0 {name}(s) (shape={X.shape}) while a minimum of 1 is "
                f"required by {type(estimator).__name__}."
            )
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    if reset:
        estimator.n_features_in_ = X.shape[1]
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
    elif X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
    return X


def _check_weight(sample_weight, X, *, ensure_non_negative: bool):
    """Sample weights as a lazy array with X's row blocks, the weight check to compute
    with the data (``(w.min(), all ones)``), or ``(None, None)`` for unit weights."""
    dask, da = _import_dask()
    if sample_weight is None:
        return None, None
    if isinstance(sample_weight, da.Array):
        if sample_weight.ndim != 1:
            raise ValueError("Sample weights must be 1D array or scalar")
        if sample_weight.shape != (X.shape[0],):
            raise ValueError(
                f"sample_weight.shape == {sample_weight.shape}, expected {(X.shape[0],)}!"
            )
        w = sample_weight.astype(X.dtype).rechunk((X.chunks[0],))
        return w, (w.min(), (w == 1).all())
    if isinstance(sample_weight, Real) and sample_weight == 1:
        return None, None
    w = _check_sample_weight(
        sample_weight, X, dtype=X.dtype, ensure_non_negative=ensure_non_negative
    )
    if np.all(w == 1):
        return None, None
    return da.from_array(w, chunks=(X.chunks[0],)), None


def _apply_weight_check(w, check, *, ensure_non_negative: bool):
    """The weights after their computed check: None when all are 1."""
    if check is None:
        return w
    low, unit = check
    if ensure_non_negative and low < 0:
        raise ValueError("Negative values in data passed to `sample_weight`")
    return None if unit else w


def _sample_indices(n: int, size: int, random_state) -> np.ndarray | None:
    """Seeded sample of ``size`` row indices (sorted), or None for all rows.

    Drawn from a copy of ``random_state`` (on a stream apart from the context's), so the
    initial centres come from the same random stream as in memory.
    """
    if n <= size:
        return None
    seed = copy.deepcopy(random_state).randint(np.iinfo(np.int32).max)
    return np.sort(np.random.default_rng([seed, 1]).choice(n, size, replace=False))


# -- blocks and their map-reduce --------------------------------------------------------


@dataclass
class _Blocks:
    """The data as aligned delayed row blocks, and the fit's frame."""

    x: list  # Delayed (m, d) blocks of X (user frame)
    w: list  # Delayed (m,) blocks of the weights, or Nones
    mean: np.ndarray  # (d,) translation to the fit frame, X's dtype
    device: torch.device

    @classmethod
    def of(cls, X, w, mean, device) -> _Blocks:
        xs = list(X.to_delayed().ravel())
        ws = [None] * len(xs) if w is None else list(w.to_delayed().ravel())
        return cls(xs, ws, mean, device)

    def map_reduce(self, func, combine, *args, per_block=None):
        """``combine`` over ``func(x_block, w_block[, per_block_item], *args)``: one graph,
        computed with the active scheduler."""
        dask, _ = _import_dask()
        extra = [()] * len(self.x) if per_block is None else [(p,) for p in per_block]
        parts = [
            dask.delayed(func)(xb, wb, *more, *args)
            for xb, wb, more in zip(self.x, self.w, extra, strict=True)
        ]
        while len(parts) > 1:  # a fixed tree: the same sums in the same order every time
            parts = [
                dask.delayed(combine)(parts[i : i + _FAN_IN])
                if len(parts[i : i + _FAN_IN]) > 1 else parts[i]
                for i in range(0, len(parts), _FAN_IN)
            ]
        return dask.compute(parts[0])[0]


def _centred(xb: np.ndarray, mean: np.ndarray, device) -> torch.Tensor:
    """A block of X in the fit frame (``X - mean`` as in memory), shape (1, m, d)."""
    return torch.from_numpy(np.ascontiguousarray(xb - mean)).to(device).unsqueeze(0)


def _weights(wb, device, dtype=torch.float64) -> torch.Tensor | None:
    return None if wb is None else torch.from_numpy(np.asarray(wb)).to(device, dtype)


def _sum_parts(parts):
    """Elementwise sum of tuples of arrays (in list order)."""
    return tuple(functools.reduce(np.add, items) for items in zip(*parts, strict=True))


def _merge_parts(parts) -> SoftmaxPartial:
    return functools.reduce(merge_partials, parts)


@torch.no_grad()
def _lloyd_block(xb, wb, mean, c, device):
    """Per-cluster sums (k, d) and weights (k,) of a block's nearest-centre assignment
    (float64 accumulation)."""
    x = _centred(xb, mean, device)
    k = c.shape[0]
    lab = nearest_centre(x, torch.from_numpy(c).to(device).unsqueeze(0))[0]
    xs, w = x[0].double(), _weights(wb, device)
    if w is None:
        mass = torch.bincount(lab, minlength=k).double()
    else:
        xs = xs * w.unsqueeze(-1)
        mass = torch.zeros(k, dtype=torch.float64, device=device).index_add_(0, lab, w)
    sums = torch.zeros(k, x.shape[-1], dtype=torch.float64, device=device)
    sums.index_add_(0, lab, xs)
    return sums.cpu().numpy(), mass.cpu().numpy()


class _DaskLloyd:
    """The exact model's step ``model(x, c, w) -> LloydStep`` as a map-reduce over blocks.

    ``x`` and ``w`` are ignored (the blocks hold the data). ``labels`` of the result is
    the assignment's sufficient statistics (per-cluster weights and sums) rather than
    the ``n`` labels: the assignment did not change only if they did not, and then the
    new centres equal the old ones exactly (same sums, same order), so
    :meth:`~skformer._base.BaseTransformerKMeans._iterate` stops where it stops in memory.
    """

    def __init__(self, blocks: _Blocks):
        self.blocks = blocks

    def __call__(self, x, c: torch.Tensor, w=None) -> LloydStep:
        c0 = c[0].detach().cpu()
        sums, mass = self.blocks.map_reduce(
            _lloyd_block, _sum_parts, self.blocks.mean, c0.numpy(), self.blocks.device
        )
        sums, mass = torch.from_numpy(sums), torch.from_numpy(mass).unsqueeze(-1)
        present = mass > 0
        new = torch.where(present, sums / torch.where(present, mass, 1.0), c0.double())
        stats = torch.cat([mass.ravel(), sums.ravel()])
        return LloydStep(new.to(c.device, c.dtype).unsqueeze(0), stats)


@torch.no_grad()
def _prepare_block(xb, engine: _Engine, mean, context, context_weight, device):
    """A block's point tokens after A2 (m, e), float32: what every learned step reads."""
    z = engine.to_model_frame(_centred(xb, mean, device))
    return prepare_points(engine.learned, z, context, context_weight).tokens[0].cpu().numpy()


@torch.no_grad()
def _learned_block(xb, wb, tokens, engine: _Engine, mean, z, device):
    """For centres ``z`` (1, k, e) of the model frame, a block's k-means objective (model
    frame, float32, as ``_Engine.objective``) and its contribution to A3."""
    model, z = engine.learned, z.to(device)
    points = engine.to_model_frame(_centred(xb, mean, device))
    w64 = _weights(wb, device)
    w = None if w64 is None else w64.float().unsqueeze(0)  # (1, m)
    sq = points[0].double().square().sum(-1)  # as TransformerKMeans._prepare
    points_sq = float(sq.sum() if w64 is None else (sq * w64).sum())
    block = replace(engine, points=points, points_sq=points_sq, weight=w)
    # A1's queries are a linear map of [x ; 0]: recomputed, so only the tokens persist.
    queries = model.layer.points_to_centres.q_proj(
        embed_points(points, model.embedding, model.n_clusters)
    )
    prepared = PreparedPoints(torch.from_numpy(tokens).to(device).unsqueeze(0), queries)
    part = centre_partial(model, prepared, z, w)
    return block.objective(z), SoftmaxPartial(*(t.cpu() for t in part))


def _merge_learned(parts):
    return sum(p[0] for p in parts), _merge_parts([p[1] for p in parts])


@dataclass
class _DaskEngine(_Engine):
    """TransformerKMeans' engine whose steps are map-reduces over the blocks."""

    blocks: _Blocks | None = None
    tokens: list | None = None  # persisted Delayed (m, e) blocks of prepared tokens
    shipped: object = None  # Delayed plain _Engine that the block tasks use
    last: tuple | None = None  # (z, objective, merged A3 partial) of the last pass

    def _pass(self, z: torch.Tensor) -> tuple:
        """One pass over the blocks for centres ``z``: the objective and A3's partial.

        ``_learned_steps`` asks for ``objective(z)`` and then ``learned_step(z)`` of the
        same centres: both come from one pass over the data.
        """
        if self.last is None or not torch.equal(self.last[0], z):
            objective, merged = self.blocks.map_reduce(
                _learned_block, _merge_learned, self.shipped, self.blocks.mean,
                z.detach().cpu(), self.blocks.device, per_block=self.tokens,
            )
            self.last = (z.clone(), float(objective), merged)
        return self.last

    def objective(self, z: torch.Tensor) -> float:
        return self._pass(z)[1]

    def learned_step(self, z: torch.Tensor) -> torch.Tensor:
        merged = self._pass(z)[2]
        return finish_step(self.learned, z, SoftmaxPartial(*(t.to(z.device) for t in merged)))


def _score_block(xb, wb, mean, c, best):
    """Inertia of centres ``c`` (fit frame) on a block, and the contingency table of its
    assignment against the one of ``best`` (or None)."""
    x = np.asarray(xb - mean)
    labels, inertia = labels_inertia(x, c, None if wb is None else np.asarray(wb))
    if best is None:
        return np.array(inertia), None
    k = c.shape[0]
    other = labels_inertia(x, best)[0]
    return np.array(inertia), np.bincount(labels * k + other, minlength=k * k)


def _sum_scores(parts):
    inertia = functools.reduce(np.add, [p[0] for p in parts])
    tables = [p[1] for p in parts]
    return inertia, None if tables[0] is None else functools.reduce(np.add, tables)


def _same_clustering(table: np.ndarray, k: int) -> bool:
    """:func:`skformer._base._same_clustering` from the contingency table of two labelings."""
    table = table.reshape(k, k) > 0
    return table.sum() == table.any(1).sum() == table.any(0).sum()


def _final_block(xb, wb, centers):
    """Inertia (user frame, as ``labels_inertia``) and cluster sizes of a block."""
    labels, inertia = labels_inertia(np.asarray(xb), centers,
                                     None if wb is None else np.asarray(wb))
    return np.array(inertia), np.bincount(labels, minlength=centers.shape[0])


def _labels_block(xb, centers):
    return labels_inertia(np.asarray(xb), centers)[0]


def _distances_block(xb, centers):
    return euclidean_distances(np.asarray(xb), centers)


# -- the public functions ---------------------------------------------------------------


def fit_dask(estimator, X, sample_weight=None):
    """Fit a skformer clusterer on a 2-D dask array, block by block.

    ``estimator.fit(X)`` calls this when ``X`` is a :class:`dask.array.Array`. The data
    are never gathered: each pass over them is one dask graph mapped over the row blocks
    and reduced by a tree of small sums, on the active scheduler.

    Parameters
    ----------
    estimator : TransformerKMeans or ExactLloydTransformer
    X : dask.array.Array of shape (n_samples, n_features)
        float32 stays float32, other dtypes become float64. Column blocks are merged.
    sample_weight : array-like or dask.array.Array of shape (n_samples,), default=None

    Returns
    -------
    estimator
        Fitted, with ``labels_`` a lazy int32 dask array; ``cluster_centers_``,
        ``inertia_`` (computed block by block), ``n_iter_`` (and ``n_learned_steps_``,
        ``n_lloyd_steps_``) as in memory.

    Notes
    -----
    The same fit as in memory, with two differences. ``init="k-means++"`` or
    ``"random"`` (and a callable ``init``) run on a seeded sample of
    ``max(10_000, 20 * n_clusters)`` rows drawn by index with ``random_state`` (all rows
    when there are fewer): the initial centres differ from the in-memory fit's on larger
    data. An array ``init`` is used as given, and then the exact model's fit equals the
    in-memory fit up to the order of floating-point sums. ``max_context=None`` (every
    point as a key of A2) is refused: it would hold all points in every block task.

    A pass reads every block of ``X`` once: one for the tolerance, one for the mean, the
    range, the initial sample and the context of A2; for TransformerKMeans one that
    computes the point tokens after A2 (persisted); one per step; one per run when
    ``n_init > 1``; one for ``inertia_``.

    Examples
    --------
    >>> import dask.array as da
    >>> from sklearn.datasets import make_blobs
    >>> from skformer import ExactLloydTransformer
    >>> X, _ = make_blobs(1000, centers=3, random_state=0)
    >>> est = ExactLloydTransformer(3, random_state=0).fit(da.from_array(X, chunks=250))
    >>> est.labels_.dtype, est.labels_.shape, est.cluster_centers_.shape
    (dtype('int32'), (1000,), (3, 2))
    """
    estimator._validate_params()
    with _verbose_logging(estimator.verbose):
        return _fit(estimator, X, sample_weight)


def _fit(est, X, sample_weight):
    dask, _ = _import_dask()
    X = _check_array(est, X, reset=True)
    est._check_params_vs_input(X)  # n_samples >= n_clusters, n_init, tol (a pass of dask)
    est._power = 0  # the blocks are fitted in the user's units (no power-of-two scaling)
    random_state = check_random_state(est.random_state)
    w, weight_check = _check_weight(sample_weight, X, ensure_non_negative=True)
    device = resolve_device(est.device)
    dtype = torch.float32 if X.dtype == np.float32 else torch.float64
    n, k = X.shape[0], est.n_clusters

    init = est.init
    if _is_arraylike_not_scalar(init):
        init = check_array(init, dtype=X.dtype, copy=True, order="C")
        est._validate_center_shape(X, init)
    model = est._make_model(X.shape[1], device, dtype)
    learned = isinstance(model, _Engine) and model.learned is not None
    if learned and est.max_context is None:
        raise ValueError(
            "max_context=None (every point a key of the points-to-points attention) is "
            "not supported for dask arrays; set an integer max_context."
        )

    # One pass: the translation, the range, the weight check, the rows of the initial
    # sample and of A2's context.
    gathers = {}
    if not _is_arraylike_not_scalar(init):
        gathers["init"] = _sample_indices(n, max(INIT_SAMPLE, 20 * k), random_state)
    if learned:
        gathers["context"] = _context_indices(n, est.max_context, random_state)
    rows = {key: X if idx is None else X[idx] for key, idx in gathers.items()}
    row_w = {key: w if (w is None or idx is None) else w[idx] for key, idx in gathers.items()}
    mean, lo, hi, finite, weight_check, rows, row_w = dask.compute(
        X.mean(axis=0, dtype=np.float64), X.min(axis=0), X.max(axis=0),
        _all_finite(X), weight_check, rows, row_w,
    )
    if not finite:
        raise ValueError("Input X contains NaN or infinity.")
    w = _apply_weight_check(w, weight_check, ensure_non_negative=True)
    if w is None:
        row_w = dict.fromkeys(row_w)
    X_mean = mean.astype(X.dtype)
    if _is_arraylike_not_scalar(init):
        init = init - X_mean
    blocks = _Blocks.of(X, w, X_mean, device)
    logger.info("Dask fit: %d points in %d blocks.", n, len(blocks.x))

    if isinstance(model, _Engine):
        model = _DaskEngine(_DaskLloyd(blocks), model.learned, model.padding, blocks=blocks)
        if learned:
            _prepare(est, model, lo - X_mean, hi - X_mean, rows["context"],
                     row_w["context"], gathers["context"])
    else:
        model = _DaskLloyd(blocks)

    sample = sample_w = None
    if "init" in gathers:
        sample = np.ascontiguousarray(rows["init"] - X_mean)
        sample_w = (np.ones(sample.shape[0], dtype=X.dtype) if row_w["init"] is None
                    else row_w["init"])
    best: _Run | None = None
    for _ in range(est._n_init):
        centers_init = est._init_centroids(sample, init, random_state, sample_w)
        logger.info("Initialization complete")
        run = est._single_run(
            model, None, None,
            torch.from_numpy(np.asarray(centers_init)).to(device, dtype), score=False,
        )
        if est._n_init == 1:
            best = run
            break
        c = run.centers.cpu().numpy()
        inertia, table = blocks.map_reduce(
            _score_block, _sum_scores, X_mean, c,
            None if best is None else best.centers.cpu().numpy(),
        )
        run = run._replace(inertia=float(inertia))
        if best is None or (run.inertia < best.inertia and not _same_clustering(table, k)):
            best = run
    if isinstance(model, _DaskEngine):
        model.tokens = model.shipped = model.last = None  # releases the persisted tokens

    est.cluster_centers_ = (best.centers.cpu().numpy() + X_mean).astype(X.dtype, copy=False)
    est._n_features_out = k
    inertia, sizes = blocks.map_reduce(_final_block, _sum_parts, est.cluster_centers_)
    est.inertia_ = float(inertia)
    est.labels_ = _labels(X, est.cluster_centers_)
    est.n_iter_ = best.n_iter
    est._set_run_attributes(best)
    distinct = int(np.count_nonzero(sizes))
    if distinct < k:
        warnings.warn(
            f"Number of distinct clusters ({distinct}) found smaller than "
            f"n_clusters ({k}). Possibly due to duplicate points in X.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return est


def _all_finite(X):
    """Lazy: whether every value of the dask array ``X`` is finite."""
    _, da = _import_dask()
    return da.isfinite(X).all()


def _prepare(est, engine: _DaskEngine, lo, hi, context_rows, context_w, idx) -> None:
    """TransformerKMeans._prepare for blocks: the frame, the context, persisted tokens.

    ``lo``, ``hi`` are the per-feature extremes of the centred data (``min(X) - mean``
    equals ``min(X - mean)``: rounding is monotone).
    """
    dask, _ = _import_dask()
    blocks = engine.blocks
    lo = torch.from_numpy(np.asarray(lo)).to(blocks.device).double()
    hi = torch.from_numpy(np.asarray(hi)).to(blocks.device).double()
    scale = float((hi - lo).max())
    if not np.isfinite(scale):
        logger.info("The data's range overflows: learned steps skipped.")
        engine.learned = None
        return
    engine.offset, engine.scale = lo.view(1, 1, -1), scale if scale > 0 else 1.0
    context = engine.to_model_frame(_centred(context_rows, blocks.mean, blocks.device))
    # As in memory: the context points carry their sample weights.
    context_weight = None
    if context_w is not None:
        context_weight = _weights(context_w, blocks.device, torch.float32).unsqueeze(0)
    shipped = _Engine(None, engine.learned, engine.padding, engine.offset, engine.scale)
    engine.shipped = dask.delayed(shipped, traverse=False)
    tokens = [
        dask.delayed(_prepare_block)(xb, engine.shipped, blocks.mean, context,
                                     context_weight, blocks.device)
        for xb in blocks.x
    ]
    engine.tokens = list(dask.persist(*tokens))
    logger.info("Dask fit: point tokens after A2 persisted (%d blocks).", len(tokens))


def _labels(X, centers):
    return X.map_blocks(_labels_block, centers=centers, dtype=np.int32, drop_axis=1,
                        meta=np.empty((0,), dtype=np.int32))


def predict_dask(estimator, X):
    """Nearest fitted centre of each row of a dask array, lazily (int32 dask array).

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from skformer import ExactLloydTransformer
    >>> est = ExactLloydTransformer(2, init=np.array([[0.0], [9.0]])).fit(
    ...     np.array([[0.0], [1.0], [9.0], [10.0]]))
    >>> predict_dask(est, da.from_array(np.array([[0.2], [8.0]]), chunks=1)).compute()
    array([0, 1], dtype=int32)
    """
    check_is_fitted(estimator)
    X = _check_array(estimator, X, reset=False)
    return _labels(X, estimator.cluster_centers_)


def transform_dask(estimator, X):
    """Distances of each row of a dask array to the fitted centres, lazily (n, k)."""
    check_is_fitted(estimator)
    X = _check_array(estimator, X, reset=False)
    centers = estimator.cluster_centers_
    dtype = euclidean_distances(np.zeros((1, X.shape[1]), X.dtype), centers).dtype
    return X.map_blocks(_distances_block, centers=centers, dtype=dtype,
                        chunks=(X.chunks[0], (centers.shape[0],)),
                        meta=np.empty((0, 0), dtype=dtype))


def score_dask(estimator, X, sample_weight=None) -> float:
    """Opposite of the k-means objective of a dask array, computed block by block."""
    check_is_fitted(estimator)
    X = _check_array(estimator, X, reset=False)
    dask, _ = _import_dask()
    w, check = _check_weight(sample_weight, X, ensure_non_negative=False)
    if check is not None:
        (check,) = dask.compute(check)
    w = _apply_weight_check(w, check, ensure_non_negative=False)
    inertia, _ = _Blocks.of(X, w, None, None).map_reduce(
        _final_block, _sum_parts, estimator.cluster_centers_
    )
    return -float(inertia)
