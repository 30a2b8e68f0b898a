"""Benchmark: the learned mode of :class:`skformer.TransformerKMeans` at users' shapes.

Every shape ``(d, k)`` gets a learned model (:func:`skformer.store.selection.choose_model`):
one trained for it where one is shipped and expected to help, else the shape-generic model
of its binary code width, stepped in the top 64 principal directions where ``d > 64``.
This benchmark judges that at the shapes users have: pixels (d = 3, k = 16-256), digits
(d = 64, k = 10-100), embeddings (d = 128-1024, k = 30-1000), PQ sub-spaces (d = 4-16,
k = 256), the paper's mixture at a new shape, and 1-D data (:mod:`benchmarks.shapes.data`).

Per shape, in one process (:func:`~benchmarks.shapes.runs.run_shape`):

1. **First fit.** ``first_fit_s``: wall time of the first
   ``TransformerKMeans(k, learned_starts=1, random_state=0).fit(X)`` of the shape (model
   choice and loading included; a tiny fit before the first shape has loaded the compiled
   Lloyd kernel, ``--no-warm-up`` leaves it out), then ``first_fit_lloyd_s``, the
   ``learned_starts=0`` fit (the fast mode). ``learned``: the first fit's
   ``learned_used_``; ``origin`` and ``project``: ``choose_model(d, k)``'s ("trained" or
   "generic"; None or 64 principal directions).
2. **Headroom captured from random starts** (per seed; a start is k distinct rows drawn by
   ``np.random.default_rng(seed)``): Lloyd alone is ``KMeans(k, init=start, n_init=1,
   max_iter=20, tol=0, algorithm="lloyd")``; learned alone is ``TransformerKMeans(k,
   init=start, n_init=1, learned_starts=1, finish="none", max_iter=20, tol=0)``: 20
   learned steps on the context sample, no Lloyd step, inertia on all of X. The best
   known is ``KMeans(k, n_init=10, random_state=0)`` (once per shape).
   ``headroom = 1 - mean(best / Lloyd20)``; ``captured = (sum Lloyd20 - sum learned20) /
   (sum Lloyd20 - n_seeds * best)``, None where the headroom is below 1e-6. Target:
   captured >= 25 % wherever headroom >= 10 %.
3. **Ratio to Lloyd from k-means++ starts** (per seed; ``start =
   sklearn.cluster.kmeans_plusplus(X, k, random_state=seed)[0]``): Lloyd's run is
   ``KMeans(k, init=start, n_init=1)``; the learned run finished by Lloyd takes the
   centres of ``TransformerKMeans(k, init=start, n_init=1, learned_starts=1,
   finish="none")`` into ``KMeans(k, init=those, n_init=1)``; ``ratio`` = its inertia
   over Lloyd's. The estimator's own result ``TransformerKMeans(k, init=start, n_init=1,
   learned_starts=1)`` over Lloyd's must be at most ``1 + 1e-9`` (its Lloyd run
   competes): a larger one is flagged, and the command exits with status 1. Target: the
   median over shapes with k >= 32 of the shapes' median ratio is at most 0.995.
4. **Time**: the estimator's fit over KMeans' fit from the same k-means++ start
   (``time_ratio``, median over seeds).
5. **Peers** (:mod:`benchmarks.shapes.peer_runs`; ``--no-peers`` leaves them out): per
   seed, one fit of each of ``KMeans(k, n_init=1, random_state=seed)``, ``KMeans(k,
   n_init=10, random_state=seed)`` (seed 0's is the best known fit of step 2, not fitted
   again), ``TransformerKMeans(k, learned_starts=1, random_state=seed)`` as users call
   it, and where installed (the ``bench`` extra; a missing package is skipped with one
   printed note) Breathing K-Means (``bkmeans.BKMeans(k, n_init=1)``) and faiss'
   k-means with ``nredo`` 1 and 10 (:mod:`benchmarks.peers`), and a long search,
   Breathing K-Means with ``n_init=10``, there to lower the best known. Each inertia
   is :func:`skformer._base.labels_inertia` of the fitted centres on all of X.
   ``best_known``: the lowest inertia of all these runs; per peer, ``gap``: the median
   over seeds of ``inertia / best_known - 1``, and the median fit seconds (``peers``;
   every fit in ``peer_runs``).

Every ``TransformerKMeans`` here gets ``random_state=seed`` (the context sample) and
``device`` (``--device``, default cpu). Inertias of steps 1-4 are each estimator's
``inertia_`` on all of X. Warnings of the fits (``ConvergenceWarning`` where a run ends
with fewer distinct centres) are recorded per shape, not printed.

Run it with ``skformer bench shapes [--preset full|quick] [--shapes NAME,...]
[--seeds N] [--no-peers] [--out FILE.json] [--plot FILE.png]``; ``--list`` prints the grid. The full
grid takes hours on 2 CPU cores (``embed1024-k1000`` most: it runs last, on 12,000 rows,
:data:`~benchmarks.shapes.data.EMBED1024_N`); the JSON file is rewritten after every
shape.
"""

from benchmarks.shapes.cli import main
from benchmarks.shapes.data import FULL, PRESETS, QUICK, SHAPES, Shape, embeddings, select
from benchmarks.shapes.report import (
    CAPTURED_TARGET,
    HEADER,
    LARGE_K,
    RATIO_TARGET,
    ROOM,
    Summary,
    captured,
    format_peers,
    format_row,
    format_summary,
    headroom,
    plot_records,
    summarise,
)
from benchmarks.shapes.runs import (
    TOLERANCE,
    HeadroomSeed,
    PeerRow,
    PeerRun,
    PlusPlusSeed,
    ShapeRecord,
    distinct_rows,
    run_shape,
)

__all__ = [
    "CAPTURED_TARGET",
    "FULL",
    "HEADER",
    "LARGE_K",
    "PRESETS",
    "QUICK",
    "RATIO_TARGET",
    "ROOM",
    "SHAPES",
    "TOLERANCE",
    "HeadroomSeed",
    "PeerRow",
    "PeerRun",
    "PlusPlusSeed",
    "Shape",
    "ShapeRecord",
    "Summary",
    "captured",
    "distinct_rows",
    "embeddings",
    "format_peers",
    "format_row",
    "format_summary",
    "headroom",
    "main",
    "plot_records",
    "run_shape",
    "select",
    "summarise",
]
