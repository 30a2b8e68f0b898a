"""The table of ``skformer cluster``: a CSV or ``.npy`` input parsed into a 2-D array.

Every row of the input is a row of the result, in order: nothing is dropped or shifted.
The input's bytes are read once (:func:`skformer._cli_io.read_input`: files, pipes, ``-``,
gzip) and parsed from memory. A ``.npy`` array is known by its magic bytes; text is UTF-8,
with or without a byte-order mark. A first line is a header only when the user says so
(``header=True``) or when it is unambiguous (``header=None``): it has a field that is
neither a number (as Python reads one) nor a missing-value marker such as ``NA``, and
every later line parses as numbers. Blank lines and lines that start with ``#``
(``np.savetxt``'s header) are not rows; a ``#`` ends a line's data, as for numpy.

Numbers are what :func:`numpy.loadtxt` reads (``1.5``, ``-2e3``, ``inf``): digit
separators (``1_000``, which Python's ``float`` accepts) and non-ASCII digits are not
numbers, as for numpy and pandas. Every value must be finite.

Errors are :class:`TableError` with a one-line message that names the line and column,
and says which ``--delimiter`` to pass when the lines split into numbers on another
character. numpy parses the text (fast, in C); only when it fails is the text scanned
line by line in Python, to say where and why.
"""

from __future__ import annotations

import csv
import io
import warnings
from typing import NamedTuple

from skformer._cli_io import TableError, read_input

__all__ = ["TableError", "read_table"]

# Fields a spreadsheet or pandas writes for a missing value: never a header's names.
_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?", "-", "#n/a", "nil"})
# Delimiters suggested when the lines split into numbers on one of them: as shown.
_SEPARATORS = {";": ";", "\t": "\\t", "|": "|", ",": ",", " ": " "}
_NPY_MAGIC = b"\x93NUMPY"
_SNIFFED_LINES = 50  # lines that decide which delimiter the file looks separated by


class _Problem(NamedTuple):
    """Where (line, column; None where the whole file) and why the text is no table."""

    line: int | None
    column: int | None
    message: str
    kind: str
    """``"text"`` (a field that is no number, no advice given), ``"number"`` (one only
    Python reads, such as ``1_000``), ``"missing"``, ``"delimiter"`` (another delimiter
    advised), ``"width"`` or ``"unknown"`` (nothing found)."""


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


def _python_number(field: str) -> bool:
    """Python's ``float`` reads ``field`` (more than numpy: ``1_000``, ``١``)."""
    try:
        float(field)
    except ValueError:
        return False
    return True


def _is_number(field: str) -> bool:
    """:func:`numpy.loadtxt` reads ``field`` as a number: ASCII, no ``_`` separators."""
    return field.isascii() and "_" not in field and _python_number(field)


def _lines(text: str) -> list[tuple[int, str]]:
    """``(line number, text)`` of each line that holds data, without its comment (from
    ``#`` on, as :func:`numpy.loadtxt` drops it); blank and comment lines are left out.

    Line ends are ``\\n``, ``\\r\\n`` or ``\\r``, as :func:`open` reads text.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [(number, stripped) for number, line in enumerate(lines, start=1)
            if (stripped := line.split("#", 1)[0].strip())]


def _sniff(lines: list[tuple[int, str]], delimiter: str) -> str:
    """`` (... pass --delimiter X)`` when the first lines split on another common
    delimiter into the same number (> 1) of numbers (after a header line), else ``""``."""
    chosen = _delimiter(delimiter)
    head = [text for _, text in lines[:_SNIFFED_LINES]]
    for sep, shown in _SEPARATORS.items():
        if sep == chosen or (sep.isspace() and chosen is None):
            continue
        rows = [_splitter(sep)(text) for text in head]
        body = rows[1:] if rows and not all(map(_is_number, rows[0])) else rows
        widths = {len(row) for row in rows}
        if body and len(widths) == 1 and widths.pop() > 1 and all(
                _is_number(field) for row in body for field in row):
            return _advice(sep, shown, delimiter)
    return ""


def _advice(sep: str, shown: str, delimiter: str) -> str:
    name = {"\\t": "tabs", " ": "spaces"}.get(shown, f"'{shown}'")
    return f" (the file looks separated by {name}, not {delimiter!r}: pass --delimiter '{shown}')"


def _hint(field: str, delimiter: str) -> str:
    """`` (... pass --delimiter X)`` when ``field`` looks like several numbers."""
    chosen = _delimiter(delimiter)
    for sep, shown in _SEPARATORS.items():
        if sep != chosen and not (sep.isspace() and chosen is None) and sep in field:
            parts = field.split() if sep == " " else field.split(sep)
            if len(parts) > 1 and all(_is_number(p.strip()) for p in parts if p.strip()):
                return _advice(sep, shown, delimiter)
    return ""


def _not_a_number(field: str) -> str:
    """Why ``field``, which is no missing-value marker, is not a number."""
    message = f"cannot convert {field!r} to a number"
    if _python_number(field):  # 1_000, full-width or other non-ASCII digits
        message += (" (write plain ASCII digits without separators, as numpy.loadtxt and "
                    "pandas read numbers)")
    return message


def _first_problem(name: str, rows: list[tuple[int, str]], delimiter: str,
                   sniffed: str) -> _Problem:
    """The first of ``rows`` that is not a row of numbers as wide as the first row."""
    split = _splitter(delimiter)
    width = width_line = None
    for number, text in rows:
        fields = split(text)
        for column, field in enumerate(fields, start=1):
            if _is_number(field):
                continue
            where = f"{name}, line {number}, column {column}: "
            if field.lower() in _MISSING:
                return _Problem(number, column, where + _MISSING_VALUE.format(field=field),
                                "missing")
            advice = sniffed or _hint(field, delimiter)
            kind = "delimiter" if advice else "number" if _python_number(field) else "text"
            return _Problem(number, column, where + _not_a_number(field) + advice, kind)
        if width is None:
            width, width_line = len(fields), number
        elif len(fields) != width:
            return _Problem(number, None, f"{name}, line {number} has {len(fields)} values "
                            f"where line {width_line} has {width}{sniffed}", "width")
    return _Problem(None, None, f"{name} is not a table of numbers", "unknown")


def _named(fields: list[str]) -> set[int]:
    """The columns (from 1) whose field can only be a name: no number (as Python reads
    one, ``1_000`` included) and no missing-value marker."""
    return {column for column, field in enumerate(fields, start=1)
            if not _python_number(field) and field.lower() not in _MISSING}


_MISSING_VALUE = ("{field!r} is a missing value; skformer cluster needs a number in every "
                  "field (impute or drop such rows first)")


def _loadtxt(rows: list[tuple[int, str]], delimiter: str):
    """numpy's reader of ``rows`` (the lines :func:`_lines` keeps, so that the i-th row of
    the array is the i-th of ``rows``): ``None`` where it fails (the caller then explains
    why)."""
    import numpy as np

    text = "\n".join(line for _, line in rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "input contained no data": checked by the caller
        try:
            return np.loadtxt(io.StringIO(text), delimiter=_delimiter(delimiter), ndmin=2,
                              quotechar='"', dtype=np.float64)
        except ValueError:
            return None


def _decode(name: str, data: bytes) -> str:
    """UTF-8 text, without a byte-order mark (a spreadsheet's export has one)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TableError(f"{name}, line {line}: not UTF-8 text (byte "
                         f"0x{data[exc.start]:02x}); save the file as UTF-8") from None


def _read_text(name: str, text: str, delimiter: str, header: bool | None):
    """The array of ``text`` and the ``(line number, text)`` of each of its rows."""
    lines = _lines(text)
    if not lines:
        raise TableError(f"{name} is empty: no rows to cluster")
    split = _splitter(delimiter)
    sniffed = _sniff(lines, delimiter)
    number = lines[0][0]
    named = _named(split(lines[0][1]))
    if header is None and named and len(lines) > 1:  # a header only where unambiguous
        X = _loadtxt(lines[1:], delimiter)
        if X is not None:
            return X, lines[1:]
        # The second line names the same columns: a column of text, the first line is
        # data. Otherwise the first line is a header and a later line is wrong.
        if _named(split(lines[1][1])) != named:
            raise TableError(_first_problem(name, lines[1:], delimiter, sniffed).message)
        header = False
    elif header is None:
        header = bool(named)
    if header and len(lines) == 1:
        problem = _first_problem(name, lines, delimiter, sniffed)
        if problem.kind == "delimiter":  # one line of numbers in another separator
            raise TableError(problem.message)
        raise TableError(f"{name} has a header line but no data rows")
    rows = lines[1:] if header else lines
    X = _loadtxt(rows, delimiter)
    if X is None:
        problem = _first_problem(name, rows, delimiter, sniffed)
        # Only the first line can be a header, and only where the later lines are numbers.
        if (not header and problem.kind == "text" and problem.line == number and len(rows) > 1
                and _first_problem(name, rows[1:], delimiter, "").kind == "unknown"):
            problem = problem._replace(message=problem.message
                                       + " (if this line is a header, pass --header)")
        raise TableError(problem.message)
    return X, rows


def _read_npy(name: str, data: bytes):
    import numpy as np

    try:
        X = np.load(io.BytesIO(data), allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise TableError(f"{name}: {exc}") from None
        raise TableError(f"{name} holds Python objects (dtype object), not numbers; save a "
                         "numeric array, e.g. np.save(path, X.astype(float))") from None
    if not isinstance(X, np.ndarray):
        raise TableError(f"{name} is not one array")
    if X.dtype.kind not in "biuf":
        raise TableError(f"{name} holds {X.dtype} values, not numbers; "
                         "save a numeric array, e.g. np.save(path, X.astype(float))")
    if X.ndim > 2 or X.ndim == 0:
        raise TableError(f"{name} has shape {X.shape}; expected a 2-D table (rows x features)")
    return X


def _check_finite(name: str, X, rows, delimiter: str) -> None:
    """A :class:`TableError` naming the first value that is not finite: its line and
    column in a text file (``rows``), its row and column in an array (``rows`` None)."""
    import numpy as np

    if X.dtype.kind != "f" or np.isfinite(X).all():
        return
    row, column = (int(i) for i in np.argwhere(~np.isfinite(X))[0])
    value = X[row, column]
    if rows is not None and len(rows) == X.shape[0]:
        number, text = rows[row]
        field = _splitter(delimiter)(text)[column]
        where = f"{name}, line {number}, column {column + 1}: "
    else:
        field = str(value)
        where = f"{name}, row {row + 1}, column {column + 1}: "
    if np.isnan(value):
        raise TableError(where + _MISSING_VALUE.format(field=field))
    raise TableError(where + f"{field!r} is not a finite number; skformer cluster needs "
                     "finite values (drop or clip such rows first)")


def read_table(source: str, delimiter: str = ",", header: bool | None = None):
    """A 2-D array from a ``.npy`` array or a delimited text, one row per data line.

    Parameters
    ----------
    source : str
        A path (a pipe or ``/dev/fd/N`` included) or ``"-"`` for standard input; read
        once. Gzip data is decompressed. A ``.npy`` array (known by its magic bytes; 1-D
        is one column) or UTF-8 delimited text.
    delimiter : str, default=","
        Field separator of a text file; ``" "`` splits on any run of whitespace, ``"\\t"``
        is a tab.
    header : bool or None, default=None
        Whether the first non-blank line is a header; ``None`` takes it as one only when
        unambiguous (see the module's docstring).

    Returns
    -------
    X : ndarray of shape (n_rows, n_features)
        Finite numbers.

    Raises
    ------
    TableError
        The input is empty, not a numeric table, or holds a value that is not finite;
        the message names the line and column.
    OSError
        The file cannot be opened.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "x.csv")
    ...     with open(path, "w") as f:
    ...         _ = f.write("a,b\\n1,2\\n3,4\\n")
    ...     read_table(path)
    array([[1., 2.],
           [3., 4.]])
    """
    name, data = read_input(source)
    if data[:6] == _NPY_MAGIC:
        X, rows = _read_npy(name, data), None
    elif name.endswith(".npy"):
        raise TableError(f"{name} is not a NumPy .npy file (rename a text table to .csv "
                         "or .txt)")
    else:
        X, rows = _read_text(name, _decode(name, data), delimiter, header)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    if X.shape[0] == 0:
        raise TableError(f"{name} is empty: no rows to cluster")
    if rows is not None and len(rows) != X.shape[0]:  # one row per line, by construction:
        # checked all the same, as one label per data line is the command's promise
        raise TableError(f"{name}: read {X.shape[0]} rows from {len(rows)} data lines")
    _check_finite(name, X, rows, delimiter)
    return X
