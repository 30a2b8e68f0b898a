"""The pinned fits of ``tests/test_pinned_results.py``, and the script that pins them.

Each case is one fit with a fixed ``random_state`` on small data generated here from a
seeded ``numpy.random.Generator`` (NumPy only: the data do not depend on skformer's own
generators), on the CPU (``device="cpu"``). Its result is recorded as

- ``labels``: SHA-256 of the labels as int32 bytes (C-order), and their dtype;
- ``centers``: SHA-256 of the centres' bytes in their own dtype (C-order), their dtype
  and shape;
- ``inertia``: ``float.hex`` of the inertia;
- ``n_iter``: the number of iterations;
- the learned fits' ``learned_used_`` and ``selected_run_`` and the model that
  :func:`skformer.store.selection.choose_model` picks for the shape (its ``origin``,
  whether the data are projected);

and, for a comparison that tolerates another BLAS or CPU, the centres rounded to 10
significant digits (NaN padding as null) and the inertia to 12. A batch's arrays are
hashed the same way; a list's items one after the other, each preceded by its shape.
The input data are hashed too (``data``), so that a change of NumPy's random streams is
told apart from a change of skformer's results.

Run from the repository root, with the code to pin checked out::

    python tests/pinned/make.py            # writes tests/pinned/results.json
    python tests/pinned/make.py --check    # compares a fresh run with it, writes nothing

Only regenerate the file on purpose (a change of results that is meant), never to make
the test pass after a refactor: the refactor is checked against the file as it is.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).with_name("results.json")

CENTRE_DIGITS = 10  # significant digits of the rounded centres
INERTIA_DIGITS = 12  # significant digits of the rounded inertia


# --------------------------------------------------------------------------- data


def blobs(seed: int, n: int, d: int, k: int, spread: float = 3.0) -> np.ndarray:
    """``n`` rows around ``k`` centres drawn in ``[-10, 10]^d``, overlapping enough that
    Lloyd's algorithm takes several steps."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10.0, 10.0, size=(k, d))
    return centres[rng.integers(k, size=n)] + spread * rng.standard_normal((n, d))


def tfidf(seed: int, n: int = 300, vocabulary: int = 120, topics: int = 4,
          dtype=np.float64):
    """TF-IDF-like nonnegative sparse rows (CSR, unit rows, about 8 % nonzero): word counts drawn
    from a topic's few frequent words plus a sparse background, weighted by smoothed
    idf, as ``TfidfVectorizer`` does, written out here so that scikit-learn's version
    does not change the data."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    rates = np.full((topics, vocabulary), 0.05)
    for t in range(topics):  # overlapping topics: Lloyd's algorithm takes ~10 steps
        rates[t, rng.choice(vocabulary, size=20, replace=False)] = 0.3
    counts = rng.poisson(rates[rng.integers(topics, size=n)]).astype(np.float64)
    counts[counts.sum(1) == 0, 0] = 1.0  # no empty document
    df = (counts > 0).sum(0)
    weights = counts * (np.log((1 + n) / (1 + df)) + 1.0)
    weights /= np.sqrt(np.square(weights).sum(1, keepdims=True))
    return sp.csr_matrix(weights.astype(dtype))


def weights_for(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.25, 4.0, size=n)


def as_memmap(X: np.ndarray, folder: Path) -> np.memmap:
    """``X`` written to a file in ``folder`` and opened read-only as a memmap."""
    handle, path = tempfile.mkstemp(suffix=".dat", dir=folder)
    os.close(handle)
    mm = np.memmap(path, dtype=X.dtype, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    del mm
    return np.memmap(path, dtype=X.dtype, mode="r", shape=X.shape)


def as_dask(X: np.ndarray):
    """``X`` as a dask array of 3 row chunks of unequal sizes."""
    import dask.array as da

    n = X.shape[0]
    rows = (n // 3, n // 2, n - n // 3 - n // 2)
    return da.from_array(X, chunks=(rows, X.shape[1]))


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One pinned fit: ``data(folder)`` returns the fit's inputs as ``(X, fit_kwargs)``
    (``folder``: a scratch folder for memmaps), ``fit(X, **fit_kwargs)`` its result as
    a :func:`record`-able dict."""

    name: str
    data: Callable
    fit: Callable
    needs: tuple[str, ...] = ()  # optional modules (dask)
    shape: tuple[int, int] | None = None  # (d, k) of a learned fit: the model it runs


def _estimator(make: Callable):
    def fit(X, **fit_kwargs):
        est = make().fit(X, **fit_kwargs)
        labels = est.labels_
        if hasattr(labels, "compute"):  # a dask fit's labels are lazy
            labels = labels.compute()
        out = dict(labels=np.asarray(labels), centers=est.cluster_centers_,
                   inertia=est.inertia_, n_iter=est.n_iter_)
        if getattr(est, "learned_starts", 0):
            out["learned"] = dict(used=bool(est.learned_used_),
                                  selected_run=str(est.selected_run_),
                                  n_learned_steps=int(est.n_learned_steps_))
        return out

    return fit


def _batch(**params):
    def fit(X, **fit_kwargs):
        from skformer import batch_k_means

        result = batch_k_means(X, **params, **fit_kwargs, random_state=0, device="cpu")
        return dict(labels=result.labels, centers=result.cluster_centers,
                    inertia=result.inertia, n_iter=result.n_iter)

    return fit


def _exact(k, **params):
    from skformer import ExactLloydTransformer

    return _estimator(lambda: ExactLloydTransformer(k, random_state=0, device="cpu",
                                                    **params))


def _fast(k, **params):
    from skformer import TransformerKMeans

    return _estimator(lambda: TransformerKMeans(k, random_state=0, device="cpu", **params))


def _learned(k, **params):
    return _fast(k, learned_starts=1, **params)


def _dense(dtype=np.float64, container=None, weights=False, seed=0, n=2000, d=5, k=6,
           spread=3.0):
    def data(folder):
        X = blobs(seed, n, d, k, spread).astype(dtype)
        if container == "memmap":
            X = as_memmap(X, folder)
        elif container == "dask":
            X = as_dask(X)
        return X, (dict(sample_weight=weights_for(seed + 1, n)) if weights else {})

    return data


def _sparse(dtype=np.float64):
    return lambda folder: (tfidf(0, dtype=dtype), {})


def _padded(folder):
    X = blobs(3, 4 * 200, 3, 3).reshape(4, 200, 3)
    return X, dict(lengths=[200, 150, 120, 80])


def _padded_weights(folder):
    X, kwargs = _padded(folder)
    return X, dict(kwargs, sample_weight=weights_for(10, 800).reshape(4, 200))


def _padded_f32(folder):
    X, kwargs = _padded(folder)
    return X.astype(np.float32), kwargs


def _ragged(folder):
    return [blobs(4 + i, m, 3, 4) for i, m in enumerate((30, 50, 40, 64))], {}


def cases() -> list[Case]:
    """Every pinned fit (the estimators are imported when this is called)."""
    dask = ("dask",)
    d8 = dict(seed=5, n=1500, d=8, k=6, spread=6.0)
    two_blocks = dict(seed=9, n=70_000, d=64, k=4, spread=16.0)
    learned_d8 = _dense(**d8)
    return [
        # in memory, float64 and float32
        Case("exact-numpy-f64", _dense(), _exact(6)),
        Case("fast-numpy-f64", _dense(), _fast(6)),
        Case("exact-numpy-f32", _dense(np.float32), _exact(6)),
        Case("fast-numpy-f32", _dense(np.float32), _fast(6)),
        # the same data as a memmap and as a dask array of 3 row chunks
        Case("exact-memmap-f64", _dense(container="memmap"), _exact(6)),
        Case("fast-memmap-f64", _dense(container="memmap"), _fast(6)),
        Case("exact-memmap-f32", _dense(np.float32, container="memmap"), _exact(6)),
        Case("exact-dask-f64", _dense(container="dask"), _exact(6), needs=dask),
        Case("fast-dask-f64", _dense(container="dask"), _fast(6), needs=dask),
        Case("exact-dask-f32", _dense(np.float32, container="dask"), _exact(6), needs=dask),
        # more rows than one block of a pass (2**22 values: 65536 rows, then 4464); a
        # memmap of more than 10,000 rows is initialised on a seeded sample
        # (docs/dask.rst), so its clustering is not the in-memory one
        Case("exact-numpy-blocks-f32", _dense(np.float32, **two_blocks), _exact(4)),
        Case("exact-memmap-blocks-f32", _dense(np.float32, container="memmap", **two_blocks),
             _exact(4)),
        Case("fast-memmap-blocks-f32", _dense(np.float32, container="memmap", **two_blocks),
             _fast(4)),
        # sparse TF-IDF-like rows (CSR)
        Case("exact-csr-f64", _sparse(), _exact(4)),
        Case("fast-csr-f64", _sparse(), _fast(4)),
        Case("exact-csr-f32", _sparse(np.float32), _exact(4)),
        # sample weights, in memory and on the blocked containers
        Case("exact-numpy-weights", _dense(weights=True), _exact(6)),
        Case("fast-numpy-weights", _dense(weights=True), _fast(6)),
        Case("exact-memmap-weights", _dense(container="memmap", weights=True), _exact(6)),
        Case("exact-dask-weights", _dense(container="dask", weights=True), _exact(6),
             needs=dask),
        # best of three starts
        Case("exact-numpy-ninit3", _dense(), _exact(6, n_init=3)),
        Case("fast-numpy-ninit3", _dense(), _fast(6, n_init=3)),
        Case("exact-numpy-random-init", _dense(), _exact(6, init="random", n_init=3)),
        # many problems at once
        Case("batch-padded", _padded, _batch(n_clusters=3)),
        Case("batch-ragged", _ragged, _batch(n_clusters=[2, 3, 4, 5])),
        Case("batch-padded-ninit3", _padded, _batch(n_clusters=3, n_init=3)),
        Case("batch-padded-weights", _padded_weights, _batch(n_clusters=3)),
        Case("batch-padded-f32", _padded_f32, _batch(n_clusters=3)),
        Case("batch-padded-learned", _padded, _batch(n_clusters=3, learned_starts=1),
             shape=(3, 3)),
        # the learned mode: a shipped per-shape model (where its run is kept, where the
        # Lloyd run is, and on the blocked containers), and the shape-generic model (in
        # full space on a context sample of 2048 of 3000 rows; in the top 64 principal
        # directions of wide data)
        Case("learned-trained-d8-k6", learned_d8, _learned(6), shape=(8, 6)),
        Case("learned-trained-d8-k6-lloyd-kept", _dense(seed=21, n=1500, d=8, k=6,
                                                        spread=6.0),
             _learned(6), shape=(8, 6)),
        Case("learned-trained-d8-k6-memmap", _dense(container="memmap", **d8), _learned(6),
             shape=(8, 6)),
        Case("learned-trained-d8-k6-dask", _dense(container="dask", **d8), _learned(6),
             shape=(8, 6), needs=dask),
        Case("learned-generic-d3-k40", _dense(seed=6, n=3000, d=3, k=40), _learned(40),
             shape=(3, 40)),
        Case("learned-generic-d80-k12", _dense(seed=6, n=600, d=80, k=12, spread=6.0),
             _learned(12), shape=(80, 12)),
    ]


# --------------------------------------------------------------------------- records


def _arrays(value) -> list[np.ndarray]:
    return [np.asarray(v) for v in value] if isinstance(value, list) else [np.asarray(value)]


def digest(value, dtype=None) -> str:
    """SHA-256 of an array's bytes (C-order), in ``dtype`` if given; of a list's items
    one after the other, each preceded by its shape."""
    h = hashlib.sha256()
    listed = isinstance(value, list)
    for a in _arrays(value):
        if listed:
            h.update(repr(a.shape).encode())
        h.update(np.ascontiguousarray(a, dtype=dtype).tobytes())
    return h.hexdigest()


def data_digest(X, fit_kwargs: dict) -> str:
    """SHA-256 of a fit's inputs (dense values, a sparse matrix's parts, keyword arrays)."""
    import scipy.sparse as sp

    h = hashlib.sha256()
    for a in (X if isinstance(X, list) else [X]):
        if sp.issparse(a):
            parts = [a.indptr, a.indices, a.data]
        else:
            parts = [np.asarray(a)]  # a dask array computes (small)
        for p in parts:
            h.update(repr((p.shape, str(p.dtype))).encode())
            h.update(np.ascontiguousarray(p).tobytes())
    for key in sorted(fit_kwargs):
        h.update(key.encode())
        h.update(np.ascontiguousarray(fit_kwargs[key]).tobytes())
    return h.hexdigest()


def _rounded(values, digits: int):
    """Nested lists of ``values`` rounded to ``digits`` significant digits (NaN: None)."""
    def one(v):
        v = float(v)
        return None if np.isnan(v) else float(f"{v:.{digits - 1}e}")

    if isinstance(values, list):
        return [_rounded(v, digits) for v in values]
    a = np.asarray(values)
    if a.ndim == 0:
        return one(a)
    return [_rounded(row, digits) if np.ndim(row) else one(row) for row in a]


def _hex(values):
    a = np.asarray(values, dtype=np.float64)
    return float(a).hex() if a.ndim == 0 else [float(v).hex() for v in a.ravel()]


def _ints(values):
    a = np.asarray(values)
    return int(a) if a.ndim == 0 else [int(v) for v in a.ravel()]


def record(result: dict) -> dict:
    """What is pinned of one fit's result (see the module docstring)."""
    labels, centres = result["labels"], result["centers"]
    out = {
        "labels": digest(labels, np.int32),
        "labels_dtype": sorted({str(a.dtype) for a in _arrays(labels)}),
        "centers": digest(centres),
        "centers_dtype": sorted({str(a.dtype) for a in _arrays(centres)}),
        "centers_shape": [list(a.shape) for a in _arrays(centres)],
        "inertia": _hex(result["inertia"]),
        "n_iter": _ints(result["n_iter"]),
        "rounded": {"centers": _rounded(centres, CENTRE_DIGITS),
                    "inertia": _rounded(result["inertia"], INERTIA_DIGITS)},
    }
    if "learned" in result:
        out["learned"] = result["learned"]
    return out


def model_choice(shape) -> dict | None:
    """The model a learned fit of shape ``(d, k)`` runs (``choose_model``)."""
    if shape is None:
        return None
    from skformer.store.selection import choose_model

    choice = choose_model(*shape)
    return {"origin": choice.origin, "projected": choice.project is not None,
            "skipped": choice.skipped}


@contextlib.contextmanager
def dask_scheduler():
    """Dask's threaded scheduler (the default without a client), whatever client another
    test has made the default: the results must not depend on it, and the pin is made
    and checked on one."""
    try:
        import dask
    except ImportError:
        yield
        return
    with dask.config.set(scheduler="threads"):
        yield


def run_case(case: Case, folder: Path) -> dict:
    """The record of one case's fit, with its data digest and model choice."""
    X, fit_kwargs = case.data(folder)
    with dask_scheduler():
        out = record(case.fit(X, **fit_kwargs))
        out["data"] = data_digest(X, fit_kwargs)
    choice = model_choice(case.shape)
    if choice is not None:
        out["model"] = choice
    return out


def environment() -> dict:
    """The versions and machine the pin was made with (for the reader; not compared)."""
    import importlib.metadata as md

    versions = {}
    for name in ("numpy", "scipy", "scikit-learn", "torch", "numba", "dask"):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            versions[name] = None
    try:
        from threadpoolctl import threadpool_info

        blas = sorted({f"{i['internal_api']} {i['version']}" for i in threadpool_info()
                       if i.get("user_api") == "blas"})
    except Exception:  # noqa: BLE001 - informative only
        blas = []
    return {"python": platform.python_version(), "machine": platform.machine(),
            "processor": platform.processor(), "versions": versions, "blas": blas,
            "SKFORMER_COMPILED": os.environ.get("SKFORMER_COMPILED")}


def run_all(names=None) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        return {c.name: run_case(c, Path(folder)) for c in cases()
                if names is None or c.name in names}


def _commit() -> str | None:
    """The checkout's commit (None outside a git checkout: pass ``--commit``)."""
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).parent).stdout.strip()
    except Exception:  # noqa: BLE001 - informative only
        return None


def dumps(payload: dict) -> str:
    """JSON with one line per recorded field of a case (short lines for the header)."""
    def compact(value):
        return json.dumps(value, separators=(",", ":"))

    lines = ["{"]
    header = [k for k in payload if k != "cases"]
    for key in header:
        lines.append(f" {json.dumps(key)}: {json.dumps(payload[key])},")
    lines.append(' "cases": {')
    names = list(payload["cases"])
    for i, name in enumerate(names):
        fields = payload["cases"][name]
        lines.append(f"  {json.dumps(name)}: {{")
        keys = list(fields)
        for j, key in enumerate(keys):
            comma = "," if j < len(keys) - 1 else ""
            lines.append(f"   {json.dumps(key)}: {compact(fields[key])}{comma}")
        lines.append("  }" + ("," if i < len(names) - 1 else ""))
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare a fresh run with the stored file; write nothing")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--commit", help="the commit the code was checked out from "
                        "(default: git's HEAD here)")
    args = parser.parse_args(argv)
    # A private model cache: no model of the user's cache takes part in the learned fits.
    with tempfile.TemporaryDirectory() as cache:
        os.environ["SKFORMER_CACHE_DIR"] = cache
        results = run_all()
    if args.check:
        stored = json.loads(args.out.read_text())["cases"]
        differ = [name for name in results if results[name] != stored.get(name)]
        missing = sorted(set(stored) - set(results))
        for name in differ:
            print(f"differs: {name}")
        for name in missing:
            print(f"not run: {name}")
        print(f"{len(results) - len(differ)} of {len(results)} cases identical")
        return 1 if differ or missing else 0
    import skformer

    payload = {
        "about": "Pinned results of tests/test_pinned_results.py, written by "
                 "tests/pinned/make.py; regenerate only for a change of results that is "
                 "meant.",
        "skformer": skformer.__version__,
        "commit": args.commit or _commit(),
        "environment": environment(),
        "cases": results,
    }
    args.out.write_text(dumps(payload))
    print(f"wrote {len(results)} cases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
