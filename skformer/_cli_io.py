"""The files of ``skformer cluster``: its input read once, its outputs checked and written.

The input is read once, front to back, in pieces of whole lines (:func:`text_chunks`), so
that a table is parsed into its float array as it arrives and its text is never held
whole. A pipe, ``-`` (standard input) or a ``/dev/fd/N`` path of a shell's process
substitution can be read only once: a reader that opens the input a second time (to sniff
a header, then to parse) loses what the first read consumed, and the rows with it. What
the input is (gzip? a ``.npy`` array?) is decided from its first bytes, which are then
replayed to the reader.

Outputs are checked, against the input and each other, before the input is read, so that
a long fit never ends by overwriting its own input or one output with another.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

__all__ = ["STDIN", "Input", "TableError", "check_outputs", "open_input", "shortest",
           "text_chunks", "write_centres", "write_labels"]

STDIN = "-"
"""The input name that reads standard input."""
GZIP_MAGIC = b"\x1f\x8b"
NPY_MAGIC = b"\x93NUMPY"
_BOM = b"\xef\xbb\xbf"
# Bytes read at a time: the text of one piece and its parsed lines are held at once, so
# a piece is small beside the float array of a large table and large beside a line.
CHUNK = 1 << 20


class TableError(ValueError):
    """The input is not a numeric table, or an output cannot be written; the message is
    one line for the user."""


class Input(NamedTuple):
    """The input, open for one reading of its (decompressed) bytes."""

    name: str
    """The input as messages name it: its path, or ``<stdin>``."""
    stream: object
    """A binary stream: ``read(n)`` gives the next bytes, decompressed; its first bytes
    are :attr:`head`'s."""
    head: bytes
    """The first bytes (up to 8), already read: a ``.npy`` array is known by them."""
    size: int | None
    """The number of bytes of a regular, uncompressed file; None for a pipe or gzip."""


class _Replay:
    """A binary stream: ``head`` (bytes already read from ``stream``), then the rest."""

    def __init__(self, head: bytes, stream) -> None:
        self._head = head
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if not self._head:
            return self._stream.read(size)
        if size is None or size < 0:
            data, self._head = self._head + self._stream.read(), b""
        else:
            data, self._head = self._head[:size], self._head[size:]
        return data


class _Gunzip:
    """The decompressed bytes of a gzip stream; corrupt data is a :class:`TableError`."""

    def __init__(self, name: str, stream) -> None:
        self._name = name
        self._file = gzip.GzipFile(fileobj=stream, mode="rb")

    def read(self, size: int = -1) -> bytes:
        try:
            return self._file.read(size)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise TableError(f"{self._name}: corrupt or truncated gzip data ({exc})") from None


def _head(stream, size: int = 8) -> bytes:
    """The first ``size`` bytes of ``stream`` (fewer at its end): a pipe may give less
    than asked for in one read."""
    head = b""
    while len(head) < size:
        more = stream.read(size - len(head))
        if not more:
            break
        head += more
    return head


@contextlib.contextmanager
def open_input(source: str) -> Iterator[Input]:
    """Open ``source`` for one reading: a file, a pipe or ``/dev/fd/N`` path, or ``-``.

    Gzip data (magic bytes ``1f 8b``, whatever the name) is decompressed as it is read.

    Parameters
    ----------
    source : str
        A path, or ``"-"`` for standard input.

    Yields
    ------
    Input
        Its name for messages, its stream of (decompressed) bytes, their first bytes, and
        the size of a regular uncompressed file.

    Raises
    ------
    TableError
        Standard input is a terminal; reading corrupt or truncated gzip data.
    OSError
        The file cannot be opened or read.

    Examples
    --------
    >>> import gzip, tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "x")  # no .gz suffix: found by its magic bytes
    ...     with open(path, "wb") as f:
    ...         _ = f.write(gzip.compress(b"1,2\\n"))
    ...     with open_input(path) as source:
    ...         source.stream.read()
    b'1,2\\n'
    """
    with contextlib.ExitStack() as stack:
        if source == STDIN:
            name = "<stdin>"
            if sys.stdin is None or sys.stdin.isatty():  # would wait for typing
                raise TableError("'-' reads standard input, which is a terminal here: pipe "
                                 "or redirect the data (skformer cluster - < data.csv)")
            raw = sys.stdin.buffer
        else:
            name = source
            raw = stack.enter_context(open(source, "rb"))
        head = _head(raw, len(GZIP_MAGIC))
        stream = _Replay(head, raw)
        size = None
        if head == GZIP_MAGIC:
            stream = _Gunzip(name, stream)
        else:
            with contextlib.suppress(AttributeError, OSError, ValueError):
                info = os.fstat(raw.fileno())
                size = info.st_size if stat.S_ISREG(info.st_mode) else None
        head = _head(stream)
        yield Input(name, _Replay(head, stream), head, size)


def _line_ends(data: bytes) -> int:
    """Lines that ``data`` ends: ``\\n``, ``\\r\\n`` and ``\\r`` each end one, as
    :func:`open` reads text."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def text_chunks(source: Input, size: int | None = None) -> Iterator[tuple[int, str]]:
    """The text of ``source`` in pieces of whole lines: ``(number of the first line, text)``.

    Bytes are read ``size`` (default :data:`CHUNK`) at a time and cut after the last
    line end (a line longer than ``size`` is kept whole); text is UTF-8, and a
    byte-order mark at the start is dropped. Line ends are ``\\n``, ``\\r\\n`` or
    ``\\r``; a ``\\r\\n`` is never cut.

    Raises
    ------
    TableError
        Bytes that are not UTF-8; the message names their line.

    Examples
    --------
    >>> import io
    >>> source = Input("x", io.BytesIO(b"1,2\\n3,4\\r\\n5,6"), b"", None)
    >>> list(text_chunks(source, size=5))
    [(1, '1,2\\n'), (2, '3,4\\r\\n'), (3, '5,6')]
    """
    size = CHUNK if size is None else size
    line, carry, first = 1, b"", True
    while True:
        block = source.stream.read(size)
        data = carry + block if carry else block
        if block:
            cut = data.rfind(b"\n") + 1
            if not cut:  # no \n: a \r ends a line unless a \n may follow it
                cut = data.rfind(b"\r", 0, len(data) - 1) + 1
            if not cut:
                carry = data
                continue
        else:
            cut = len(data)
        piece, carry = data[:cut], data[cut:]
        if first and piece:
            piece, first = piece.removeprefix(_BOM), False
        try:
            text = piece.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = line + _line_ends(piece[:exc.start])
            error = TableError(f"{source.name}, line {where}: not UTF-8 text (byte "
                               f"0x{piece[exc.start]:02x}); save the file as UTF-8")
            # The lines before it first: a problem there is the first of the input,
            # however the input was cut into pieces.
            good = max(piece.rfind(b"\n", 0, exc.start), piece.rfind(b"\r", 0, exc.start))
            if good >= 0:
                yield line, piece[:good + 1].decode("utf-8")
            raise error from None
        if text:
            yield line, text
            line += _line_ends(piece)
        if not block:
            return


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
