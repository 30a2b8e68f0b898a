"""TransformerKMeans: k-means clustering by the learned transformer, as KMeans does it."""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from functools import lru_cache
from numbers import Integral

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import BaseTransformerKMeans, _Run
from .nn.learned import LearnedKMeansModel
from .nn.model import ExactLloydModel
from .nn.streaming import PreparedPoints, prepare_points, streamed_step
from .store import find_model, load_model, shipped_index

__all__ = ["TransformerKMeans"]

logger = logging.getLogger("skformer")

# Rows per chunk when normalising the data into the learned model's frame, and when
# computing the k-means objective of the learned steps' centres.
_ROWS = 2**16

# Learned steps whose k-means objective has not improved by a relative ``tol`` for
# this many steps in a row end the learned phase.
_PATIENCE = 3


@dataclass
class _Engine:
    """The two transformers of a fit and what they need of the data."""

    exact: ExactLloydModel
    learned: LearnedKMeansModel | None  # None: learned steps skipped (k = 1, ...)
    padding: int = 0  # zero features appended to fit a wider model
    # Set by TransformerKMeans._prepare:
    offset: torch.Tensor | None = None  # (1, 1, d) translation, user frame -> model frame
    scale: float = 1.0  # one global scale, user frame -> model frame
    prepared: PreparedPoints | None = None
    points: torch.Tensor | None = None  # (1, n, d + padding) float32, model frame
    points_sq: float = 0.0  # sum_i w_i |x_i|^2 of ``points``
    weight: torch.Tensor | None = None  # (1, n) float32 sample weights, or None

    def to_model_frame(self, c: torch.Tensor) -> torch.Tensor:
        """Centres (1, k, d) of the fit frame as the learned model's input (float32)."""
        z = ((c.double() - self.offset) / self.scale).float()
        return torch.nn.functional.pad(z, (0, self.padding))

    def from_model_frame(self, z: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        d = z.shape[-1] - self.padding
        return (z[..., :d].double() * self.scale + self.offset).to(dtype)

    def learned_step(self, z: torch.Tensor) -> torch.Tensor:
        """One learned step from centres ``z`` (1, k, e) of the model frame."""
        return streamed_step(self.learned, self.prepared, z, self.weight)

    def objective(self, z: torch.Tensor) -> float:
        """The k-means objective of centres ``z`` (1, k, d + padding) on the points, in
        the model frame (to compare the learned steps' centres).

        ``sum_i w_i (|x_i|^2 + min_j (|c_j|^2 - 2 x_i.c_j))``: one matrix product and one
        minimum per chunk (float32 products, float64 sums).
        """
        c = z[0]
        c_sq = c.square().sum(-1, keepdim=True)  # (k, 1)
        total = self.points_sq
        for s in range(0, self.points.shape[1], _ROWS):
            nearest = torch.addmm(c_sq, c, self.points[0, s : s + _ROWS].T, alpha=-2.0)
            nearest = nearest.amin(0).double()  # (rows,)
            if self.weight is not None:
                nearest = nearest * self.weight[0, s : s + _ROWS]
            total += float(nearest.sum())
        return total


@lru_cache(maxsize=32)
def _stored_model(d: int, k: int, embedding: str, loss: str, stamp: int) -> LearnedKMeansModel:
    """A stored model read once per process (``stamp``: the file's modification time, so
    a re-trained file is read again). Fits only read it: it is shared, on the CPU."""
    return load_model(d, k, embedding=embedding, loss=loss, pretrain=False)


def _select_model(d: int, k: int, embedding: str, loss: str, *, pretrain: bool,
                  progress: bool, device: torch.device) -> tuple[LearnedKMeansModel, int]:
    """The learned model for (d, k) and how many zero features the data needs.

    A model stored for exactly (d, k) (shipped or cached) comes first. Otherwise the
    narrowest *shipped* model with the same k and more features is used, the data
    padded with zero features (which change no distance). Otherwise one is pretrained
    on demand (``pretrain=True``) or :class:`LookupError` is raised.
    """
    width, path = d, find_model(d, k, embedding=embedding, loss=loss)
    if path is None:
        wider = sorted(
            e["n_features"]
            for e in shipped_index()
            if e.get("n_clusters") == k and e.get("embedding") == embedding
            and e.get("loss") == loss and e.get("n_features", 0) > d
        )
        if not wider:  # pretrain on demand (or raise LookupError)
            return load_model(d, k, embedding=embedding, loss=loss, pretrain=pretrain,
                              device=device, progress=progress), 0
        width = wider[0]
        path = find_model(width, k, embedding=embedding, loss=loss)
        logger.info("No model for d=%d, k=%d: using the shipped d=%d model with %d "
                    "zero features.", d, k, width, width - d)
    model = _stored_model(width, k, embedding, loss, path.stat().st_mtime_ns)
    return model.to(device), width - d


def _context_indices(n: int, max_context: int | None, random_state) -> np.ndarray | None:
    """Seeded sample of ``max_context`` point indices (sorted), or None for all points.

    Drawn from a copy of ``random_state``, so the initial centres are the ones
    :class:`sklearn.cluster.KMeans` draws with the same ``random_state``.
    """
    if max_context is None or n <= max_context:
        return None
    seed = copy.deepcopy(random_state).randint(np.iinfo(np.int32).max)
    return np.sort(np.random.default_rng(seed).choice(n, max_context, replace=False))


class TransformerKMeans(BaseTransformerKMeans):
    """K-means clustering by a learned transformer, finished by exact Lloyd steps.

    Each step of the fit is one forward pass of a pretrained one-layer transformer
    with soft distance attention (paper eq. 4): point tokens ``[x_i ; 0]`` and centre
    tokens ``[c_j ; code(j)]`` go in, better centres come out. The tokens are rebuilt
    from the data and the current centres at every step (re-embedding), until the
    centre shift is within ``tol``. With ``finish="lloyd"`` exact Lloyd steps (the
    hard-attention transformer of :class:`ExactLloydTransformer`) then run to a fixed
    point, so the result is a local optimum of k-means, as KMeans returns.

    The model is tied to the shape ``(n_features, n_clusters)``: a model shipped with
    the package or cached is used; for a narrower ``n_features`` than a shipped model
    of the same ``n_clusters``, the data are padded with zero features; otherwise a
    model is pretrained on demand (about a minute on a CPU, once; see
    :func:`skformer.pretrain`).

    Parameters
    ----------
    n_clusters : int, default=8
        The number of clusters to form as well as the number of centroids to generate.
    embedding : {"binary", "onehot"}, default="binary"
        Cluster-index embedding of the learned model (BN: ``ceil(log2 k)`` columns,
        OH: ``k``).
    loss : {"l2", "ne"}, default="l2"
        Smoothed k-means loss the model was trained with (sparsemax ``"l2"`` or
        softmax ``"ne"``).
    init : {"k-means++", "random"}, callable or array-like of shape \
            (n_clusters, n_features), default="k-means++"
        Method for initialization, as in :class:`sklearn.cluster.KMeans` (same random
        stream: with the same ``random_state`` both start from the same centres).
    n_init : "auto" or int, default="auto"
        Number of runs with different initial centres; the best by inertia is kept.
        ``"auto"``: 1 for ``"k-means++"`` or an array, 10 otherwise.
    max_iter : int, default=300
        Maximum number of learned steps of a run, and of exact Lloyd steps after them.
    tol : float, default=1e-4
        Relative tolerance on the squared centre shift (times the mean feature
        variance) to end the learned steps, and the Lloyd steps (which also stop when
        the assignment does not change).
    finish : {"lloyd", "none"}, default="lloyd"
        ``"lloyd"``: after the learned steps, exact Lloyd steps run to a fixed point.
        ``"none"``: the centres of the learned steps are the result.
    max_context : int or None, default=256
        Keys of the points-to-points attention (the only ``n x n`` part of the
        layer): all points when ``n_samples <= max_context``, else a seeded sample of
        ``max_context`` points (the same for every step and run). None: always all
        points (time and memory grow as ``n_samples**2``).
    pretrain : bool, default=True
        Pretrain a model on demand when none is stored for the shape. If False, a
        missing model raises :class:`LookupError`.
    verbose : int, default=0
        Log progress to the ``"skformer"`` logger (shown on stderr), with a progress
        bar while pretraining.
    random_state : int, RandomState instance or None, default=None
        Determines random number generation for centroid initialization and the
        context sample.
    device : str or torch.device, default="auto"
        Where the transformers run: ``"auto"`` (CUDA when available), ``"cpu"``,
        ``"cuda"``, ``"cuda:1"``.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Coordinates of cluster centers.
    labels_ : ndarray of shape (n_samples,), int32
        Index of the nearest centre of each training point (``== predict(X)``).
    inertia_ : float
        Sum of squared distances of samples to their closest cluster center,
        weighted by the sample weights if provided.
    n_iter_ : int
        Steps run in the best run: learned plus exact Lloyd steps.
    n_learned_steps_ : int
        Learned steps of the best run.
    n_lloyd_steps_ : int
        Exact Lloyd steps of the best run (0 with ``finish="none"``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit. Defined only when X has feature names
        that are all strings.

    See Also
    --------
    sklearn.cluster.KMeans : Lloyd's algorithm, implemented directly.
    ExactLloydTransformer : The hard-attention transformer that is Lloyd's algorithm.
    skformer.load_model : The learned model for a shape.

    Notes
    -----
    The fit maps the data into the frame the model was trained in (tasks scaled into
    ``[0, 1]^d``) by a translation and **one** global scale, which preserve the
    k-means problem (every squared distance is multiplied by the same factor); the
    centres are mapped back. The learned steps run in float32. ``n_clusters=1`` skips
    the learned steps (one Lloyd step gives the optimum, the mean). ``predict``,
    ``transform`` and ``score`` use the fitted centres directly (nearest centre,
    distances, ``-inertia``), row by row; a fitted estimator holds no model and
    pickles small.

    Examples
    --------
    >>> import numpy as np
    >>> from skformer import TransformerKMeans
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]])
    >>> est = TransformerKMeans(n_clusters=2, random_state=0, device="cpu").fit(X)
    >>> est.labels_
    array([1, 1, 1, 0, 0, 0], dtype=int32)
    >>> est.predict([[0, 0], [12, 3]])
    array([1, 0], dtype=int32)
    >>> est.cluster_centers_
    array([[10.,  2.],
           [ 1.,  2.]])
    """

    _parameter_constraints: dict = {
        **BaseTransformerKMeans._parameter_constraints,
        "embedding": [StrOptions({"binary", "onehot"})],
        "loss": [StrOptions({"l2", "ne"})],
        "finish": [StrOptions({"lloyd", "none"})],
        "max_context": [Interval(Integral, 1, None, closed="left"), None],
        "pretrain": ["boolean"],
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        embedding="binary",
        loss="l2",
        init="k-means++",
        n_init="auto",
        max_iter=300,
        tol=1e-4,
        finish="lloyd",
        max_context=256,
        pretrain=True,
        verbose=0,
        random_state=None,
        device="auto",
    ):
        super().__init__(
            n_clusters,
            init=init,
            n_init=n_init,
            max_iter=max_iter,
            tol=tol,
            verbose=verbose,
            random_state=random_state,
            device=device,
        )
        self.embedding = embedding
        self.loss = loss
        self.finish = finish
        self.max_context = max_context
        self.pretrain = pretrain

    def _make_model(self, n_features: int, device: torch.device, dtype: torch.dtype):
        exact = ExactLloydModel(n_features, self.n_clusters, embedding=self.embedding)
        exact = exact.to(device=device, dtype=dtype)
        if self.n_clusters == 1:
            return _Engine(exact, None)
        learned, padding = _select_model(
            n_features, self.n_clusters, self.embedding, self.loss,
            pretrain=self.pretrain, progress=bool(self.verbose), device=device,
        )
        return _Engine(exact, learned.to(device=device, dtype=torch.float32), padding)

    def _prepare(self, engine: _Engine, x, w, random_state) -> _Engine:
        """Map the data into the learned model's frame and run its step-free part."""
        if engine.learned is None:
            return engine
        lo, hi = x[0].amin(0).double(), x[0].amax(0).double()
        scale = float((hi - lo).max())
        if not np.isfinite(scale):
            logger.info("The data's range overflows: learned steps skipped.")
            engine.learned = None
            return engine
        engine.offset, engine.scale = lo.view(1, 1, -1), scale if scale > 0 else 1.0
        z = torch.empty((*x.shape[:-1], x.shape[-1] + engine.padding), dtype=torch.float32,
                        device=x.device)
        engine.points_sq = 0.0  # sum_i w_i |z_i|^2, for the objective of the centres
        for s in range(0, x.shape[1], _ROWS):
            chunk = z[:, s : s + _ROWS] = engine.to_model_frame(x[:, s : s + _ROWS])
            sq = chunk[0].double().square().sum(-1)
            if w is not None:
                sq = sq * w[0, s : s + _ROWS].double()
            engine.points_sq += float(sq.sum())
        engine.weight = None if w is None else w.float()
        idx = _context_indices(x.shape[1], self.max_context, random_state)
        context, context_weight = None, engine.weight  # A2's keys: all points, weighted
        if idx is not None:
            index = torch.from_numpy(idx).to(x.device)
            context = z[:, index]
            context_weight = None if w is None else engine.weight[:, index]
        engine.prepared = prepare_points(engine.learned, z, context, context_weight,
                                         keep_tokens=False)
        engine.points = z
        return engine

    def _learned_steps(self, engine: _Engine, c: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Learned steps from centres ``c`` (1, k, d); the centres of least k-means
        objective among the start and the steps, and the number of steps run.

        The steps stop when the squared centre shift is within ``tol`` (KMeans' rule),
        when the objective has not improved by a relative ``tol`` for ``_PATIENCE``
        steps (soft steps can crawl where clusters overlap), or after ``max_iter``.
        """
        z = engine.to_model_frame(c)
        tol = self._tol / engine.scale**2
        best_z, best = z, engine.objective(z)
        reference, stalled, n_steps = best, 0, 0
        for i in range(self.max_iter):
            new = engine.learned_step(z)
            if not bool(torch.isfinite(new).all()):
                logger.info("Learned step %d gave non-finite centres: stopped.", i)
                break
            shift = float((new - z)[..., : z.shape[-1] - engine.padding].square().sum())
            z, n_steps = new, n_steps + 1
            objective = engine.objective(z)
            logger.info("Learned step %d, centre shift %.6g, objective %.6g.", i,
                        self._user_units(shift * engine.scale**2),
                        self._user_units(objective * engine.scale**2))
            if objective < best:
                best_z, best = z, objective
            if objective < reference * (1.0 - self.tol):
                reference, stalled = objective, 0
            else:
                stalled += 1
            if shift <= tol:
                logger.info("Learned steps converged at step %d.", i)
                break
            if stalled >= _PATIENCE:
                logger.info("Learned steps stopped at step %d: no progress in %d steps.",
                            i, _PATIENCE)
                break
        return engine.from_model_frame(best_z, c.dtype), n_steps

    def _single_run(self, engine: _Engine, x, w, centers, *, score: bool = True) -> _Run:
        c, n_learned, n_lloyd = centers.unsqueeze(0), 0, 0
        if engine.learned is not None:
            c, n_learned = self._learned_steps(engine, c)
        if self.finish == "lloyd" or engine.learned is None:
            c, n_lloyd = self._iterate(engine.exact, x, w, c, self.max_iter)
        steps = {"learned": n_learned, "lloyd": n_lloyd}
        c = c[0]
        if not score:
            return _Run(c, None, None, n_learned + n_lloyd, steps)
        return _Run(c, *self._score(x, w, c), n_learned + n_lloyd, steps)

    def _set_run_attributes(self, run: _Run) -> None:
        self.n_learned_steps_ = run.steps["learned"]
        self.n_lloyd_steps_ = run.steps["lloyd"]
