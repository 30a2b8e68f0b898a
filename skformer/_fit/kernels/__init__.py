"""The numba-compiled CPU kernels, loaded on demand.

- :mod:`.step`: the Lloyd step over chunks of rows (nearest centre, add rows, end of a
  step, ordered merge);
- :mod:`.bounds`: Hamerly's row bounds, which let a step skip rows;
- :mod:`.assign`: the final assignment's nearest centres;
- :mod:`.costs`: each centre's error and utility (the global moves');
- :mod:`.hartigan`: Hartigan and Wong's single-point moves;
- :mod:`.cache`: their on-disk cache, which never breaks a fit.

Each kernel is decorated where it is defined and compiled on its first call per dtype.
Importing skformer imports none of this: :func:`load` imports numba and the kernel
modules on the first fit that chooses the compiled backend (about 0.7 s and 28 MB per
process), and the first fit on a machine compiles them (docs/benchmarks.rst, "The first
fit's compile", gives the time).
"""

from __future__ import annotations

import functools
import logging
import os
from types import ModuleType

__all__ = ["Kernels", "load"]

logger = logging.getLogger("skformer")


class Kernels:
    """The compiled kernels, by name (each a numba dispatcher)."""

    def __init__(self, *modules: ModuleType):
        for module in modules:
            for name in module.__all__:
                value = getattr(module, name)
                if hasattr(value, "py_func"):
                    setattr(self, name, value)

    def dispatchers(self) -> list:
        """Every kernel (to inspect their compiled signatures)."""
        return [v for v in vars(self).values() if hasattr(v, "py_func")]


@functools.cache
def load() -> Kernels | None:
    """The compiled kernels, or None where numba cannot be imported, its JIT is off
    (``NUMBA_DISABLE_JIT``) or the environment variable ``SKFORMER_COMPILED`` is ``0``
    (then the CPU takes the torch backend)."""
    if os.environ.get("SKFORMER_COMPILED", "1").strip() == "0":
        return None
    try:
        import numba
    except ImportError:
        logger.debug("numba is not importable: the CPU step runs in torch.")
        return None
    if numba.config.DISABLE_JIT:
        return None
    from . import assign, bounds, costs, hartigan, step

    return Kernels(step, bounds, assign, costs, hartigan)
