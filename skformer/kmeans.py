"""TransformerKMeans: KMeans by the exact transformer (fast mode), with learned runs on request."""

from __future__ import annotations

import logging
import warnings
from numbers import Integral

import torch
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import BaseTransformerKMeans
from ._fit import FitResult, LearnedSetup, auto_context
from ._fit.learned import auto_polish, learned_pace
from ._fit.moves import BREATHING_DEPTH
from .store.selection import choose_model

__all__ = ["TransformerKMeans"]

logger = logging.getLogger("skformer")


class TransformerKMeans(BaseTransformerKMeans):
    """K-means clustering by transformers: exact Lloyd steps, and learned steps on demand.

    By default (``learned_starts=0``, the fast mode) the fit is the run
    :class:`sklearn.cluster.KMeans` makes: the same k-means++ centres (same random
    stream), then exact Lloyd steps, each one forward pass of the hard-attention
    transformer of :class:`ExactLloydTransformer`, to the same fixed point.

    With ``learned_starts >= 1`` (the learned mode, the one for the best clustering)
    every initialisation also gets a *learned run*. Each learned step is one forward
    pass of a pretrained one-layer transformer with soft distance attention (paper
    eq. 4): point tokens ``[x_i ; 0]`` and centre tokens ``[c_j ; code(j)]`` go in, better
    centres come out. The tokens are rebuilt from the data and the current centres at
    every step (re-embedding), and the model anneals: its attention temperatures follow
    a learned schedule over the steps, soft first (centres leave poor configurations
    that Lloyd's algorithm gets stuck in), then sharp; the steps are made at 2 and 4
    times the schedule's inverse temperatures (1, 2 and 4 without global moves) and the
    centres of least objective on the context are kept (data differ in how soft a step
    they bear). Exact Lloyd steps then run to a fixed point, so the result is a local
    optimum of k-means, as KMeans returns. Of the Lloyd run and the learned run the one
    of lower inertia is kept, and global moves (breathing k-means, ``breathing_depth``)
    start from the best: they take centres from where there are too many to where one is
    missing, which no local step can do, and their result is kept only where its inertia
    is lower; with 64 clusters or more the learned steps then run once more from their
    end (``learned_polish``), and Hartigan's single-point moves (``hartigan``) follow,
    each point to the cluster where the inertia, both means updated, falls most, each
    kept on the same terms.
    So with the same ``init``, ``n_init`` and ``random_state``, the inertia is
    never above the fast mode's, which is KMeans' except where a cluster is left without
    points (KMeans moves its centre to a far point, the exact Lloyd steps keep it; the
    global moves then usually move it, see :doc:`/reliability`). On Fritzke's benchmark
    and on pixels, digits, blobs, mixtures and embeddings the learned mode ends at or
    below Breathing K-Means' inertia (within 0.05 %), in less of its time, on the 21 data
    sets there at 8 seeds (the figures, and where it falls short: :doc:`/benchmarks`,
    "The best clustering per CPU-second").

    The learned model serves every shape ``(n_features, n_clusters)`` without training
    at fit time. Where a model trained for the shape is shipped (or cached) and expected
    to gain at least 0.5 % over Lloyd's algorithm from the fit's kind of start, it runs
    (for a narrower ``n_features`` than a shipped model of the same ``n_clusters``, the
    data are padded with zero features). Otherwise, with the binary code, the
    *shape-generic* model of the code width ``ceil(log2 n_clusters)`` runs: the exact
    construction at the data's shape driven by a temperature schedule trained once on
    tasks of every ``k`` of that code width (:mod:`skformer.store.generic`); on data
    with more than 64 features its steps run in the top 64 principal directions of the
    context, and its centres are taken back as means of the rows they assign. With
    ``embedding="onehot"`` a model is pretrained on demand where none is stored (about
    a minute on a CPU up to 128 features and 20 clusters, said by a warning; see
    :func:`skformer.pretrain`), and the learned run is skipped, with a warning, where
    that would take longer.

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
        variance) to end the learned steps (after the model's schedule), and the Lloyd
        steps (which also stop when the assignment does not change).
    learned_starts : int, default=0
        Learned runs per initialisation. 0 (the default, the fast mode) runs the Lloyd
        run only: the fit is KMeans', by the exact transformer, at the speed of
        :class:`ExactLloydTransformer`. 1 (the slower, learned mode) adds the learned run
        from the same initial centres; the better of the two is kept (so the inertia is
        never above the fast mode's), and the global moves of ``breathing_depth="auto"``
        follow. Each further one adds a learned run from further k-means++ centres
        drawn on the context. At equal time against KMeans with more restarts
        (``n_init``; :doc:`/benchmarks`, "The learned mode at equal time"), 2 ended
        lower on generated data of 100,000 rows and more, where k-means++ starts get
        stuck and a learned run on the context costs little beside a KMeans restart over
        all the rows; on small data (thousands of rows) more KMeans restarts reach as
        low an inertia sooner.
    breathing_depth : int or "auto", default="auto"
        Global moves after the runs (breathing k-means, Fritzke 2020), from the best
        run: this many centres are added beside those of largest error and Lloyd steps
        run, then as many of least utility are removed and Lloyd steps run again; the
        cycles repeat while they lower the inertia by a relative ``tol``, the depth
        dropping by one after each that does not. The result replaces the run's only
        where its inertia is lower. 0: none. ``"auto"``: 7 with
        ``learned_starts >= 1`` (the mode for the best clustering), 0 otherwise (the fast
        mode stays KMeans' run).
    hartigan : bool or "auto", default="auto"
        Hartigan and Wong's single-point moves after the global moves (or, without them,
        after the best run): each point in turn goes to the cluster where the inertia,
        both means updated, falls most; Lloyd steps then run to a fixed point, and the
        result replaces the run's only where its inertia is lower. They end at fixed
        points of Lloyd's steps that Lloyd's steps cannot leave (a point's own cluster
        counts it in its mean), most often where clusters are small. Made where the
        rows can be walked in this process: in memory, a ``numpy.memmap`` or a sparse
        matrix (read dense a few rows at a time), not a dask array. ``"auto"``: where
        global moves run.
    learned_polish : bool or "auto", default="auto"
        The learned steps once more after the global moves (or, without them, after
        the best run), from their centres, then Lloyd steps to a fixed point; the result
        replaces the run's only where its inertia is lower, and Hartigan's moves follow.
        Where the moves stall, the soft steps still shift groups of centres at once.
        True needs ``learned_starts >= 1``. ``"auto"``: where learned runs and global
        moves run, with ``n_clusters >= 64`` (with fewer clusters the moves reach most
        regions, and the polish rarely lowered the inertia, at about a tenth more time).
    finish : {"lloyd", "none"}, default="lloyd"
        ``"lloyd"``: after the learned steps, exact Lloyd steps run to a fixed point,
        and the plain Lloyd run from the same start competes. ``"none"``: the centres
        of the learned steps are the result (no Lloyd step at all).
    max_context : int, "auto" or None, default="auto"
        The learned steps run on at most this many points: all of them when
        ``n_samples <= max_context``, else a seeded sample (the same for every run);
        the Lloyd steps always run on all the data. ``"auto"``: 128 points per
        cluster, at least 2048 and 16 per cluster, at most what keeps points times
        clusters times the model's token width within ``2**28`` (each centre's mean
        needs points; :func:`skformer._fit.auto_context`). With a
        sample of at most half the points, exact Lloyd steps on the sample first
        screen each learned run: it gets Lloyd steps on all the data (and competes)
        only where its fixed point on the sample is another clustering of lower
        inertia than the runs before it, so a learned run that ends where the plain
        Lloyd run did costs no pass over all the data. None: all points (the
        points-to-points attention then costs ``n_samples**2``). With
        ``learned_starts >= 1`` it must be at least ``n_clusters``.
    pretrain : bool, default=True
        Pretrain a model on demand when none is stored for the shape. If False, a
        missing model raises :class:`LookupError`.
    verbose : int, default=0
        Log progress to the ``"skformer"`` logger (shown on stderr), with a progress
        bar while pretraining.
    random_state : int, RandomState instance or None, default=None
        Determines random number generation for centroid initialization, the context
        sample and the further learned starts (these two from copies, so the initial
        centres are KMeans').
    copy_x : bool, default=True
        Accepted for compatibility with :class:`~sklearn.cluster.KMeans`, where False
        centres X in place. skformer never modifies X, whatever the value: the fit
        works on its own centred copy of an in-memory array (a ``numpy.memmap`` or a
        dask array is read block by block and never copied), and the result does not
        depend on ``copy_x``.
    algorithm : {"lloyd"}, default="lloyd"
        K-means algorithm to use, as in :class:`~sklearn.cluster.KMeans`. Only
        ``"lloyd"``: the transformer's layers are Lloyd iterations. ``"elkan"`` (which
        converges to the same clustering in KMeans) is refused with a ``ValueError``.
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
        Steps run in the selected run: learned plus exact Lloyd steps.
    n_learned_steps_ : int
        Learned steps of the selected run, at its kept temperature scale (0 when the
        plain Lloyd run was kept).
    n_lloyd_steps_ : int
        Exact Lloyd steps of the selected run (0 with ``finish="none"``).
    n_breathing_cycles_ : int
        Breathing cycles made from the best run (0 without global moves); their Lloyd
        steps are not counted in ``n_iter_``, which stays one run's, as in KMeans.
    selected_run_ : {"lloyd", "learned"}
        Which run of the best initialisation gave the result (or, where
        ``breathing_improved_``, the start of the global moves that did).
    breathing_improved_ : bool
        Whether the result is the global moves' centres (they lowered the inertia of
        the selected run).
    n_hartigan_moves_ : int
        Points moved by the single-point moves (``hartigan``) that gave the result (0:
        none made, or their result not kept).
    learned_polish_improved_ : bool
        Whether the learned polish (``learned_polish``) lowered the inertia (the result
        is its centres, or the single-point moves' from them).
    learned_used_ : bool
        Whether learned steps ran at all (False for ``n_clusters=1``,
        ``learned_starts=0``, data whose range overflows float64, and, with
        ``embedding="onehot"``, a model that does not beat Lloyd's algorithm or a shape
        with no model that cannot be pretrained on demand within 90 s).
    learned_skipped_ : str or None
        Why the learned steps were skipped (also logged with ``verbose``, and a
        ``UserWarning`` when ``learned_starts >= 1`` and ``n_clusters > 1``), None when
        they ran.
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
    centres are mapped back. The learned steps run in float32 on the context points;
    every Lloyd step and the final assignment run on all the data in its own dtype.
    ``n_clusters=1`` skips the learned steps (one Lloyd step gives the optimum, the
    mean). ``predict``, ``transform`` and ``score`` use the fitted centres directly
    (nearest centre, distances, ``-inertia``), row by row; a fitted estimator holds no
    model and pickles small.

    A process forked after a fit (``multiprocessing`` with the ``"fork"`` start
    method, joblib's ``"multiprocessing"`` backend) hangs in its next fit, as with
    :class:`~sklearn.cluster.KMeans`: PyTorch's OpenMP thread pool does not survive
    ``fork``. Use the ``"spawn"`` or ``"forkserver"`` start method (joblib's default
    backend is safe), or call ``torch.set_num_threads(1)`` before forking.

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
        "learned_starts": [Interval(Integral, 0, None, closed="left")],
        "breathing_depth": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "hartigan": ["boolean", StrOptions({"auto"})],
        "learned_polish": ["boolean", StrOptions({"auto"})],
        "finish": [StrOptions({"lloyd", "none"})],
        "max_context": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}),
                        None],
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
        learned_starts=0,
        breathing_depth="auto",
        hartigan="auto",
        learned_polish="auto",
        finish="lloyd",
        max_context="auto",
        pretrain=True,
        verbose=0,
        random_state=None,
        copy_x=True,
        algorithm="lloyd",
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
            copy_x=copy_x,
            algorithm=algorithm,
            device=device,
        )
        self.embedding = embedding
        self.loss = loss
        self.learned_starts = learned_starts
        self.breathing_depth = breathing_depth
        self.hartigan = hartigan
        self.learned_polish = learned_polish
        self.finish = finish
        self.max_context = max_context
        self.pretrain = pretrain

    def _learned_setup(self, n_features: int, device: torch.device) -> LearnedSetup | None:
        """The learned model of the fit, or None (the reason logged and kept for
        ``learned_skipped_``)."""
        if self.finish == "none" and self.learned_starts == 0:
            raise ValueError("finish='none' needs learned_starts >= 1 (a fit with neither "
                             "learned nor Lloyd steps has nothing to run).")
        self._skip_reason = None
        if self.learned_starts == 0:
            return self._skip("learned_starts=0: Lloyd's algorithm only")
        max_context = self.max_context
        if isinstance(max_context, Integral) and max_context < self.n_clusters:
            raise ValueError(
                f"max_context={self.max_context} should be >= n_clusters={self.n_clusters}: "
                "the learned steps run on a sample of max_context points.")
        choice = choose_model(n_features, self.n_clusters, embedding=self.embedding,
                              loss=self.loss, pretrain=self.pretrain,
                              progress=bool(self.verbose), init=self.init,
                              judge=self.finish == "lloyd", device=device)
        if choice.model is None:
            # n_clusters=1 loses nothing (one Lloyd step gives the optimum): no warning.
            return self._skip(choice.skipped, warn=self.n_clusters > 1)
        logger.info("Learned steps: the %s model for d=%d, k=%d%s.", choice.origin,
                    n_features, self.n_clusters,
                    "" if choice.project is None else
                    f", in {choice.project} principal directions")
        if max_context == "auto":
            max_context = auto_context(self.n_clusters, choice.model.layer.embed_dim)
        return LearnedSetup(choice.model, choice.padding, max_context, choice.project,
                            **learned_pace(bool(self._breathing_depth())))

    def _skip(self, reason: str, warn: bool = False) -> None:
        """No learned steps in this fit, for ``reason`` (logged, and ``learned_skipped_``;
        ``warn``: also a warning, where the user asked for learned runs)."""
        self._skip_reason = reason
        logger.info("Learned steps skipped: %s.", reason)
        if warn:
            warnings.warn(f"learned_starts={self.learned_starts}: no learned run is made: "
                          f"{reason}.", UserWarning, stacklevel=4)

    def _breathing_depth(self) -> int:
        """The breathing depth of the fit (``"auto"`` resolved)."""
        if self.breathing_depth == "auto":
            return BREATHING_DEPTH if self.learned_starts >= 1 and self.finish == "lloyd" else 0
        if self.breathing_depth > 0 and self.finish == "none":
            raise ValueError(f"breathing_depth={self.breathing_depth} needs finish='lloyd' "
                             "(the global moves run Lloyd steps); set breathing_depth=0.")
        return self.breathing_depth

    def _hartigan(self) -> bool:
        """Whether the fit makes single-point moves (``"auto"`` resolved)."""
        if self.hartigan == "auto":
            return self._breathing_depth() > 0
        if self.hartigan and self.finish == "none":
            raise ValueError("hartigan=True needs finish='lloyd' (Lloyd steps follow the "
                             "single-point moves); set hartigan=False.")
        return bool(self.hartigan)

    def _learned_polish(self) -> bool:
        """Whether the fit polishes with learned steps (``"auto"`` resolved)."""
        if self.learned_polish == "auto":
            return auto_polish(self.n_clusters, self.learned_starts, self._breathing_depth())
        if self.learned_polish and self.learned_starts == 0:
            raise ValueError("learned_polish=True needs learned_starts >= 1 (the polish "
                             "runs the learned model); set learned_polish=False.")
        if self.learned_polish and self.finish == "none":
            raise ValueError("learned_polish=True needs finish='lloyd' (Lloyd steps follow "
                             "the learned steps); set learned_polish=False.")
        return bool(self.learned_polish)

    def _fit_spec(self, n_features: int, device: torch.device, random_state) -> dict:
        return {"learned": self._learned_setup(n_features, device), "finish": self.finish,
                "learned_starts": self.learned_starts,
                "breathing_depth": self._breathing_depth(), "hartigan": self._hartigan(),
                "learned_polish": self._learned_polish()}

    def _set_run_attributes(self, result: FitResult) -> None:
        self.n_learned_steps_ = result.n_learned_steps
        self.n_lloyd_steps_ = result.n_lloyd_steps
        self.selected_run_ = result.selected
        self.learned_used_ = result.learned_used
        self.learned_skipped_ = self._skip_reason or result.learned_skipped
        self.n_breathing_cycles_ = result.n_breathing_cycles
        self.breathing_improved_ = result.breathing_improved
        self.n_hartigan_moves_ = result.n_hartigan_moves
        self.learned_polish_improved_ = result.polish_improved
