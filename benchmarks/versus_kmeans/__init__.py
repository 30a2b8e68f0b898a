"""Benchmark: TransformerKMeans against sklearn.cluster.KMeans on bundled and generated data.

For every data set and every seed, ``KMeans(k, n_init=N, random_state=seed)`` and
``TransformerKMeans(k, n_init=N, random_state=seed)`` are fitted in the same process, the
order alternating from seed to seed. With the same ``random_state`` and ``n_init`` both
start from the same k-means++ centres, so the comparison isolates what the learned steps
(followed by exact Lloyd steps, ``finish="lloyd"``) do against Lloyd's algorithm alone.
Each :class:`Record` holds both inertias and their ratio (ours / KMeans: below 1 is a
better local optimum), ARI and NMI against the true labels, fit times
(``time.perf_counter``) and iterations. One untimed fit of each estimator per data set
warms up model loading and first-call overheads. :func:`summarise` takes medians over
seeds per data set.

Data sets (:data:`DATASETS`), all bundled with or generated without downloads:

* ``iris`` (raw), ``wine`` and ``breast_cancer`` (standardised), ``digits`` (raw);
* ``blobs-iso``: ``k`` isotropic Gaussian blobs of equal size, centres uniform in
  ``[-10, 10]^d`` (as :func:`sklearn.datasets.make_blobs`' default ``center_box``) and
  ``cluster_std = 1.4 * sqrt(d)`` by default, so that the classes overlap about equally
  at every ``d`` (the nearest-true-centre rule scores ARI about 0.9 at d = 8 and 0.96 at
  d = 32) and KMeans does not reach ARI 1 trivially;
* ``blobs-aniso``: the same blobs times a fixed linear map ``U diag(s) V^T`` (random
  orthogonal ``U``, ``V``, singular values ``s`` evenly spaced in [0.25, 1.75]);
* ``blobs-unequal``: sizes in the ratios ``1 : 2 : ... : k`` and per-cluster standard
  deviations ``std * linspace(1.5, 0.5, k)`` (the smallest cluster is the widest).

The generated sets are drawn from ``numpy.random.default_rng(data_seed)``, chunk by chunk
(float32 or float64 directly), so they are deterministic and a million rows cost only
their own size.

Two sub-experiments:

* ``--context``: what sampling the keys of the points-to-points attention costs. On one
  ``blobs-iso`` set (default n = 20000, d = 32, k = 10), for ``max_context`` in
  {64, 256, 1024, 4096, None} and ``finish`` in {"none", "lloyd"}: the median over seeds
  of the inertia relative to the ``max_context=None`` (all points) fit with the same seed
  and finish, and the fit time (:func:`context_experiment`).
* ``--memory``: the peak resident memory one fit adds on ``n = 10**6`` float32 rows,
  ``d = 32``, ``k = 10``, for TransformerKMeans and KMeans, each in a fresh interpreter
  (:func:`peak_memory`), in bytes and relative to ``X.nbytes``. The target is < 2 GB.

Run it with ``skformer bench kmeans [--out FILE.json] [--plot FILE.png]``; add
``--no-table --context`` or ``--no-table --memory`` for the sub-experiments alone.
"""

from benchmarks.versus_kmeans.cli import main
from benchmarks.versus_kmeans.data import (
    BUNDLED,
    DATASETS,
    GENERATED,
    Dataset,
    blobs_aniso,
    blobs_iso,
    blobs_unequal,
    default_std,
    load_bundled,
    make_datasets,
)
from benchmarks.versus_kmeans.report import (
    RATIO_RTOL,
    ContextSummary,
    Summary,
    format_context,
    format_summary,
    plot_summary,
    summarise,
    summarise_context,
)
from benchmarks.versus_kmeans.runs import (
    CONTEXTS,
    FINISHES,
    ContextRecord,
    MemoryRecord,
    Record,
    compare,
    context_experiment,
    machine_info,
    peak_memory,
)

__all__ = [
    "BUNDLED",
    "CONTEXTS",
    "DATASETS",
    "FINISHES",
    "GENERATED",
    "RATIO_RTOL",
    "ContextRecord",
    "ContextSummary",
    "Dataset",
    "MemoryRecord",
    "Record",
    "Summary",
    "blobs_aniso",
    "blobs_iso",
    "blobs_unequal",
    "compare",
    "context_experiment",
    "default_std",
    "format_context",
    "format_summary",
    "load_bundled",
    "machine_info",
    "main",
    "make_datasets",
    "peak_memory",
    "plot_summary",
    "summarise",
    "summarise_context",
]
