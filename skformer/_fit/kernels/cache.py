"""The on-disk cache of the compiled kernels (this package): numba's own, made so that
it never breaks a fit.

numba keeps a compiled function in an index file (``.nbi``) and one data file per
signature (``.nbc``), in the first of these folders that can be written:

1. ``$NUMBA_CACHE_DIR`` (numba's own setting), where it is set;
2. ``__pycache__`` beside the source (the checkout, or the installed package);
3. skformer's user cache (a read-only install): ``$SKFORMER_CACHE_DIR/numba``, else
   ``$XDG_CACHE_HOME/skformer/numba``, else ``~/.cache/skformer/numba``
   (:func:`user_folder`),

each in a subfolder per source folder (``kernels_<sha1>``) in 1 and 3. An entry is
valid for the kernel files as they were when it was written: the stamp it is checked
against covers every module of this folder, since a kernel compiles the helpers it calls
from the other modules into itself (numba's own stamp covers one file). Plain numba makes a
fit raise where an entry is damaged (``EOFError``, ``UnpicklingError``) or the folder is
full (``OSError``: ``ENOSPC``, ``EFBIG`` past a file-size limit), and compiles in every
process, silently, where no folder can be written. Here (:func:`jit`):

- each file's payload is stored behind its SHA-256, and each data file with its key: a
  damaged or mismatched entry reads as damaged, never as other code. A damaged entry is
  compiled again and rewritten (its index removed first where the index is what is
  damaged);
- a kernel that cannot be saved is kept in memory for the process (no more saves are
  tried there in that process);
- where no folder can be written, the kernels are compiled in memory;

each with one warning per process that names the folder and what to do. The files are
not numba's plain format (a different version tag heads the index): plain numba reads
them as another version's, and the other way round, and each rewrites what it needs.
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

__all__ = ["helper", "jit", "kernel", "user_folder"]

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
    """The folder of the compiled kernels where the package's own cannot be written:
    ``numba`` in skformer's user cache (``$SKFORMER_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/skformer``, else ``~/.cache/skformer``).

    Examples
    --------
    >>> user_folder().name
    'numba'
    """
    from ...store.locations import cache_dir

    return cache_dir() / "numba"


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

    class UserFolderLocator(user_wide):
        """skformer's user cache folder (:func:`user_folder`)."""

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            self._cache_path = str(user_folder() / self.get_suitable_cache_subpath(py_file))

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes = [named("UserProvidedCacheLocator"),
                            named("InTreeCacheLocator"), UserFolderLocator]

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


def _folder_stamp(func: Callable) -> tuple:
    """The modification time and size of every module beside ``func``'s: a change to any
    kernel file makes every entry stale."""
    folder = Path(func.__code__.co_filename).parent
    stamps = []
    for path in sorted(folder.glob("*.py")):
        st = path.stat()
        stamps.append((path.name, st.st_mtime, st.st_size))
    return tuple(stamps)


def jit(numba, **options) -> Callable:
    """``numba.njit(**options)`` whose dispatchers keep their compiled versions on disk
    with the protections above (``numba``: the imported module)."""
    try:
        cache_class = _cache_class()
    except (ImportError, AttributeError) as exc:  # numba's internals changed: its cache
        logger.debug("skformer's kernel cache is not available (%s): numba's is used", exc)
        return functools.partial(_plain, numba, options)

    def compiled(func: Callable) -> Callable:
        dispatcher = numba.njit(**options)(func)
        try:
            cache = cache_class(func)
        except Exception as exc:  # noqa: BLE001 - RuntimeError: no writable folder
            logger.debug("no kernel cache for %s: %s", func.__name__, exc)
            tried = [numba.config.CACHE_DIR,
                     str(Path(func.__code__.co_filename).parent / "__pycache__"),
                     str(user_folder())]
            _warn_once("nowhere", (
                "No folder for skformer's compiled kernels can be written (tried "
                f"{', '.join(t for t in tried if t)}): each process compiles them "
                f"again on its first fit (a few seconds). {_ADVICE}"))
            return dispatcher
        if not hasattr(dispatcher, "_cache"):  # numba's internals changed
            return _plain(numba, options, func)
        dispatcher._cache = cache
        logger.debug("compiled kernel %s cached in %s", func.__name__, cache.cache_path)
        return dispatcher

    return compiled


def _plain(numba, options: dict, func: Callable) -> Callable:
    """numba's own cache, where skformer's cannot be set up."""
    try:
        return numba.njit(cache=True, **options)(func)
    except RuntimeError:  # nowhere to cache: compile in each process
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
