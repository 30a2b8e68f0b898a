"""The Lloyd engine: one backend chosen once per fit, one run loop.

- :mod:`.base`: what a backend provides (:class:`~.base.Backend`), the end of a step,
  the comparison of two assignments;
- :mod:`.loop`: the run loop with KMeans' stopping rules, for one problem and for many;
- one module per backend: :mod:`.compiled` (the CPU, numba kernels in :mod:`.kernels`),
  :mod:`.torch` (a GPU, and the CPU without numba), :mod:`.sparse` (CSR rows) and
  :mod:`.attention` (the exact transformer's literal layer, the proof).

:func:`choose_backend` is the one place that asks which device, container and kernels a
fit has.
"""

from __future__ import annotations

from ...nn.model import ExactLloydModel
from .. import kernels
from ..sources import DaskSource, Source
from .base import Backend, LloydStats, contingency, end_step, same_partition
from .loop import LloydRun, lloyd_loop, run_lloyd

__all__ = ["Backend", "LloydRun", "LloydStats", "choose_backend", "contingency", "end_step",
           "lloyd_loop", "run_lloyd", "same_partition"]


def choose_backend(source: Source, k: int, model: ExactLloydModel | None = None, *,
                   warm: bool = False) -> Backend:
    """The backend of a fit of ``k`` clusters on ``source``: sparse rows take the sparse
    backend; dense rows on the CPU the compiled one where numba is; on another device,
    or without numba, the torch one. ``model`` with ``path="dense"``: its literal layer
    steps (the other backend scores). Where numba is, every backend ends its steps with
    the compiled kernel (:meth:`~.base.Backend.end_step`). ``warm``: the runs start near
    a fixed point (the global moves'), so the compiled backend keeps row bounds early
    whatever ``k``, with the centres' half-gaps in few features
    (:func:`~.compiled.warm_grid`)."""
    compiled = kernels.load()
    if source.sparse:
        from .sparse import SparseBackend

        backend: Backend = SparseBackend(source, k)
    elif source.device.type == "cpu" and compiled is not None:
        from .compiled import CompiledBackend, warm_grid

        backend = (CompiledBackend(source, k, grid=warm_grid(source.n_features)) if warm
                   else CompiledBackend(source, k))
    else:
        from .torch import TorchBackend

        backend = TorchBackend(source, k)
    if model is not None and model.path == "dense":
        if isinstance(source, DaskSource):
            raise ValueError("path='dense' needs a NumPy array (or memmap) or a sparse "
                             "matrix, not a dask array; use path='fused'.")
        from .attention import AttentionBackend

        backend = AttentionBackend(source, model, backend)
    backend.kernels = compiled
    return backend
