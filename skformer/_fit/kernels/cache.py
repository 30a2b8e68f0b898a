"""The on-disk cache of the compiled kernels (this package): numba's own, made so that
it never breaks a fit and never writes into the package.

numba keeps a compiled function in an index file (``.nbi``) and one data file per
signature (``.nbc``). Plain numba (``cache=True``) writes them in ``__pycache__`` beside
the source, which for an installed package is inside ``site-packages``: pip neither
removes them on ``pip uninstall`` nor on a reinstall, and the folder left behind shadows
a later editable install (``import skformer`` finds an empty namespace package). Here the
kernels are kept in one place only, :func:`kernel_folder`:

- ``$NUMBA_CACHE_DIR`` (numba's own setting) where it is set, else skformer's user
  cache ``$SKFORMER_CACHE_DIR/numba``, else ``$XDG_CACHE_HOME/skformer/numba``, else
  ``~/.cache/skformer/numba`` (:func:`user_folder`);
- in a subfolder ``kernels-<key>`` whose key hashes the contents of every module of this
  folder, numba's version and Python's: two installs, versions or checkouts of skformer
  share their kernels only where those are the same, and never load each other's
  otherwise. A kernel compiles the helpers it calls from the other modules into itself,
  so its entry must change with any of them (numba's own stamp covers one file).

Plain numba makes a fit raise where an entry is damaged (``EOFError``,
``UnpicklingError``) or the folder is full (``OSError``: ``ENOSPC``, ``EFBIG`` past a
file-size limit), and compiles in every process, silently, where no folder can be
written. Here (:func:`jit`):

- each file's payload is stored behind its SHA-256, and each data file with its key: a
  damaged or mismatched entry reads as damaged, never as other code. A damaged entry is
  compiled again and rewritten (its index removed first where the index is what is
  damaged);
- a kernel that cannot be saved is kept in memory for the process (no more saves are
  tried there in that process);
- where the folder cannot be written, the kernels are compiled in memory;

each with one warning per process that names the folder and what to do. The files are
not numba's plain format (a different version tag heads the index): plain numba would
read them as another version's, and the other way round.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import pickle
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

__all__ = ["helper", "jit", "kernel", "kernel_folder", "user_folder"]

logger = logging.getLogger("skformer")

# The warnings given in this process, by kind: one of each at most.
_WARNED: set[str] = set()
# Folders where a save failed in this process: no more saves are tried there.
_UNSAVED: set[str] = set()
# Heads each index, after numba's version: files of another format read as stale.
_FORMAT = "skformer-sha256-1"
_ADVICE = ("Set SKFORMER_CACHE_DIR (or numba's NUMBA_CACHE_DIR) to a writable folder to "
           "compile them once per machine.")


class DamagedEntry(ValueError):
    """A cache file whose checksum or key does not match: read as damaged."""


def user_folder() -> Path:
    """The folder of the compiled kernels unless numba's ``NUMBA_CACHE_DIR`` is set:
    ``numba`` in skformer's user cache (``$SKFORMER_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/skformer``, else ``~/.cache/skformer``).

    Examples
    --------
    >>> user_folder().name
    'numba'
    """
    from ...store.locations import cache_dir

    return cache_dir() / "numba"


def kernel_folder(source: Path | None = None) -> Path:
    """The one folder where the kernels of the source folder ``source`` (this package's
    folder by default) are kept: ``kernels-<key>`` in numba's ``NUMBA_CACHE_DIR`` where
    it is set, else in :func:`user_folder`. The key hashes the contents of the folder's
    modules, numba's version and Python's (:func:`_sources_key`).

    Examples
    --------
    >>> kernel_folder().name.startswith("kernels-")
    True
    """
    import numba

    source = Path(__file__).parent if source is None else Path(source)
    root = Path(numba.config.CACHE_DIR) if numba.config.CACHE_DIR else user_folder()
    return root / f"kernels-{_sources_key(source)[:16]}"


def _sources_key(source: Path) -> str:
    """A SHA-256 (hex) of the names and contents of the modules in the folder
    ``source``, of numba's version, Python's and this cache's format: what the compiled
    kernels depend on (the CPU is in numba's key of each entry)."""
    import numba

    stats = tuple((path.name, path.stat().st_mtime_ns, path.stat().st_size)
                  for path in sorted(Path(source).glob("*.py")))
    versions = (_FORMAT, numba.__version__, sys.implementation.cache_tag, sys.version)
    return _hashed_sources(str(source), stats, versions)


@functools.cache
def _hashed_sources(source: str, stats: tuple, versions: tuple) -> str:
    # The modification times in ``stats`` are part of the memo's key only: a module
    # changed while the process runs is hashed again.
    digest = hashlib.sha256()
    for part in versions:
        digest.update(part.encode() + b"\0")
    for name, *_ in stats:
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256((Path(source) / name).read_bytes()).digest())
    return digest.hexdigest()


def _warn_once(kind: str, message: str) -> None:
    """Warn at the first caller outside numba and this module, once per ``kind``."""
    if kind in _WARNED:
        logger.debug(message)
        return
    _WARNED.add(kind)
    level, frame = 2, sys._getframe(1)
    while frame.f_back is not None:
        module = frame.f_globals.get("__name__", "")
        if module != __name__ and module.partition(".")[0] != "numba":
            break
        level, frame = level + 1, frame.f_back
    warnings.warn(message, UserWarning, stacklevel=level)


def _checked(data: bytes) -> object:
    """The object pickled in ``data`` behind its SHA-256; :class:`DamagedEntry` where
    they do not match."""
    digest, payload = data[:32], data[32:]
    if len(data) < 32 or hashlib.sha256(payload).digest() != digest:
        raise DamagedEntry("checksum mismatch")
    return pickle.loads(payload)


@functools.cache
def _cache_class() -> type:
    """The cache class of the kernels' dispatchers (built on first use: numba is imported
    lazily)."""
    from numba.core import caching
    from numba.core.serialize import dumps

    def named(name: str) -> type:  # public names since numba 0.61, private before
        return getattr(caching, name, None) or getattr(caching, "_" + name)

    user_wide = named("UserWideCacheLocator")

    class KeyedLocator(user_wide):
        """The kernels' one folder (:func:`kernel_folder`); never ``__pycache__`` beside
        the source, where a package's files outlive pip."""

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            self._cache_path = str(kernel_folder(Path(py_file).parent))

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes = [KeyedLocator]

    class CheckedFile(caching.IndexDataCacheFile):
        """numba's index and data files, each payload behind its SHA-256, each data file
        holding its key too."""

        def __init__(self, cache_path, filename_base, source_stamp):
            super().__init__(cache_path, filename_base, source_stamp)
            self._version = (self._version, _FORMAT)

        def save(self, key, data):
            super().save(key, (key, data))

        def load(self, key):
            found = super().load(key)
            if found is None:
                return None
            stored, data = found
            if stored != key:
                raise DamagedEntry(f"{self._index_name} points to another signature's file")
            return data

        def _dump(self, obj):
            data = dumps(obj)
            return hashlib.sha256(data).digest() + data

        def _load_index(self):
            try:
                with open(self._index_path, "rb") as f:
                    version = pickle.load(f)
                    data = f.read()
            except FileNotFoundError:
                return {}
            if version != self._version:  # another numba, or plain numba's format
                return {}
            stamp, overloads = _checked(data)
            return overloads if stamp == self._source_stamp else {}

        def _load_data(self, name):
            with open(self._data_path(name), "rb") as f:
                return _checked(f.read())

    class KeptCache(caching.FunctionCache):
        """numba's cache of a function's compiled versions; a damaged entry is compiled
        again and rewritten, an entry that cannot be saved is kept in memory."""

        _impl_class = Impl

        def __init__(self, py_func):
            super().__init__(py_func)
            self._cache_file = CheckedFile(self._cache_path, self._impl.filename_base,
                                           _folder_stamp(py_func))

        def load_overload(self, sig, target_context):
            try:
                return super().load_overload(sig, target_context)
            except Exception as exc:  # noqa: BLE001 - damaged: EOFError, UnpicklingError...
                try:
                    self._cache_file._load_index()
                except Exception:  # noqa: BLE001 - the index itself: remove it
                    with contextlib.suppress(OSError):
                        os.remove(self._cache_file._index_path)
                _warn_once("damaged", (
                    f"skformer's compiled-kernel cache {self._cache_path} held a damaged "
                    f"entry ({type(exc).__name__}: {exc}): the kernel is compiled again "
                    "and the entry rewritten."))
                return None

        def save_overload(self, sig, data):
            if self._cache_path in _UNSAVED:
                return
            try:
                super().save_overload(sig, data)
            except Exception as exc:  # noqa: BLE001 - OSError: ENOSPC, EFBIG, EACCES...
                _UNSAVED.add(self._cache_path)
                # The index may name a data file that was not written.
                with contextlib.suppress(OSError):
                    os.remove(self._cache_file._index_path)
                reason = (os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno
                          else f"{type(exc).__name__}: {exc}")
                _warn_once("unsaved", (
                    f"skformer's compiled kernels cannot be saved in {self._cache_path} "
                    f"({reason}): they are compiled in memory for this process (a few "
                    "seconds per process). Free space there, or set NUMBA_CACHE_DIR to a "
                    "writable folder."))

    return KeptCache


def _folder_stamp(func: Callable) -> str:
    """The key of the modules beside ``func``'s (:func:`_sources_key`), checked against
    each index: an entry found in the folder of other sources (a copied folder) reads
    as stale."""
    return _sources_key(Path(func.__code__.co_filename).parent)


def jit(numba, **options) -> Callable:
    """``numba.njit(**options)`` whose dispatchers keep their compiled versions on disk
    with the protections above (``numba``: the imported module)."""
    try:
        cache_class = _cache_class()
    except (ImportError, AttributeError) as exc:  # numba's internals changed: its cache
        logger.debug("skformer's kernel cache is not available (%s): compiled in memory", exc)
        return functools.partial(_plain, numba, options)

    def compiled(func: Callable) -> Callable:
        dispatcher = numba.njit(**options)(func)
        try:
            cache = cache_class(func)
        except Exception as exc:  # noqa: BLE001 - RuntimeError: no writable folder
            logger.debug("no kernel cache for %s: %s", func.__name__, exc)
            folder = kernel_folder(Path(func.__code__.co_filename).parent)
            _warn_once("nowhere", (
                f"The folder of skformer's compiled kernels, {folder}, cannot be "
                "written: each process compiles them again on its first fit (a few "
                f"seconds). {_ADVICE}"))
            return dispatcher
        if not hasattr(dispatcher, "_cache"):  # numba's internals changed: in memory
            return dispatcher
        dispatcher._cache = cache
        logger.debug("compiled kernel %s cached in %s", func.__name__, cache.cache_path)
        return dispatcher

    return compiled


def _plain(numba, options: dict, func: Callable) -> Callable:
    """Compiled in memory, where skformer's cache cannot be set up: numba's own
    (``cache=True``) would write into the installed package."""
    return numba.njit(**options)(func)


@functools.cache
def _nogil() -> Callable:
    import numba

    return jit(numba, nogil=True)


def kernel(func: Callable) -> Callable:
    """Decorator of a kernel where it is defined: ``func`` compiled by numba (releasing
    the GIL) on its first call per signature, kept on disk by :func:`jit`. A kernel may
    call other kernels and helpers; they are compiled into it."""
    return _nogil()(func)


def helper(func: Callable) -> Callable:
    """Decorator of a small kernel called per row by other kernels: inlined into each
    caller where numba reads it (a call per row, not inlined across numba's compiled
    libraries, costs more than the helper's work), so it is compiled and kept on disk
    only as part of its callers."""
    import numba

    return numba.njit(inline="always", nogil=True)(func)
