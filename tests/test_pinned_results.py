"""Pinned results: a fixed set of fits gives the results recorded in
``tests/pinned/results.json``, to the bit.

The fits (``tests/pinned/make.py``, which also writes the file) cover every way a user
reaches the Lloyd engine: :class:`~skformer.ExactLloydTransformer` and
:class:`~skformer.TransformerKMeans` (fast mode) on an in-memory array, a
``numpy.memmap``, a dask array of 3 row chunks and a CSR matrix, float64 and float32, with
sample weights, with ``n_init=3``, on more rows than one block; :func:`~skformer.batch_k_means`
on a padded batch and a ragged list; and the learned mode (``learned_starts=1``) with a
shipped per-shape model and with the shape-generic model. All run on the CPU with a fixed
``random_state``. For each fit the file holds SHA-256 digests of ``labels_`` (int32
bytes) and ``cluster_centers_`` (their own dtype, C-order), ``inertia_`` as
``float.hex``, ``n_iter_``, and, for the learned mode, ``learned_used_``,
``selected_run_`` and the number of learned steps.

**The exact digests are what a refactor must keep** ("nothing changes for users: the same
results, to the bit"). The numbers can still depend on the BLAS library, the CPU and its
instruction set, so the file also holds the centres rounded to 10 significant digits and
the inertia to 12: where an exact digest differs, the test compares the labels (digest),
``n_iter_``, dtypes, the learned run's figures, and the rounded values, and fails only
when one of those differs; otherwise it passes with a ``UserWarning`` that names the
fits that are not bit-identical. That tolerant comparison is the guard against another
BLAS or machine, not an allowance for a refactor: set ``SKFORMER_PIN_STRICT=1`` to make
the exact digests mandatory (a refactor checked on the machine the file was made on, or
one where ``python tests/pinned/make.py --check`` passes on the code before the change).

Each fit also checks its input data (digest), so that a change of NumPy's random streams
is reported as such, and, for the learned mode, which model
:func:`skformer.store.selection.choose_model` picks for the shape (a newly shipped model
changes the results on purpose: regenerate the file then, on the commit that ships it).
"""

import importlib.util
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

PINNED = Path(__file__).with_name("pinned")


def _load_make():
    """``tests/pinned/make.py`` as a module (tests/ is not a package)."""
    name = "skformer_tests_pinned_make"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, PINNED / "make.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before running it: dataclasses look it up
        spec.loader.exec_module(module)
    return sys.modules[name]


make = _load_make()
STORED = json.loads((PINNED / "results.json").read_text())["cases"]
CASES = {case.name: case for case in make.cases()}

# The fields compared exactly in both modes (everything but centres and inertia).
EXACT_ALWAYS = ("labels", "labels_dtype", "centers_dtype", "centers_shape", "n_iter",
                "learned")
# Relative tolerances of the tolerant comparison: above the rounding of the stored values
# (10 and 12 significant digits) for float64; a few float32 units for float32 results.
TOLERANCE = {"float64": (1e-9, 1e-11), "float32": (1e-6, 1e-6)}


def strict() -> bool:
    return os.environ.get("SKFORMER_PIN_STRICT", "").strip() not in ("", "0")


def _values(nested) -> np.ndarray:
    """Rounded values (nested lists, None for NaN padding) as one float64 array."""
    if isinstance(nested, list):
        parts = [_values(v) for v in nested]
        return np.concatenate(parts) if parts else np.empty(0)
    return np.array([np.nan if nested is None else nested], dtype=np.float64)


def _close(got, stored, rtol: float) -> bool:
    a, b = _values(got), _values(stored)
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    scale = float(np.abs(b).max(initial=0.0))
    return bool(np.all(np.abs(a - b) <= rtol * np.abs(b) + rtol * scale))


def tolerant_differences(got: dict, stored: dict) -> list[str]:
    """What differs beyond the rounding of the stored values (empty: the same results
    up to the last bits)."""
    out = [f"{key}: {got.get(key)!r} != pinned {stored.get(key)!r}"
           for key in EXACT_ALWAYS if got.get(key) != stored.get(key)]
    centre_tol, inertia_tol = TOLERANCE["float32" if "float32" in stored["centers_dtype"]
                                        else "float64"]
    if not _close(got["rounded"]["centers"], stored["rounded"]["centers"], centre_tol):
        out.append(f"centers differ beyond rtol={centre_tol:g}")
    if not _close(got["rounded"]["inertia"], stored["rounded"]["inertia"], inertia_tol):
        out.append(f"inertia {got['rounded']['inertia']!r} != pinned "
                   f"{stored['rounded']['inertia']!r} (rtol={inertia_tol:g})")
    return out


def test_every_fit_is_pinned():
    """The file and the fits of make.py name the same cases (regenerate the file after
    adding one, on the commit before any change of results)."""
    assert sorted(CASES) == sorted(STORED)


@pytest.mark.parametrize("name", list(CASES))
def test_pinned_result(name, tmp_path):
    case = CASES[name]
    for module in case.needs:
        pytest.importorskip(f"{module}.array" if module == "dask" else module)
    stored = STORED[name]
    got = make.run_case(case, tmp_path)

    assert got["data"] == stored["data"], (
        f"{name}: the generated input data differ from the pinned ones (NumPy's random "
        "streams changed?): this test cannot check the results; regenerate the file from "
        "a commit whose results are trusted")
    assert got.get("model") == stored.get("model"), (
        f"{name}: the learned model chosen for the shape changed: {got.get('model')} != "
        f"pinned {stored.get('model')} (a newly shipped model: regenerate the file on "
        "its commit)")

    exact = [key for key in (*EXACT_ALWAYS, "centers", "inertia")
             if got.get(key) != stored.get(key)]
    if not exact:
        return
    differences = tolerant_differences(got, stored)
    assert not differences, (f"{name}: the result changed:\n  " + "\n  ".join(differences))
    message = (f"{name}: not bit-identical to the pinned result ({', '.join(exact)} "
               "differ in the last bits; labels, n_iter and the rounded values agree)")
    if strict():
        pytest.fail(message + "; SKFORMER_PIN_STRICT requires the exact digests")
    warnings.warn(message + ": another BLAS or CPU?", UserWarning, stacklevel=1)


def test_tolerant_comparison_tells_last_bits_from_changes():
    """The tolerant comparison passes a result that differs in the last bits only, and
    fails one whose labels, iterations or values differ."""
    import copy

    stored = STORED["exact-numpy-f64"]
    centres = np.array(stored["rounded"]["centers"])

    def changed(**rounded):
        got = copy.deepcopy(stored)
        got["centers"], got["inertia"] = "0" * 64, "0x0p+0"  # exact digests differ
        got["rounded"].update(rounded)
        return tolerant_differences(got, stored)

    last_bits = np.nextafter(centres, np.inf) * (1 + 4e-10)  # across a rounding boundary
    assert changed(centers=last_bits.tolist(),
                   inertia=stored["rounded"]["inertia"] * (1 + 4e-12)) == []
    assert changed(centers=(centres * (1 + 1e-8)).tolist())
    assert changed(inertia=stored["rounded"]["inertia"] * (1 + 1e-10))
    for key, value in [("labels", "0" * 64), ("n_iter", stored["n_iter"] + 1),
                       ("centers_dtype", ["float32"])]:
        got = dict(copy.deepcopy(stored), **{key: value})
        assert tolerant_differences(got, stored), key
