"""The tables of ``skformer cluster``: read a CSV or ``.npy`` file, check an output path.

Every row of the input is a row of the result, in order: nothing is dropped or shifted.
A first line is a header only when the user says so (``header=True``) or when it is
unambiguous (``header=None``): it has a field that is neither a number nor a missing-value
marker such as ``NA``, and every later line parses as numbers. Blank lines and lines that
start with ``#`` (``np.savetxt``'s header) are not rows. Errors are :class:`TableError`
with a one-line message that names the file's line and column, and says which
``--delimiter`` to pass when the file looks separated by another character.

numpy reads the file (fast, in C); only when it fails is the file scanned line by line in
Python, to say where and why.
"""

from __future__ import annotations

import csv
import os
import warnings
from pathlib import Path

__all__ = ["TableError", "check_writable", "read_table"]

# Fields a spreadsheet or pandas writes for a missing value: never a header's names.
_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?", "-", "#n/a", "nil"})
# Delimiters suggested when a field holds one of these and the chosen one is another.
_SEPARATORS = {";": ";", "\t": "\\t", "|": "|", ",": ",", " ": " "}


class TableError(ValueError):
    """The input file is not a numeric table; the message is one line for the user."""


def _delimiter(delimiter: str) -> str | None:
    """The delimiter as numpy takes it: ``None`` (any run of whitespace) for ``" "`` (or
    any other whitespace but a tab), a tab for the two characters ``\\t``."""
    if delimiter == "\\t":
        return "\t"
    whitespace = delimiter == "" or (delimiter.isspace() and delimiter != "\t")
    return None if whitespace else delimiter


def _splitter(delimiter: str):
    """A function that splits one line into stripped fields, as :func:`_loadtxt` does.

    One-character delimiters honour double quotes, as CSV does.
    """
    delimiter = _delimiter(delimiter)
    if delimiter is None:
        return str.split
    if len(delimiter) == 1:
        return lambda line: [f.strip() for f in next(csv.reader([line], delimiter=delimiter))]
    return lambda line: [f.strip() for f in line.split(delimiter)]


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _rows(path: Path):
    """``(line number, text)`` of each line that can hold data (not blank, not ``#``)."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            text = line.strip()
            if text and not text.startswith("#"):
                yield number, text


def _hint(field: str, delimiter: str) -> str:
    """`` (... pass --delimiter X)`` when ``field`` looks like several fields."""
    chosen = _delimiter(delimiter)
    for sep, shown in _SEPARATORS.items():
        if sep != chosen and not (sep.isspace() and chosen is None) and sep in field:
            parts = field.split() if sep == " " else field.split(sep)
            if len(parts) > 1 and all(_is_number(p.strip()) for p in parts if p.strip()):
                name = {"\\t": "tabs", " ": "spaces"}.get(shown, f"'{shown}'")
                return (f" (the file looks separated by {name}, not {delimiter!r}: "
                        f"pass --delimiter '{shown}')")
    return ""


def _first_error(path: Path, delimiter: str, header: bool) -> str:
    """The first line of ``path`` that is not a row of numbers, as a message."""
    split = _splitter(delimiter)
    lines = _rows(path)
    if header:
        next(lines, None)
    width = width_line = None
    for index, (number, text) in enumerate(lines):
        fields = split(text)
        for column, field in enumerate(fields, start=1):
            if _is_number(field):
                continue
            where = f"{path}, line {number}, column {column}: "
            if field.lower() in _MISSING:
                return (where + f"{field!r} is a missing value; skformer cluster needs a "
                        "number in every field (impute or drop such rows first)")
            advice = _hint(field, delimiter)
            if not advice and index == 0 and not header:
                advice = " (if this line is a header, pass --header)"
            return where + f"cannot convert {field!r} to a number{advice}"
        if width is None:
            width, width_line = len(fields), number
        elif len(fields) != width:
            return (f"{path}, line {number} has {len(fields)} values where line "
                    f"{width_line} has {width}")
    return f"{path} is not a table of numbers"


def _loadtxt(path: Path, delimiter: str, skip: int):
    """numpy's reader, skipping the first ``skip`` lines: ``None`` where it fails (the
    caller then explains why)."""
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "input contained no data": checked by the caller
        try:
            return np.loadtxt(path, delimiter=_delimiter(delimiter), skiprows=skip, ndmin=2,
                              quotechar='"', dtype=np.float64)
        except ValueError:
            return None


def _read_text(path: Path, delimiter: str, header: bool | None):
    lines = _rows(path)
    first = next(lines, None)
    if first is None:
        raise TableError(f"{path} is empty: no rows to cluster")
    number, text = first
    more = next(lines, None) is not None
    if header is None:  # a header only where unambiguous
        fields = _splitter(delimiter)(text)
        header = any(not _is_number(f) and f.lower() not in _MISSING for f in fields)
        if header and more:
            X = _loadtxt(path, delimiter, number)
            if X is not None:
                return X
            header = False  # later lines fail too: the first line is data
    if header and not more:
        problem = _first_error(path, delimiter, False)
        if "--delimiter" in problem:  # one line of numbers in another separator
            raise TableError(problem)
        raise TableError(f"{path} has a header line but no data rows")
    X = _loadtxt(path, delimiter, number if header else 0)
    if X is None:
        raise TableError(_first_error(path, delimiter, header))
    return X


def _read_npy(path: Path):
    import numpy as np

    with open(path, "rb") as handle:
        if handle.read(6) != b"\x93NUMPY":
            raise TableError(f"{path} is not a NumPy .npy file (rename a text table to .csv "
                             "or .txt)")
    try:
        X = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise TableError(f"{path}: {exc}") from None
        raise TableError(f"{path} holds Python objects (dtype object), not numbers; save a "
                         "numeric array, e.g. np.save(path, X.astype(float))") from None
    if not isinstance(X, np.ndarray):
        raise TableError(f"{path} is not one array")
    if X.dtype.kind not in "biuf":
        raise TableError(f"{path} holds {X.dtype} values, not numbers; "
                         "save a numeric array, e.g. np.save(path, X.astype(float))")
    if X.ndim > 2 or X.ndim == 0:
        raise TableError(f"{path} has shape {X.shape}; expected a 2-D table (rows x features)")
    return X


def read_table(path: str, delimiter: str = ",", header: bool | None = None):
    """A 2-D array from a ``.npy`` file or a delimited text file, one row per data line.

    Parameters
    ----------
    path : str
        ``.npy`` (a numeric array, 1-D read as one column) or delimited text.
    delimiter : str, default=","
        Field separator of a text file; ``" "`` splits on any run of whitespace, ``"\\t"``
        is a tab.
    header : bool or None, default=None
        Whether the first non-blank line is a header; ``None`` takes it as one only when
        unambiguous (see the module's docstring).

    Returns
    -------
    X : ndarray of shape (n_rows, n_features)

    Raises
    ------
    TableError
        The file is empty or not a numeric table; the message names the line.
    OSError
        The file cannot be opened.
    """
    path = Path(path)
    X = _read_npy(path) if path.suffix == ".npy" else _read_text(path, delimiter, header)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    if X.shape[0] == 0:
        raise TableError(f"{path} is empty: no rows to cluster")
    return X


def check_writable(path: str | None) -> str | None:
    """Why ``path`` cannot be written (a message), or None where it can (or is None).

    Checked before a fit, so that a long fit does not end in an error; writing can still
    fail later (a full disk), and the caller reports that too.
    """
    if path is None:
        return None
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
