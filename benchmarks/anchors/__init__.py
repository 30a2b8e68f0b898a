"""Benchmark: the best clustering per CPU-second, side by side with the anchors.

Users compare :class:`skformer.TransformerKMeans` with the best clustering they can get
in the same time: KMeans with more restarts, Breathing K-Means (Fritzke 2020, the
``bkmeans`` package), faiss' k-means with restarts. This benchmark runs them all on the
same data, in one process, and judges each by its gap to the best inertia known.

Data sets (:mod:`benchmarks.anchors.data`): Fritzke's benchmark at k = 100 (the ten
self-generated 2-D sets, Birch1, Norm25-new, Cloud, Spam; Intrusion on request), read
from a folder the user gives (``--fritzke-data DIR`` or ``$SKFORMER_FRITZKE_DATA``; never
shipped nor downloaded; skipped with a note where missing), and chosen sets made on
demand, seeded: an overlapping mixture with unequal cluster sizes (``mixture-unequal``,
n = 20,000, d = 32, k = 10), blobs (``blobs16-k64``), pixels (``china-k64``), digits
(``digits-k50``, ``digits-k10``), 2-D clusters of mixed spread (``mixed2d-k60``,
:func:`~benchmarks.anchors.data.mixed_2d`) and embeddings (``embed128-k100``).
``--quick`` runs tiny versions (300 rows, k <= 8) in seconds.

Methods (:data:`~benchmarks.anchors.runs.METHODS`, each built from ``(k, seed)``; those
whose package is missing are skipped with a note):

* ``kmeans-N``: ``KMeans(k, n_init=N, random_state=seed)`` for N in 1, 2, 4, 8, 10, 16,
  32: KMeans' inertia-time curve.
* ``bkm``: ``bkmeans.BKMeans(n_clusters=k, random_state=seed)`` (Fritzke's reference
  implementation, breathing depth m = 5).
* ``faiss-N``: ``faiss.Kmeans(d, k, niter=25, nredo=N, seed=seed)`` for N in 1 and 10,
  trained in float32.
* ``TransformerKMeans(k, random_state=seed)`` in seven modes: ``fast`` (the defaults:
  KMeans' run), ``breathing`` (``learned_starts=0, breathing_depth=5``: global moves with
  Lloyd steps alone, then Hartigan's single-point moves), ``breathing-10`` (the same at
  depth 10), ``learned-only`` (``learned_starts=1, breathing_depth=0``: the learned steps
  alone), ``learned`` (``learned_starts=1``, defaults otherwise: the learned steps, the
  global moves, the learned polish and the single-point moves, the mode for the best
  clustering), ``learned-lloyd`` (the same with ``hartigan=False``) and
  ``learned-nopolish`` (the same with ``learned_polish=False``).
* ``long``: ``BKMeans(n_clusters=k, n_init=10, random_state=seed)``, a long search that
  only lowers the best inertia known.

Protocol, per data set (:func:`~benchmarks.anchors.runs.run_set`): every method is first
fitted once, untimed, on a seeded sample of the data (imports, compiled kernels, thread
pools and the learned model are then loaded); then per seed 0 .. S-1 (default 3) one round
of every method, the round's order rotated by the seed's index. A fit's time is the wall
time of its ``fit``; its inertia is the sum of squared distances of the rows to their
nearest fitted centre, computed exactly in float64 by one function for every method
(:func:`skformer._base.labels_inertia`). ``--threads N`` limits every method's threads
(OpenMP, BLAS, torch, faiss) alike; by default each library takes what a user gets.

Report (:mod:`benchmarks.anchors.report`): the best inertia known per data set is the
lowest of every run of every method and seed, the long search included. Per data set
and method: the median gap to it (``inertia / best - 1``, per cent), the median time, the
median over the seeds of the time and the inertia over Breathing K-Means' of the same
seed, and the median inertia over KMeans' curve read at the median time
(:func:`benchmarks.equal_time.report.kmeans_at_time`). The learned mode's targets
(:class:`~benchmarks.anchors.report.Targets`): inertia at most 1.0005 times Breathing
K-Means' in at most its time; median gap at most 0.2 %; at equal time at most 0.99 of
KMeans' curve where KMeans(n_init=1)'s gap is at least 1 %, never above 1.001.

Run it with ``skformer bench anchors [--datasets NAME ...] [--methods NAME ...]
[--seeds S] [--threads N] [--fritzke-data DIR] [--quick] [--out FILE.json] [--rst FILE]
[--markdown FILE] [--plot FILE.png]``; ``--list`` prints the data sets and methods,
``--from-json FILE`` reports a saved run again.
"""

from benchmarks.anchors.cli import main
from benchmarks.anchors.data import (
    DEFAULT,
    QUICK,
    SETS,
    AnchorSet,
    available,
    fritzke_folder,
    mixed_2d,
    read_fritzke,
    select,
    tiny,
)
from benchmarks.anchors.report import SetSummary, Targets, summarise, to_markdown, to_rst
from benchmarks.anchors.runs import METHODS, AnchorRecord, Method, run_set, select_methods

__all__ = [
    "DEFAULT",
    "METHODS",
    "QUICK",
    "SETS",
    "AnchorRecord",
    "AnchorSet",
    "Method",
    "SetSummary",
    "Targets",
    "available",
    "fritzke_folder",
    "main",
    "mixed_2d",
    "read_fritzke",
    "run_set",
    "select",
    "select_methods",
    "summarise",
    "tiny",
    "to_markdown",
    "to_rst",
]
