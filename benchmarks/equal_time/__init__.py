"""Benchmark: does the learned mode pay at equal time? TransformerKMeans against KMeans'
inertia-time curve.

A user who gives :class:`sklearn.cluster.KMeans` more time gets more k-means++ restarts
(``n_init``). So the learned mode of :class:`skformer.TransformerKMeans`
(``learned_starts >= 1``) is judged against KMeans' *curve*, not against one KMeans run.

Protocol, per data set:

* **KMeans' curve**: ``KMeans(k, n_init=N, random_state=seed)`` for ``N`` in
  {1, 2, 4, 8, 16} (k-means++ each run); per ``N`` the median over the seeds of the fit's
  wall time and of its inertia.
* **TransformerKMeans' points**: ``TransformerKMeans(k, n_init=1, learned_starts=r,
  random_state=seed, pretrain=False)`` for ``r`` in {0, 1, 2, 3}; ``r = 0`` is the fast mode
  (KMeans' run by the exact transformer, a reference point), ``r >= 1`` the learned mode.
  The same medians.
* **The peers' points**, where their packages are installed (skformer's ``bench`` extra;
  else skipped with one note per package): Breathing K-Means (``bkmeans``, ``n_init=1``,
  "bkm") and faiss' k-means with ``nredo`` 1 and 10 ("faiss-1", "faiss-10"), the same
  seeds; and a long search, Breathing K-Means with ``n_init=10`` ("long"), only to lower
  the best inertia known. Each is judged against KMeans' curve like TransformerKMeans'
  points. ``--no-peers`` and ``--no-long-search`` switch them off.
* **Every method's gap to the best inertia known**
  (:func:`~benchmarks.equal_time.report.gaps_to_best`): the best known on a data set is the
  lowest inertia of any fit of any method and seed; a method's gap is the median over the
  seeds of ``inertia / best - 1`` (per cent), beside its median time.
* **All fits alternate in one process**, the same seeds for every method: per seed one round
  of every method, KMeans, TransformerKMeans and the peers interleaved, the round's order
  rotated by the seed's index (:func:`~benchmarks.equal_time.runs.fit_order`). Before the
  rounds, every method but the long search is fitted once untimed on the first 20,000 rows
  (loads the learned model, starts thread pools). With ``--repeats R`` each seed has R
  such rounds and a fit's time is its least over them (stalls of a shared machine
  lengthen single fits, from a few per cent to several times). Inertia is the k-means
  objective of each fit's centres, evaluated in float64 by one function for every
  estimator.
* **The judge** (:func:`~benchmarks.equal_time.report.kmeans_at_time`): KMeans' median
  inertia at the point's median time, linear in log(time) between the bracketing
  ``n_init`` points. Below ``n_init=1``'s time: ``n_init=1``'s inertia ("faster than one
  KMeans run"); above the largest ``n_init``'s time: its inertia, flagged (KMeans had time
  for more restarts). The ratio ours / KMeans-at-equal-time below 1 means the learned mode
  wins at equal time. Also the smallest ``n_init`` whose median inertia is at most ours
  (:func:`~benchmarks.equal_time.report.needs_n_init`) and our time over its time.
  A median over seeds does not see a seed that ends in a poor local optimum (k-means++ on
  well-separated clusters does so now and then); the same judge on *mean* inertias, read
  at the same median times, is reported beside it as a secondary view.

Data sets (:mod:`benchmarks.versus_kmeans.data`): iris (raw), wine and breast_cancer
(standardised), digits (raw), ``k`` their number of classes; and the generated families
(``blobs-iso``, ``mixture`` by default; ``blobs-aniso``, ``blobs-unequal`` on request), each
at every ``(n, d)``, ``k = 10``. The default run (:data:`~benchmarks.equal_time.data.DEFAULT`)
takes n in {1e4, 1e5, 1e6}, d in {8, 32}, 10 seeds (5 at n = 1e6); ``--quick`` takes a
minute or two. ``os.getloadavg()`` is recorded before and after the run and every data set: on a
shared machine, compare ratios within one run. ``--threads 1`` runs both estimators on one
thread: on a loaded machine, fits on two OpenMP threads that compete with other processes
were measured 7-10 times slower than on one, and erratic.

Run it with ``skformer bench equal-time [--quick] [--no-peers] [--no-long-search]
[--out FILE.json] [--plot FILE.png]``.
"""

from benchmarks.equal_time.cli import main
from benchmarks.equal_time.data import DEFAULT, QUICK, Preset, datasets
from benchmarks.equal_time.report import (
    FASTER,
    INTERPOLATED,
    SLOWER,
    CurvePoint,
    EqualTime,
    Gap,
    Point,
    Summary,
    format_curves,
    format_gaps,
    format_points,
    gaps_to_best,
    kmeans_at_time,
    needs_n_init,
    plot_summary,
    summarise,
)
from benchmarks.equal_time.runs import (
    LONG_SEARCH,
    PEERS,
    FitRecord,
    Method,
    fit_order,
    methods,
    peer_methods,
    run_dataset,
)

__all__ = [
    "DEFAULT",
    "FASTER",
    "INTERPOLATED",
    "LONG_SEARCH",
    "PEERS",
    "QUICK",
    "SLOWER",
    "CurvePoint",
    "EqualTime",
    "FitRecord",
    "Gap",
    "Method",
    "Point",
    "Preset",
    "Summary",
    "datasets",
    "fit_order",
    "format_curves",
    "format_gaps",
    "format_points",
    "gaps_to_best",
    "kmeans_at_time",
    "main",
    "methods",
    "needs_n_init",
    "peer_methods",
    "plot_summary",
    "run_dataset",
    "summarise",
]
