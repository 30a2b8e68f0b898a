"""The files of ``skformer cluster``: its input read once, its outputs checked and written.

The input is read in one go, into memory, and everything else (is it gzip? a ``.npy``
array? where does the header end?) is decided from those bytes. A pipe, ``-`` (standard
input) or a ``/dev/fd/N`` path of a shell's process substitution can be read only once:
a reader that opens the input a second time (to sniff a header, then to parse) loses what
the first read consumed, and the rows with it.

Outputs are checked, against the input and each other, before the input is read, so that
a long fit never ends by overwriting its own input or one output with another.
"""

from __future__ import annotations

import gzip
import os
import stat
import sys
import zlib
from pathlib import Path
from typing import NamedTuple

__all__ = ["STDIN", "Input", "TableError", "check_outputs", "read_input", "shortest",
           "write_centres", "write_labels"]

STDIN = "-"
"""The input name that reads standard input."""
_GZIP_MAGIC = b"\x1f\x8b"


class TableError(ValueError):
    """The input is not a numeric table, or an output cannot be written; the message is
    one line for the user."""


class Input(NamedTuple):
    """The bytes of the input, decompressed."""

    name: str
    """The input as messages name it: its path, or ``<stdin>``."""
    data: bytes


def read_input(source: str) -> Input:
    """Read ``source`` once: a file, a pipe or ``/dev/fd/N`` path, or ``-`` (stdin).

    Gzip data (magic bytes ``1f 8b``, whatever the name) is decompressed.

    Parameters
    ----------
    source : str
        A path, or ``"-"`` for standard input.

    Returns
    -------
    Input
        Its name for messages and its (decompressed) bytes.

    Raises
    ------
    TableError
        Standard input is a terminal, or the gzip data is corrupt or truncated.
    OSError
        The file cannot be opened or read.

    Examples
    --------
    >>> import gzip, tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "x")  # no .gz suffix: found by its magic bytes
    ...     with open(path, "wb") as f:
    ...         _ = f.write(gzip.compress(b"1,2\\n"))
    ...     read_input(path).data
    b'1,2\\n'
    """
    if source == STDIN:
        name = "<stdin>"
        if sys.stdin is None or sys.stdin.isatty():  # would wait for typing
            raise TableError("'-' reads standard input, which is a terminal here: pipe or "
                             "redirect the data (skformer cluster - < data.csv)")
        data = sys.stdin.buffer.read()
    else:
        name = source
        with open(source, "rb") as handle:
            data = handle.read()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TableError(f"{name}: corrupt or truncated gzip data ({exc})") from None
    return Input(name, data)


def _writable(path: str) -> str | None:
    """Why ``path`` cannot be written, or None."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        return f"cannot write {path}: it is a folder"
    if not folder.is_dir():
        return f"cannot write {path}: the folder {folder} does not exist"
    if target.exists() and not os.access(target, os.W_OK):
        return f"cannot write {path}: permission denied"
    if not target.exists() and not os.access(folder, os.W_OK):
        return f"cannot write {path}: the folder {folder} is not writable"
    return None


def _identity(path: str) -> tuple | None:
    """What names one file: ``(device, inode)`` of an existing regular file, the
    resolved path of one still to be made, None for anything else (``/dev/null``, a
    terminal, a pipe), which several outputs may share without harm."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return ("new", os.path.realpath(path))
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def _input_identity(source: str) -> tuple | None:
    """The identity of the input: for ``-``, the file redirected to standard input."""
    if source != STDIN:
        identity = _identity(source)
        return None if identity is None or identity[0] == "new" else identity
    try:
        info = os.fstat(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):  # no stdin, or a replaced one
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def check_outputs(source: str, outputs: dict[str, str | None]) -> str | None:
    """Why the outputs cannot be written (a message), or None where they can.

    Checked before the input is read and the model fitted: each output must be writable,
    must not be the input, and must not be another output (the second write would
    leave only its own content). Writing can still fail later (a full disk); the caller
    reports that too.

    Parameters
    ----------
    source : str
        The input path, or ``"-"``.
    outputs : dict
        Option name (``"-o"``, ``"--centers"``) to path, or None where not given.

    Returns
    -------
    str or None

    Examples
    --------
    >>> check_outputs("data.csv", {"-o": "same.csv", "--centers": "same.csv"})
    '-o and --centers both name same.csv: each needs its own file'
    """
    seen: dict[tuple, str] = {}
    given = {option: path for option, path in outputs.items() if path is not None}
    source_id = _input_identity(source)
    for option, path in given.items():
        if (problem := _writable(path)) is not None:
            return problem
        identity = _identity(path)
        if identity is None:
            continue
        if identity == source_id:
            return (f"{option} {path} is the input file: writing it would overwrite the "
                    "data; choose another file")
        if identity in seen:
            return (f"{seen[identity]} and {option} both name {path}: each needs its own "
                    "file")
        seen[identity] = option
    return None


def shortest(value) -> str:
    """The shortest decimal that reads back as exactly ``value`` in its own precision.

    numpy's ``str`` of a float scalar (Steele & White / Dragon4 "unique" mode, as Python's
    ``repr``): ``0.1``, not ``%.17g``'s ``0.10000000000000001``, and no digit lost.

    Examples
    --------
    >>> import numpy as np
    >>> shortest(np.float64(0.1)), shortest(np.float64(1) / 3), shortest(np.float32(0.1))
    ('0.1', '0.3333333333333333', '0.1')
    """
    return str(value)


def _write_text(path: str | None, text: str) -> None:
    if path is None:
        sys.stdout.write(text)
        sys.stdout.flush()  # a closed pipe fails here, where the caller reports it
    else:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


def write_labels(labels, path: str | None) -> None:
    """Write one label per line to ``path`` (``.npy`` or text) or to stdout."""
    import numpy as np

    if path is not None and path.endswith(".npy"):
        np.save(path, labels)
    else:
        _write_text(path, "".join(f"{label}\n" for label in labels.tolist()))


def write_centres(centres, path: str) -> None:
    """Write a 2-D array to ``path``: ``.npy``, or CSV of :func:`shortest` decimals."""
    import numpy as np

    if path.endswith(".npy"):
        np.save(path, centres)
    else:
        _write_text(path, "".join(",".join(map(shortest, row)) + "\n" for row in centres))
