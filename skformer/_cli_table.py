"""The table of ``skformer cluster``: a CSV or ``.npy`` input parsed into a 2-D array.

Every row of the input is a row of the result, in order: nothing is dropped or shifted.
The input is read once (:func:`skformer._cli_io.open_input`: files, pipes, ``-``, gzip)
and text is parsed as it arrives, one piece of whole lines at a time, into a float array
that grows in place: the text is never held whole, and no list of its fields is made.
A ``.npy`` array is known by its magic bytes; text is UTF-8, with or without a byte-order
mark. A first line is a header only when the user says so (``header=True``) or when it is
unambiguous (``header=None``): it has a field that is neither a number (as Python reads
one) nor a missing-value marker such as ``NA``, and the later lines parse as numbers.
Blank lines and lines that start with ``#`` (``np.savetxt``'s header) are not rows; a
``#`` ends a line's data, as for numpy. Columns can be left out (``skip_columns``, counted
from 1): an index or ID column, such as the first column of pandas' ``df.to_csv()``.

Numbers are what :func:`numpy.loadtxt` reads (``1.5``, ``-2e3``, ``inf``): digit
separators (``1_000``, which Python's ``float`` accepts) and non-ASCII digits are not
numbers, as for numpy and pandas. Every value must be finite.

Errors are :class:`TableError` with a one-line message that names the line and column,
and says which ``--delimiter`` to pass when the lines split into numbers on another
character, or which ``--skip-columns`` when a column holds text. numpy parses the text
(fast, in C); only when it fails is the piece scanned line by line in Python, to say
where and why.
"""

from __future__ import annotations

import csv
import math
import warnings
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from skformer._cli_io import NPY_MAGIC, TableError, open_input, text_chunks

__all__ = ["TableError", "TableWarning", "check_delimiter", "read_table"]

# Fields a spreadsheet or pandas writes for a missing value: never a header's names.
_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?", "-", "#n/a", "nil"})
# Delimiters suggested when the lines split into numbers on one of them: as shown.
_SEPARATORS = {";": ";", "\t": "\\t", "|": "|", ",": ",", " ": " "}
_SNIFFED_LINES = 50  # lines that decide which delimiter the file looks separated by
# Characters that cannot separate fields: the quote and comment characters, line ends,
# and the characters of numbers (a delimiter inside a number would split it).
_NOT_DELIMITERS = {'"': "the quote character of CSV fields",
                   "#": "the start of a comment",
                   "\n": "a line end", "\r": "a line end",
                   **dict.fromkeys("0123456789.+-eE", "a character of numbers")}
# Growth of the float array when its size is not known in advance (a pipe, gzip).
_GROWTH = 1.5
# Rows made room for beyond those a file's size promises (pages never written cost no
# memory), so that a file of somewhat longer lines than its first ones needs no growth.
_ESTIMATE_MARGIN = 1.1


class TableWarning(UserWarning):
    """Something about a table that was read without error but may not be meant."""


class _Problem(NamedTuple):
    """Where (line, column; None where the whole file) and why the text is no table."""

    line: int | None
    column: int | None
    message: str
    kind: str
    """``"text"`` (a field that is no number, no advice given), ``"number"`` (one only
    Python reads, such as ``1_000``), ``"missing"``, ``"finite"`` (``inf``, ``1e999``),
    ``"delimiter"`` (another delimiter advised), ``"width"`` or ``"unknown"`` (nothing
    found)."""


def check_delimiter(delimiter: str) -> None:
    """A :class:`TableError` where ``delimiter`` cannot separate fields.

    A delimiter is one character (``"\\t"``, the two characters, is a tab; ``""`` or
    whitespace splits on any run of spaces or tabs), and not one that numbers, quotes,
    comments or line ends use.

    Examples
    --------
    >>> check_delimiter(";")
    >>> check_delimiter(",,")
    Traceback (most recent call last):
    ...
    skformer._cli_io.TableError: --delimiter ',,': a delimiter is one character ...
    """
    if not isinstance(delimiter, str):
        raise TableError(f"--delimiter must be a string, got {delimiter!r}")
    whitespace = delimiter.isspace() and not {"\n", "\r"} & set(delimiter)
    if delimiter in ("\\t", "") or whitespace:
        return
    if len(delimiter) != 1:
        raise TableError(f"--delimiter {delimiter!r}: a delimiter is one character (or "
                         f"'\\t' for a tab, ' ' for any run of spaces), got "
                         f"{len(delimiter)} characters")
    if delimiter in _NOT_DELIMITERS:
        raise TableError(f"--delimiter {delimiter!r} cannot separate fields: it is "
                         f"{_NOT_DELIMITERS[delimiter]}")


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


def _is_text(field: str) -> bool:
    """``field`` can only be a name: no number (as Python reads one, ``1_000``
    included) and no missing-value marker."""
    return not _python_number(field) and field.lower() not in _MISSING


def _lines(text: str, first: int = 1) -> list[tuple[int, str]]:
    """``(line number, text)`` of each line that holds data, without its comment (from
    ``#`` on, as :func:`numpy.loadtxt` drops it); blank and comment lines are left out.

    Line ends are ``\\n``, ``\\r\\n`` or ``\\r``, as :func:`open` reads text; ``first``
    is the number of the text's first line.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [(number, stripped) for number, line in enumerate(lines, start=first)
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


def _columns(columns) -> str:
    return ",".join(str(c) for c in sorted(columns))


def _text_column(rows, i: int, column: int, split, skip: frozenset) -> str:
    """`` (... pass --skip-columns C)`` when ``column`` holds text on a row next to the
    ``i``-th too: a column of names or IDs, not one mistyped value."""
    neighbours = [rows[j][1] for j in (i + 1, i - 1) if 0 <= j < len(rows)]
    for text in neighbours[:1]:
        fields = split(text)
        if column <= len(fields) and _is_text(fields[column - 1]):
            return (f" (column {column} holds text, such as names or IDs: leave it out "
                    f"with --skip-columns {_columns(skip | {column})})")
    return ""


def _first_problem(name: str, rows: list[tuple[int, str]], delimiter: str, sniffed: str,
                   skip: frozenset = frozenset(), width: tuple[int, int] | None = None
                   ) -> _Problem:
    """The first of ``rows`` that is not a row of numbers (outside the ``skip`` columns)
    as wide as ``width`` (``(values, line)``; default: the first row)."""
    split = _splitter(delimiter)
    width, width_line = width if width is not None else (None, None)
    for i, (number, text) in enumerate(rows):
        fields = split(text)
        for column, field in enumerate(fields, start=1):
            if column in skip:
                continue
            if _is_number(field):
                if not math.isfinite(float(field)):  # the first problem, whatever it is
                    return _Problem(number, column, f"{name}, line {number}, column "
                                    f"{column}: " + _NOT_FINITE.format(field=field), "finite")
                continue
            where = f"{name}, line {number}, column {column}: "
            if field.lower() in _MISSING:
                return _Problem(number, column, where + _MISSING_VALUE.format(field=field),
                                "missing")
            advice = sniffed or _hint(field, delimiter)
            kind = "delimiter" if advice else "number" if _python_number(field) else "text"
            if kind == "text":
                advice = _text_column(rows, i, column, split, skip)
            return _Problem(number, column, where + _not_a_number(field) + advice, kind)
        if width is None:
            width, width_line = len(fields), number
        elif len(fields) != width:
            return _Problem(number, None, f"{name}, line {number} has {len(fields)} values "
                            f"where line {width_line} has {width}{sniffed}", "width")
    return _Problem(None, None, f"{name} is not a table of numbers", "unknown")


def _named(fields: list[str], skip: frozenset = frozenset()) -> set[int]:
    """The columns (from 1, outside ``skip``) whose field can only be a name."""
    return {column for column, field in enumerate(fields, start=1)
            if column not in skip and _is_text(field)}


_MISSING_VALUE = ("{field!r} is a missing value; skformer cluster needs a number in every "
                  "field (impute or drop such rows first)")
_NOT_FINITE = ("{field!r} is not a finite number; skformer cluster needs finite values "
               "(drop or clip such rows first)")


def _loadtxt(rows: list[tuple[int, str]], delimiter: str, usecols=None):
    """numpy's reader of ``rows`` (the lines :func:`_lines` keeps, so that the i-th row of
    the array is the i-th of ``rows``): ``None`` where it fails (the caller then explains
    why)."""
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "input contained no data": checked by the caller
        try:
            return np.loadtxt([line for _, line in rows], delimiter=_delimiter(delimiter),
                              ndmin=2, quotechar='"', dtype=np.float64, usecols=usecols,
                              comments=None)
        except ValueError:
            return None


def _widths_are(rows: list[tuple[int, str]], delimiter: str, width: int) -> bool:
    """Every row has ``width`` fields (numpy checks this only for the columns it reads)."""
    sep = _delimiter(delimiter)
    if sep is None:
        return all(len(text.split()) == width for _, text in rows)
    if any('"' in text for _, text in rows):  # a quoted field may hold the delimiter
        split = _splitter(delimiter)
        return all(len(split(text)) == width for _, text in rows)
    return all(text.count(sep) == width - 1 for _, text in rows)


class _Growing:
    """A float array of ``width`` columns that rows are appended to, grown in place
    (``ndarray.resize``: the allocator extends large blocks without a copy)."""

    def __init__(self, width: int, capacity: int) -> None:
        import numpy as np

        self.array = np.empty((max(int(capacity), 1), width))
        self.rows = 0

    def add(self, block) -> None:
        end = self.rows + len(block)
        if end > len(self.array):
            capacity = max(end, int(len(self.array) * _GROWTH))
            self.array.resize((capacity, self.array.shape[1]), refcheck=False)
        self.array[self.rows:end] = block
        self.rows = end

    def result(self):
        self.array.resize((self.rows, self.array.shape[1]), refcheck=False)
        return self.array


class _Text:
    """The state of a text table being parsed: its delimiter, the columns read, the
    width of its first data row, and the array it fills."""

    def __init__(self, name: str, delimiter: str, sniffed: str, skip: frozenset) -> None:
        self.name, self.delimiter, self.sniffed, self.skip = name, delimiter, sniffed, skip
        self.split = _splitter(delimiter)
        self.width: tuple[int, int] | None = None  # (values, line) of the first data row
        self.kept: list[int] = []  # the columns read, from 0
        self.out: _Growing | None = None

    def start(self, rows: list[tuple[int, str]], capacity: int) -> None:
        """Take the width of the first data row and make room for about ``capacity``."""
        number, text = rows[0]
        values = len(self.split(text))
        far = [c for c in self.skip if c > values]
        if far:
            raise TableError(f"{self.name}: --skip-columns {_columns(far)}: line {number} "
                             f"has {values} columns")
        self.width = (values, number)
        self.kept = [c for c in range(values) if c + 1 not in self.skip]
        if not self.kept:
            raise TableError(f"{self.name}: --skip-columns {_columns(self.skip)} leaves no "
                             "column to cluster")
        self.out = _Growing(len(self.kept), capacity)

    def parse(self, rows: list[tuple[int, str]]):
        """The array of ``rows``, or None where they are not rows of the table."""
        X = _loadtxt(rows, self.delimiter, self.kept if self.skip else None)
        if X is None or X.shape != (len(rows), len(self.kept)):
            return None
        if self.skip and not _widths_are(rows, self.delimiter, self.width[0]):
            return None
        return X

    def problem(self, rows: list[tuple[int, str]]) -> _Problem:
        return _first_problem(self.name, rows, self.delimiter, self.sniffed, self.skip,
                              self.width)

    def add(self, rows: list[tuple[int, str]], X=None) -> None:
        """Append ``rows`` (parsed already as ``X``, or now); TableError where they are
        not rows of numbers of the table's width, or hold a value that is not finite."""
        X = self.parse(rows) if X is None else X
        if X is None:
            raise TableError(self.problem(rows).message)
        self.check_finite(X, rows)
        self.out.add(X)

    def check_finite(self, X, rows) -> None:
        import numpy as np

        if np.isfinite(X).all():
            return
        row, index = (int(i) for i in np.argwhere(~np.isfinite(X))[0])
        number, text = rows[row]
        column = self.kept[index]  # in the file, from 0
        _not_finite(X[row, index], self.split(text)[column],
                    f"{self.name}, line {number}, column {column + 1}: ")


def _not_finite(value, field: str, where: str):
    """The :class:`TableError` of a value that is not finite."""
    import numpy as np

    if np.isnan(value):
        raise TableError(where + _MISSING_VALUE.format(field=field))
    raise TableError(where + _NOT_FINITE.format(field=field))


def _pieces(source) -> Iterator[tuple[list[tuple[int, str]], int]]:
    """The data lines of ``source``'s text, a piece at a time, with the piece's length."""
    for first, text in text_chunks(source):
        rows = _lines(text, first)
        if rows:
            yield rows, len(text)


def _first_lines(pieces):
    """The first :data:`_SNIFFED_LINES` data lines of ``pieces`` (fewer where there are
    no more), the length of their text, and the error of the bytes after them (None if
    none), to be raised once their own problems are known.

    The header and the delimiter are judged on these lines, the same whatever the size
    of a piece.
    """
    lines, length = next(pieces, ([], 0))
    while 0 < len(lines) < _SNIFFED_LINES:
        try:
            more = next(pieces, None)
        except TableError as exc:
            return lines, length, exc
        if more is None:
            break
        lines, length = lines + more[0], length + more[1]
    return lines, length, None


def _read_text(source, delimiter: str, header: bool | None, skip: frozenset):
    """The array of a text table, parsed piece by piece."""
    name = source.name
    pieces = _pieces(source)
    lines, length, late = _first_lines(pieces)
    if not lines:
        raise TableError(f"{name} is empty: no rows to cluster")
    # The float array's rows: from the file's size where it is known (estimated from the
    # first piece's bytes per row), else grown as rows arrive.
    scale = _ESTIMATE_MARGIN * source.size / max(length, 1) if source.size else _GROWTH
    table = _Text(name, delimiter, _sniff(lines, delimiter), skip)
    named = _named(table.split(lines[0][1]), skip)
    X = None
    if header is None and named and len(lines) > 1:  # a header only where unambiguous
        table.start(lines[1:], len(lines) * scale)
        X = table.parse(lines[1:])
        if X is not None:
            header = True
        # The second line names the same columns: a column of text, the first line is
        # data. Otherwise the first line is a header and a later line is wrong.
        elif _named(table.split(lines[1][1]), skip) != named:
            raise TableError(table.problem(lines[1:]).message)
        else:
            raise TableError(_first_problem(name, lines, delimiter, table.sniffed,
                                            skip).message)
    elif header is None:
        header = bool(named)
    rows = lines[1:] if header else lines
    if not rows and late is not None:
        raise late
    if not rows:
        problem = _first_problem(name, lines, delimiter, table.sniffed, skip)
        if problem.kind == "delimiter":  # one line of numbers in another separator
            raise TableError(problem.message)
        raise TableError(f"{name} has a header line but no data rows")
    if table.out is None:
        table.start(rows, len(lines) * scale)
        X = table.parse(rows)
    if X is None:
        problem = table.problem(rows)
        # Only the first line can be a header, and only where the next line is numbers.
        if (not header and problem.kind == "text" and problem.line == lines[0][0]
                and len(rows) > 1 and _first_problem(name, rows[1:2], delimiter, "",
                                                     skip).kind == "unknown"):
            problem = problem._replace(message=problem.message
                                       + " (if this line is a header, pass --header)")
        raise TableError(problem.message)
    table.add(rows, X)
    if late is not None:
        raise late
    for rows, _ in pieces:
        table.add(rows)
    X = table.out.result()
    if header and not skip and table.split(lines[0][1])[0] == "":
        _pandas_index(name, X)
    return X


def _pandas_index(name: str, X) -> None:
    """Warn where the first column looks like pandas' index (no name, 0, 1, 2, ...)."""
    import numpy as np

    if len(X) > 1 and X.shape[1] > 1 and np.array_equal(X[:, 0], np.arange(len(X))):
        warnings.warn(f"{name}: column 1 has no name and holds 0, 1, 2, ...: pandas' index "
                      "of df.to_csv()? It is clustered as a feature; leave it out with "
                      "--skip-columns 1 (or write the file with df.to_csv(index=False))",
                      TableWarning, stacklevel=3)


def _read_npy(source):
    import numpy as np

    name = source.name
    try:
        X = np.lib.format.read_array(source.stream, allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise TableError(f"{name}: {exc}") from None
        raise TableError(f"{name} holds Python objects (dtype object), not numbers; save a "
                         "numeric array, e.g. np.save(path, X.astype(float))") from None
    if X.dtype.kind not in "biuf":
        raise TableError(f"{name} holds {X.dtype} values, not numbers; "
                         "save a numeric array, e.g. np.save(path, X.astype(float))")
    if X.ndim > 2 or X.ndim == 0:
        raise TableError(f"{name} has shape {X.shape}; expected a 2-D table (rows x features)")
    return X


def _skip_npy(name: str, X, skip: frozenset):
    """``X`` without the ``skip`` columns (from 1)."""
    import numpy as np

    far = [c for c in skip if c > X.shape[1]]
    if far:
        raise TableError(f"{name}: --skip-columns {_columns(far)}: the array has "
                         f"{X.shape[1]} columns")
    if len(skip) >= X.shape[1]:
        raise TableError(f"{name}: --skip-columns {_columns(skip)} leaves no column to "
                         "cluster")
    return np.delete(X, [c - 1 for c in skip], axis=1) if skip else X


def _check_finite_npy(name: str, X) -> None:
    """A :class:`TableError` naming the row and column of the first value that is not
    finite."""
    import numpy as np

    if X.dtype.kind != "f" or np.isfinite(X).all():
        return
    row, column = (int(i) for i in np.argwhere(~np.isfinite(X))[0])
    value = X[row, column]
    _not_finite(value, str(value), f"{name}, row {row + 1}, column {column + 1}: ")


def _skip_set(skip_columns: Sequence[int]) -> frozenset:
    skip = frozenset(skip_columns)
    bad = [c for c in skip if isinstance(c, bool) or not isinstance(c, int) or c < 1]
    if bad:
        raise TableError(f"--skip-columns counts columns from 1, got {bad[0]!r}")
    return skip


def read_table(source: str, delimiter: str = ",", header: bool | None = None,
               skip_columns: Sequence[int] = ()):
    """A 2-D array from a ``.npy`` array or a delimited text, one row per data line.

    Parameters
    ----------
    source : str
        A path (a pipe or ``/dev/fd/N`` included) or ``"-"`` for standard input; read
        once. Gzip data is decompressed. A ``.npy`` array (known by its magic bytes; 1-D
        is one column) or UTF-8 delimited text.
    delimiter : str, default=","
        Field separator of a text file, one character; ``" "`` splits on any run of
        whitespace, ``"\\t"`` is a tab (:func:`check_delimiter`).
    header : bool or None, default=None
        Whether the first non-blank line is a header; ``None`` takes it as one only when
        unambiguous (see the module's docstring).
    skip_columns : sequence of int, default=()
        Columns left out, counted from 1 as the error messages count them (pandas'
        ``index_col=0`` is column 1). Their fields may be text.

    Returns
    -------
    X : ndarray of shape (n_rows, n_features)
        Finite numbers.

    Raises
    ------
    TableError
        The delimiter cannot separate fields; the input is empty, not a numeric table,
        or holds a value that is not finite (the message names the line and column).
    OSError
        The file cannot be opened.

    Warns
    -----
    TableWarning
        The first column has no name in the header and holds 0, 1, 2, ...: pandas'
        index, clustered as a feature unless left out.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "x.csv")
    ...     with open(path, "w") as f:
    ...         _ = f.write("id,a,b\\nx,1,2\\ny,3,4\\n")
    ...     read_table(path, skip_columns=[1])
    array([[1., 2.],
           [3., 4.]])
    """
    check_delimiter(delimiter)
    skip = _skip_set(skip_columns)
    with open_input(source) as stream:
        name = stream.name
        if stream.head[:len(NPY_MAGIC)] == NPY_MAGIC:
            X = _read_npy(stream)
            X = _skip_npy(name, X.reshape(-1, 1) if X.ndim == 1 else X, skip)
            _check_finite_npy(name, X)
        elif name.endswith(".npy"):
            raise TableError(f"{name} is not a NumPy .npy file (rename a text table to .csv "
                             "or .txt)")
        else:
            X = _read_text(stream, delimiter, header, skip)
    if X.shape[0] == 0:
        raise TableError(f"{name} is empty: no rows to cluster")
    return X

