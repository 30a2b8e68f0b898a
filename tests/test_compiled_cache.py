"""The compiled kernels' cache on disk (``skformer/_fit/kernels/cache.py``) is kept in one
folder of the user's cache, never in the package (issue 41: numba's ``__pycache__`` in
``site-packages`` outlived ``pip uninstall`` and shadowed a later editable install), keyed
so that different sources never load each other's kernels, and never breaks a fit: a
damaged entry is compiled again and rewritten, a full folder or one that cannot be written
costs a compile per process, each with one warning naming the folder.

The fits run in fresh processes (``sys.executable -c``) on a copy of the package in a
folder of the test (an installed package, as ``pip install .`` leaves it), each with its
cache in a folder of the test: the kernels compile there (a few seconds per process). The
cache's own mechanics are tested in this process on a one-line kernel (a fraction of a
second to compile).
"""

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from skformer._fit.kernels import cache as kernel_cache  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# A fit in a fresh process; prints its warnings, where skformer was imported from and
# the kernels' cache hits, misses and folders as JSON.
CHILD = r"""
import json, os, sys, warnings
import numpy as np
import skformer
from skformer import TransformerKMeans
from skformer._fit import kernels as compiled
X = np.random.default_rng(0).normal(size=(500, 4))
if os.environ.get("TEST_FILE_SIZE_LIMIT"):  # writes past it fail with EFBIG
    import resource, signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(os.environ["TEST_FILE_SIZE_LIMIT"]), hard))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model = TransformerKMeans(3, random_state=0).fit(X)
kernels = compiled.load().dispatchers()
print(json.dumps({
    "warnings": [str(w.message) for w in caught],
    "package": os.path.dirname(skformer.__file__),
    "hits": sum(sum(k.stats.cache_hits.values()) for k in kernels),
    "misses": sum(sum(k.stats.cache_misses.values()) for k in kernels),
    "folders": sorted({str(k.stats.cache_path) for k in kernels if k.signatures}),
    "inertia": float(model.inertia_),
}))
"""


def _install(site: Path) -> Path:
    """A copy of the package in the folder ``site`` (as ``pip install .`` leaves it,
    without compiled files); returns ``site``."""
    shutil.copytree(ROOT / "skformer", site / "skformer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return site


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: its size and modification time, by path."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _fit(tmp_path: Path, site: Path | None = None, **env: str) -> dict:
    """A fit in a fresh process with its caches in ``tmp_path`` (and ``env``), of the
    package installed in ``site`` (default: the checkout)."""
    full = {name: value for name, value in os.environ.items()
            if name not in ("NUMBA_CACHE_DIR", "SKFORMER_COMPILED", "NUMBA_DISABLE_JIT")}
    full.update({"SKFORMER_CACHE_DIR": str(tmp_path / "skformer"),
                 "XDG_CACHE_HOME": str(tmp_path / "xdg"),
                 "PYTHONPATH": str(site or ROOT), "PYTHONDONTWRITEBYTECODE": "1", **env})
    run = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, env=full,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(report["package"]) == (site or ROOT) / "skformer"
    return report


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A first fit of an installed copy of the package, which compiles its kernels.
    Returns the folder of the test, the copy's folder, its files before the fit and the
    fit's report."""
    tmp = tmp_path_factory.mktemp("built")
    site = _install(tmp / "site-packages")
    before = _files(site)
    return tmp, site, before, _fit(tmp, site)


def test_kernels_are_kept_in_the_user_folder_never_in_the_package(built):
    tmp, site, before, first = built
    assert first["warnings"] == []
    assert first["misses"] > 0 and first["hits"] == 0
    (folder,) = first["folders"]
    assert Path(folder).parent == tmp / "skformer" / "numba"
    assert Path(folder).name.startswith("kernels-")
    # Nothing written in the package: pip would leave it behind on uninstall.
    assert _files(site) == before
    assert not list(site.rglob("*.nb[ic]"))
    again = _fit(tmp, site)  # a later process: loaded, not compiled
    assert again["warnings"] == [] and again["misses"] == 0
    # The kernels called from Python are loaded; the helpers they call were compiled
    # into them (each also has its own entry, never loaded).
    assert 0 < again["hits"] <= first["misses"]
    assert again["folders"] == first["folders"] and again["inertia"] == first["inertia"]
    assert _files(site) == before


def test_installs_share_kernels_only_where_their_sources_are_the_same(built, tmp_path):
    tmp, _, _, first = built
    same = _install(tmp_path / "same")  # another install of the same sources
    report = _fit(tmp, same)
    assert report["folders"] == first["folders"]
    assert report["misses"] == 0 and report["hits"] > 0
    # Another version: one kernel module differs. Its kernels are compiled into a folder
    # of their own; the first install's are neither loaded nor replaced.
    other = _install(tmp_path / "other")
    with open(other / "skformer" / "_fit" / "kernels" / "bounds.py", "a") as f:
        f.write("\n# another version\n")
    report = _fit(tmp, other)
    assert report["folders"] != first["folders"] and report["hits"] == 0
    assert Path(report["folders"][0]).parent == Path(first["folders"][0]).parent
    again = _fit(tmp, same)
    assert again["misses"] == 0 and again["folders"] == first["folders"]


def test_damaged_entries_are_compiled_again(built, tmp_path):
    source, site, _, first = built
    shutil.copytree(source / "skformer", tmp_path / "skformer")
    files = sorted((tmp_path / "skformer").rglob("*.nb[ic]"))
    assert files
    for path in files:  # every file cut in half: EOFError / UnpicklingError in plain numba
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    report = _fit(tmp_path, site)
    assert len(report["warnings"]) == 1, report["warnings"]
    (folder,) = report["folders"]
    assert f"cache {folder} held a damaged entry" in report["warnings"][0]
    assert report["misses"] == first["misses"] and report["inertia"] == first["inertia"]
    again = _fit(tmp_path, site)  # rewritten: a later process is fine
    assert again["warnings"] == [] and again["misses"] == 0 and again["hits"] > 0


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file-size limit")
def test_full_folder_compiles_in_memory(tmp_path):
    # Writes past 4 KiB fail (EFBIG), as on a full disk (ENOSPC): the index is written,
    # the data are not.
    report = _fit(tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
                  TEST_FILE_SIZE_LIMIT="4096")
    assert len(report["warnings"]) == 1, report["warnings"]
    (folder,) = report["folders"]
    assert Path(folder).parent == tmp_path / "numba"
    message = report["warnings"][0]
    assert f"cannot be saved in {folder} ({os.strerror(errno.EFBIG)})" in message
    assert "NUMBA_CACHE_DIR" in message
    # No index is left naming a data file that was not written.
    assert not list(Path(folder).glob("*.nbi"))


def test_nowhere_to_write_compiles_in_memory(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # no folder can be made under a file, even by root
    report = _fit(tmp_path, SKFORMER_CACHE_DIR=str(blocked / "c"))
    assert len(report["warnings"]) == 1, report["warnings"]
    message = report["warnings"][0]
    assert str(blocked / "c" / "numba" / "kernels-") in message
    assert "each process compiles them again" in message
    assert "Set SKFORMER_CACHE_DIR (or numba's NUMBA_CACHE_DIR) to a writable" in message
    assert report["folders"] == ["None"] and report["hits"] == 0 and report["misses"] > 0


# ------------------------------------------------------- the cache itself, in this process


def _twice(x):  # a one-line kernel for the cache's own tests
    return 2 * x


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """``numba``'s cache folder set to ``tmp_path``, this process's warnings forgotten;
    returns a maker of fresh dispatchers of :func:`_twice` and the kernel's folder."""
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_cache, "_WARNED", set())
    monkeypatch.setattr(kernel_cache, "_UNSAVED", set())

    def make():
        return kernel_cache.jit(numba, nogil=True)(_twice)

    return make


def _counts(dispatcher) -> tuple[int, int]:
    stats = dispatcher.stats
    return sum(stats.cache_hits.values()), sum(stats.cache_misses.values())


def test_saved_then_loaded(cache, recwarn):
    first = cache()
    assert first(1.5) == 3.0 and _counts(first) == (0, 1)
    second = cache()
    assert second(1.5) == 3.0 and _counts(second) == (1, 0)
    assert len(recwarn) == 0


@pytest.mark.parametrize("damage", ["flipped byte", "garbage index", "swapped entries"])
def test_damaged_entry(cache, damage):
    first = cache()
    first(1.5), first(np.int64(3))
    folder = Path(first.stats.cache_path)
    (index,) = folder.glob("*_twice*.nbi")
    data = sorted(folder.glob("*_twice*.nbc"))
    if damage == "flipped byte":  # a valid pickle of damaged code without the checksum
        for path in data:
            raw = bytearray(path.read_bytes())
            raw[len(raw) // 2] ^= 0xFF
            path.write_bytes(bytes(raw))
    elif damage == "garbage index":
        index.write_bytes(os.urandom(200))
    else:  # each signature's file holds the other's kernel
        a, b = (path.read_bytes() for path in data)
        data[0].write_bytes(b)
        data[1].write_bytes(a)
    second = cache()
    with pytest.warns(UserWarning, match="held a damaged entry") as caught:
        assert second(1.5) == 3.0 and second(np.int64(3)) == 6
    assert len(caught) == 1 and str(folder) in str(caught[0].message)
    assert _counts(second) == (0, 2)
    third = cache()  # rewritten
    assert third(1.5) == 3.0 and third(np.int64(3)) == 6 and _counts(third) == (2, 0)


def test_full_folder(cache, monkeypatch):
    from numba.core import caching

    def full(self, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(caching.IndexDataCacheFile, "_open_for_write", full)
    first = cache()
    with pytest.warns(UserWarning, match="cannot be saved in") as caught:
        assert first(1.5) == 3.0
        assert first(np.int64(3)) == 6  # no second try, no second warning
    assert len(caught) == 1
    assert f"{first.stats.cache_path} ({os.strerror(errno.ENOSPC)})" in str(caught[0].message)
    assert not list(Path(first.stats.cache_path).glob("*_twice*"))


def test_the_folder_is_numbas_cache_dir_else_the_users(monkeypatch, tmp_path):
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path / "user"))
    folder = kernel_cache.kernel_folder()
    assert folder.parent == tmp_path / "user" / "numba"
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "numba"))
    assert kernel_cache.kernel_folder() == tmp_path / "numba" / folder.name


def test_the_key_is_the_sources_numba_and_python_not_the_path(monkeypatch, tmp_path):
    # A kernel compiles the helpers it calls from other kernel files into itself: its
    # entry must not outlive a change to any of them (numba's own stamp covers one file).
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
        (folder / "step.py").write_text("def f():\n    return 1\n")
        (folder / "bounds.py").write_text("x = 1\n")
    key = kernel_cache._sources_key(a)
    assert kernel_cache._sources_key(b) == key  # same sources elsewhere: shared
    (b / "bounds.py").write_text("x = 22\n")
    assert kernel_cache._sources_key(b) != key
    (b / "bounds.py").write_text("x = 1\n")
    (b / "other.py").write_text("")
    assert kernel_cache._sources_key(b) != key  # a module added
    monkeypatch.setattr(numba, "__version__", "0.0.1")
    assert kernel_cache._sources_key(a) != key
    monkeypatch.undo()
    monkeypatch.setattr(sys.implementation, "cache_tag", "other-99")
    assert kernel_cache._sources_key(a) != key
