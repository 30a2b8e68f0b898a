"""Peak memory of one fit, measured in a fresh interpreter (Linux), for the benchmarks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["fit_peak_memory"]

# The child builds ``(estimator, X)`` with ``module:function(*args)``, fits a slice once
# (imports, model loading and other lazy work), resets the peak resident set size and
# measures what one fit adds.
_CHILD = """
import importlib, json, resource, sys
module, function = sys.argv[1].split(":")
est, X = getattr(importlib.import_module(module), function)(*json.loads(sys.argv[2]))
est.fit(X[:2000])

def status(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(field))

try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak resident set size (VmHWM) to the current one
    method = "VmHWM"
except OSError:
    method = "ru_maxrss"
cuda = str(getattr(est, "device", "cpu")).startswith("cuda")
if cuda:
    import torch
    torch.cuda.reset_peak_memory_stats()
base = status("VmRSS:")
est.fit(X)
peak = status("VmHWM:") if method == "VmHWM" else resource.getrusage(
    resource.RUSAGE_SELF).ru_maxrss * 1024
nbytes = getattr(X, "nbytes", None)
if nbytes is None:  # a sparse matrix: its stored values, column indices and row pointers
    nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
print(json.dumps({"peak_bytes": peak - base, "x_nbytes": nbytes, "method": method,
                  "cuda_peak_bytes": torch.cuda.max_memory_allocated() if cuda else None}))
"""


def fit_peak_memory(factory: str, *args) -> dict | None:
    """Memory one fit adds, measured in a fresh interpreter; None off Linux.

    Parameters
    ----------
    factory : str
        ``"module:function"``; ``function(*args)`` returns ``(estimator, X)``. The child
        finds ``benchmarks`` (and ``skformer``) from the repository root, whatever the
        current directory.
    *args
        JSON-serialisable arguments of the factory.

    Returns
    -------
    dict or None
        ``peak_bytes`` (peak resident set size during the fit less the resident size
        before it), ``x_nbytes`` (a sparse matrix: the bytes of its three arrays),
        ``method`` (``"VmHWM"``, reset just before the fit, or ``"ru_maxrss"``) and
        ``cuda_peak_bytes`` (None on the CPU).
    """
    if not sys.platform.startswith("linux"):
        return None
    root = str(Path(__file__).resolve().parents[1])  # the folder that holds benchmarks/
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, factory, json.dumps(list(args))],
        capture_output=True, text=True, check=True, env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])
