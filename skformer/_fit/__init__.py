"""The fit layer: one flow for every data container (private; never imports the
estimators).

- :mod:`.sources`: an in-memory array, a memmap read in blocks, a dask array, behind
  one interface (summary pass, rows by index, map/reduce over blocks); :mod:`.sparse`
  a CSR matrix, with its per-block kernels; :mod:`.containers` picks the source;
- :mod:`.frame`: the fit frame (mean translation, power-of-two scale) and the
  learned model's frame;
- :mod:`.lloyd`: Lloyd's step as per-block partial, merge, finish; scoring; its
  per-block kernel is, on the CPU, compiled with numba (:mod:`.compiled`) or in NumPy
  without it (:mod:`.cpu`), on a GPU :func:`~skformer.nn.exact_step`;
- :mod:`.learned`: the learned steps on the context sample; :mod:`.screen` the exact
  Lloyd steps on it that decide which learned runs are finished on all the data;
- :mod:`.runs`: initialisation, runs with their stopping rules, best of ``n_init``.
"""

from .assign import labels_inertia
from .containers import as_source
from .learned import LearnedSetup, auto_context
from .runs import INIT_SAMPLE, FitResult, FitSpec, fit
from .sources import Source, WeightStats, dask_labels, is_dask

__all__ = [
    "INIT_SAMPLE",
    "FitResult",
    "FitSpec",
    "LearnedSetup",
    "Source",
    "WeightStats",
    "as_source",
    "auto_context",
    "dask_labels",
    "fit",
    "is_dask",
    "labels_inertia",
]
