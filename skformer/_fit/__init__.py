"""The fit layer: one flow for every data container (private; never imports the
estimators).

- :mod:`.sources`: an in-memory array, a memmap read in blocks, a dask array, behind
  one interface (summary pass, rows by index, map/reduce over blocks); :mod:`.sparse`
  a CSR matrix; :mod:`.containers` picks the source;
- :mod:`.frame`: the fit frame (mean translation, power-of-two scale) and the
  learned model's frame;
- :mod:`.engine`: the Lloyd engine, one backend chosen once per fit (compiled CPU,
  torch, sparse, literal attention) and one run loop with KMeans' stopping rules;
  :mod:`.kernels` its numba kernels and their on-disk cache;
- :mod:`.assign`: the final assignment (labels and inertia, whatever the magnitudes);
- :mod:`.learned`: the learned steps on the context sample and their loop;
  :mod:`.screen` the exact Lloyd steps on it that decide which learned runs are
  finished on all the data;
- :mod:`.runs`: initialisation, the runs of a start, best of ``n_init``;
  :mod:`.blas`: one BLAS thread while a fit runs.
"""

from .assign import labels_inertia
from .containers import as_source
from .engine import Backend, choose_backend
from .learned import LearnedSetup, auto_context
from .runs import INIT_SAMPLE, FitResult, FitSpec, fit
from .sources import Source, WeightStats, dask_labels, is_dask

__all__ = [
    "INIT_SAMPLE",
    "Backend",
    "FitResult",
    "FitSpec",
    "LearnedSetup",
    "Source",
    "WeightStats",
    "as_source",
    "auto_context",
    "choose_backend",
    "dask_labels",
    "fit",
    "is_dask",
    "labels_inertia",
]
