"""The files of ``skformer cluster``: every way of feeding the input, the outputs' checks,
the messages of a bad table, the centres' decimals (issue 32)."""

import gzip
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import warnings
from contextlib import redirect_stdout

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from skformer import TransformerKMeans
from skformer._cli_io import check_outputs, open_input, write_centres
from skformer._cli_table import TableError, TableWarning, read_table
from skformer.cli import build_parser, main

BOM = b"\xef\xbb\xbf"
N_ROWS = 3000  # about 80 KB of text: many times a pipe's or a reader's first 8 KB


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A 3,000-row CSV (no header) and the labels of a plain-file run on it."""
    folder = tmp_path_factory.mktemp("input")
    X, _ = make_blobs(N_ROWS, n_features=3, centers=4, random_state=0)
    path = folder / "x.csv"
    np.savetxt(path, X, delimiter=",", fmt="%.6f")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["cluster", str(path), "-k", "4", "--seed", "0"]) == 0
    labels = np.array(out.getvalue().split(), dtype=int)
    assert len(labels) == N_ROWS
    data = path.read_bytes()
    (folder / "x.csv.gz").write_bytes(gzip.compress(data))
    (folder / "gzipped").write_bytes(gzip.compress(data))  # no suffix: found by magic bytes
    (folder / "bom.csv").write_bytes(BOM + data)
    return folder, labels


# Shell commands that feed x.csv to `skformer cluster` ({cli}), each a way users do (each
# costs a fresh interpreter: the variants without a pipe are checked in-process below).
_WAYS = {
    "file": "{cli} x.csv",
    "redirect": "{cli} - < x.csv",
    "pipe-dash": "cat x.csv | {cli} -",
    "pipe-dev-stdin": "cat x.csv | {cli} /dev/stdin",
    "gzip-file": "{cli} x.csv.gz",
    "gzip-pipe": "cat x.csv.gz | {cli} -",
    "bom-file": "{cli} bom.csv",
    "process-substitution": "{cli} <(zcat x.csv.gz)",
}


@pytest.mark.parametrize("way", list(_WAYS))
def test_every_way_of_feeding_the_input_gives_one_label_per_row(table, way):
    folder, expected = table
    if "zcat" in _WAYS[way] and shutil.which("zcat") is None:
        pytest.skip("no zcat")
    cli = f"{shlex.quote(sys.executable)} -m skformer cluster -k 4 --seed 0"
    command = _WAYS[way].replace("{cli}", cli)
    proc = subprocess.run(["bash", "-c", command], cwd=folder, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    labels = np.array(proc.stdout.split(), dtype=int)
    assert len(labels) == N_ROWS, proc.stderr
    np.testing.assert_array_equal(labels, expected)
    assert f"{N_ROWS} rows x 3 features" in proc.stderr


@pytest.mark.parametrize("name, header", [("gzipped", None), ("bom.csv", False)])
def test_gzip_without_suffix_and_bom_without_header(table, capsys, name, header):
    folder, expected = table
    flag = [] if header is None else ["--no-header"]
    assert main(["cluster", str(folder / name), "-k", "4", "--seed", "0", *flag]) == 0
    np.testing.assert_array_equal(np.array(capsys.readouterr().out.split(), dtype=int),
                                  expected)


def test_a_fifo_is_read_once(tmp_path):
    # A named pipe, as /dev/fd/N or /dev/stdin: the bytes can be read once only.
    rows = "".join(f"{i},{i % 7}\n" for i in range(N_ROWS)).encode()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "wb") as handle:
            handle.write(rows)

    read = []
    writer = threading.Thread(target=write)
    reader = threading.Thread(target=lambda: read.append(read_table(str(fifo))))
    writer.start()
    reader.start()
    writer.join()
    reader.join(timeout=120)
    if reader.is_alive():  # opened a second time: waits for a writer that never comes
        open(fifo, "wb").close()
        reader.join()
        pytest.fail("the fifo was opened twice")
    np.testing.assert_array_equal(read[0][:, 0], np.arange(N_ROWS))


class _Stdin(io.TextIOWrapper):
    """A standard input holding ``data``, not a terminal, without a file descriptor."""

    def __init__(self, data: bytes, tty: bool = False):
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self._tty = tty

    def isatty(self):
        return self._tty


@pytest.mark.parametrize("compress", [False, True])
def test_npy_from_standard_input(monkeypatch, compress):
    X = np.arange(12.0).reshape(4, 3)
    buffer = io.BytesIO()
    np.save(buffer, X)
    data = gzip.compress(buffer.getvalue()) if compress else buffer.getvalue()
    monkeypatch.setattr(sys, "stdin", _Stdin(data))
    np.testing.assert_array_equal(read_table("-"), X)


def test_npy_file_still_read(tmp_path):
    X = np.arange(6.0).reshape(3, 2)
    np.save(tmp_path / "x.npy", X)
    np.testing.assert_array_equal(read_table(str(tmp_path / "x.npy")), X)


@pytest.mark.parametrize(
    "content, header, expected",
    [
        (BOM + b"0,1\n2,3\n4,5\n", None, [[0, 1], [2, 3], [4, 5]]),  # the first row kept
        (BOM + b"0,1\n2,3\n4,5\n", False, [[0, 1], [2, 3], [4, 5]]),  # no '\ufeff0'
        (BOM + b"a,b\n2,3\n4,5\n", None, [[2, 3], [4, 5]]),
        (BOM + b"a,b\r\n2,3\r\n4,5\r\n", True, [[2, 3], [4, 5]]),
    ],
)
def test_a_byte_order_mark_is_not_data(tmp_path, content, header, expected):
    path = tmp_path / "x.csv"
    path.write_bytes(content)
    np.testing.assert_array_equal(read_table(str(path), header=header), expected)


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda p: p.write_bytes(gzip.compress(b"1,2\n" * 100)[:-9]),  # no trailer
         r"x.csv: corrupt or truncated gzip data"),
        (lambda p: p.write_bytes(b"1,2\n3,4\n5,\xe9\n"),
         r"x.csv, line 3: not UTF-8 text \(byte 0xe9\)"),
    ],
)
def test_unreadable_bytes(tmp_path, setup, message):
    path = tmp_path / "x.csv"
    setup(path)
    with pytest.raises(TableError, match=message):
        read_table(str(path))


def test_dash_on_a_terminal_says_so(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", _Stdin(b"", tty=True))
    with pytest.raises(TableError, match=r"'-' reads standard input, which is a terminal"):
        with open_input("-"):
            pass
    assert main(["cluster", "-", "-k", "1"]) == 2
    assert "skformer cluster: error: '-' reads standard input" in capsys.readouterr().err


# ----------------------------------------------------- outputs: checked before any work


@pytest.fixture
def small(tmp_path, monkeypatch):
    """A small CSV; reading the input or fitting is recorded in the returned list."""
    path = tmp_path / "x.csv"
    path.write_text("1,2\n3,4\n5,6\n")
    work = []
    import skformer._cli_table

    original = skformer._cli_table.open_input
    monkeypatch.setattr(skformer._cli_table, "open_input",
                        lambda source: work.append("read") or original(source))
    monkeypatch.setattr(TransformerKMeans, "fit", lambda *a, **k: work.append("fit"))
    monkeypatch.chdir(tmp_path)
    return path, work


@pytest.mark.parametrize(
    "argv, message",
    [
        (["x.csv", "-o", "x.csv"], r"-o x.csv is the input file"),
        (["x.csv", "--centers", "./x.csv"], r"--centers ./x.csv is the input file"),
        (["./x.csv", "-o", "link.csv"], r"-o link.csv is the input file"),  # a symlink
        (["x.csv", "-o", "out.csv", "--centers", "out.csv"],
         r"-o and --centers both name out.csv: each needs its own file"),
        (["x.csv", "-o", "out.csv", "--centers", "sub/../out.csv"],
         r"-o and --centers both name sub/../out.csv"),
    ],
)
def test_outputs_that_would_overwrite_exit_2_before_any_work(small, capsys, argv, message):
    path, work = small
    os.symlink(path, path.parent / "link.csv")
    (path.parent / "sub").mkdir()
    before = path.read_bytes()
    assert main(["cluster", *argv, "-k", "1"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("skformer cluster: error: ")
    assert re.search(message, line), line
    assert work == [] and path.read_bytes() == before
    assert not (path.parent / "out.csv").exists()


def test_output_that_is_the_file_redirected_to_stdin(small, monkeypatch, capsys):
    path, work = small
    with open(path) as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        assert main(["cluster", "-", "-k", "1", "-o", str(path)]) == 2
    assert f"-o {path} is the input file" in capsys.readouterr().err
    assert work == []


def test_outputs_that_may_share_a_device(small):
    assert check_outputs("x.csv", {"-o": os.devnull, "--centers": os.devnull}) is None
    assert check_outputs("x.csv", {"-o": "a.csv", "--centers": None}) is None


# ----------------------------------------------------- messages name the line and column


@pytest.mark.parametrize(
    "content, header, message",
    [
        ("1,2\n3,inf\n", None, r"x.csv, line 2, column 2: 'inf' is not a finite number"),
        ("1,2\n\n3,4\n-Infinity,5\n", None, r"line 4, column 1: '-Infinity' is not a finite"),
        ("1,2\n3,1e999\n", None, r"line 2, column 2: '1e999' is not a finite number"),
        ("a,b\n1,2\nNaN,4\n", None, r"line 3, column 1: 'NaN' is a missing value"),
        ("1,2\n3,1_000\n", None,
         r"line 2, column 2: cannot convert '1_000' to a number \(write plain ASCII digits"),
        ("1_000,2\n3,4\n", None, r"line 1, column 1: cannot convert '1_000'"),  # no header
        ("1,2\n3,\uff14\n", None, r"line 2, column 2: cannot convert '\uff14' to a number"),
        # A bad value on line 12 blames line 12, with or without a header line.
        ("".join(f"{i},{i}\n" for i in range(11)) + "11,x\n", None,
         r"line 12, column 2: cannot convert 'x' to a number$"),
        ("a,b\n" + "".join(f"{i},{i}\n" for i in range(10)) + "11,x\n", None,
         r"line 12, column 2: cannot convert 'x' to a number$"),
        ("a,b\n1,x\n3,4\n", None, r"line 2, column 2: cannot convert 'x' to a number$"),
        ("1,2\n" * 11 + "11,x\n", False, r"line 12, column 2: cannot convert 'x' to a number$"),
        # --header is suggested only for the first line, where the rest is numbers.
        ("a,b\n1,2\n3,4\n", False,
         r"line 1, column 1: cannot convert 'a' to a number \(if this line is a header, "
         r"pass --header\)$"),
        # A column of text is named, with the option that leaves it out.
        ("a,1\nb,2\nc,3\n", None, r"line 1, column 1: cannot convert 'a' to a number "
         r"\(column 1 holds text, such as names or IDs: leave it out with --skip-columns 1\)$"),
        # Another delimiter: told which, not --header.
        ("a;b\n1;2\n3;4\n", None, r"line 1, column 1: .*pass --delimiter ';'\)$"),
        ("a;b\n1;2\n3;4\n", True, r"line 2, column 1: .*pass --delimiter ';'\)$"),
        ("a\tb\n1\t2\n3\t4\n", None, r"tabs, not ',': pass --delimiter '\\t'\)$"),
        ("x|y|z\n1|2|3\n", False, r"pass --delimiter '\|'\)$"),
    ],
)
def test_table_errors_name_line_and_column(tmp_path, content, header, message):
    path = tmp_path / "x.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(TableError, match=message) as info:
        read_table(str(path), header=header)
    assert "--header" not in str(info.value) or "if this line is a header" in message


def test_non_finite_in_npy_names_row_and_column(tmp_path):
    X = np.ones((5, 3))
    X[3, 1] = np.inf
    np.save(tmp_path / "x.npy", X)
    with pytest.raises(TableError, match=r"x.npy, row 4, column 2: 'inf' is not a finite"):
        read_table(str(tmp_path / "x.npy"))


@pytest.mark.parametrize("field", ["1_000", "1_0.5", "\uff11\uff12", "\u0663", "0x10",
                                   "1e5", "-.5", "+1.", "inf", "1d5"])
def test_numbers_are_what_numpy_loadtxt_reads(tmp_path, field):
    # The oracle: numpy.loadtxt (pandas too reads 1_000 as text), not Python's float().
    path = tmp_path / "x.csv"
    path.write_text(f"1,{field}\n2,3\n", encoding="utf-8")
    try:
        expected = np.loadtxt(path, delimiter=",", ndmin=2)
    except ValueError:
        with pytest.raises(TableError, match=r"line 1, column 2: cannot convert"):
            read_table(str(path), header=False)
        return
    if np.isfinite(expected).all():
        np.testing.assert_array_equal(read_table(str(path), header=False), expected)
    else:
        with pytest.raises(TableError, match=r"line 1, column 2: .* not a finite number"):
            read_table(str(path), header=False)


def test_cluster_help_documents_the_input_and_outputs():
    help_text = " ".join(build_parser()._subparsers._group_actions[0].choices["cluster"]
                         .format_help().split())
    for phrase in ("'-' (standard input)", "gzip data is decompressed", "byte-order mark",
                   "digit separators (1_000, 1,000) are not numbers",
                   "An output that is the input or another output is refused",
                   "the shortest decimals that read back as the same floating-point numbers",
                   "parsed as it arrives, never held whole",
                   "the index column that pandas' df.to_csv() writes first",
                   "not '\"' (fields may be quoted), '#' (comments) or a character of "
                   "numbers"):
        assert phrase in help_text, phrase


# ----------------------------------------------------- the centres' decimals


def test_centres_are_the_shortest_decimals_that_round_trip(tmp_path):
    centres = np.array([[0.1, 1 / 3, 2.5], [1e-20, -1234.5, 1e16]])
    path = tmp_path / "c.csv"
    write_centres(centres, str(path))
    assert path.read_text() == "0.1,0.3333333333333333,2.5\n1e-20,-1234.5,1e+16\n"
    np.testing.assert_array_equal(np.loadtxt(path, delimiter=",", ndmin=2), centres)
    single = centres.astype(np.float32)
    write_centres(single, str(path))
    assert path.read_text().startswith("0.1,0.33333334,2.5\n")
    np.testing.assert_array_equal(
        np.loadtxt(path, delimiter=",", ndmin=2, dtype=np.float32), single)


def test_cluster_centres_round_trip_bitwise(tmp_path, capsys):
    # Data of one decimal: integer-like centres come out short, others exact.
    X = np.array([[0.0, 1.0], [0.0, 3.0], [10.0, 1.5], [10.0, 2.5], [10.1, 2.0]])
    data, centers = tmp_path / "x.csv", tmp_path / "c.csv"
    np.savetxt(data, X, delimiter=",", fmt="%.1f")
    assert main(["cluster", str(data), "-k", "2", "--seed", "0", "--centers", str(centers)]) == 0
    fit = TransformerKMeans(2, random_state=0).fit(X)
    np.testing.assert_array_equal(np.loadtxt(centers, delimiter=","), fit.cluster_centers_)
    text = centers.read_text()
    assert "0.0,2.0" in text and "00000000" not in text, text


# ----------------------------------------------------- read in pieces (issue 41)

# Inputs whose rows, header, delimiter or first problem must not depend on where the
# reader cuts the bytes into pieces: line ends, a byte-order mark, comments, quotes, and
# problems on late lines (text, another width, not finite, not UTF-8).
_PIECEWISE = [
    (BOM + b"a,b\r\n1,2\r\n\r\n# note\r\n3,4\r\n5,6", {}),
    (b"1,2\r3,4\r5,6\r", {}),
    (b'"1","2"\n3,"4"\n  5 , 6  # six\n', {}),
    (b"1 2\n3\t4\n\n5  6\n", {"delimiter": " "}),
    (b"a,b\n" + b"1,2\n" * 30 + b"3,x\n", {}),
    (b"1,2\n" * 30 + b"3,4,5\n", {}),
    (b"1,2\n" * 30 + b"3,inf\n4,x\n", {}),
    (b"1,2\n" * 30 + b"3,4\n5,\xe9\n6,x\n", {}),
    (b"1,2\n" * 30 + b"3,x\n5,\xe9\n", {}),
    (b"a,b\n1,2\n3,4\n", {"header": False}),
    (b"a,1\nb,2\nc,3\n", {}),
    (b"id,a\nx,1\ny,2\n" + b"z,3\n" * 30 + b"w,4,5\n", {"skip_columns": [1]}),
]


@pytest.mark.parametrize("content, options", _PIECEWISE)
def test_any_piece_size_reads_the_same_rows_and_errors(tmp_path, monkeypatch, content,
                                                        options):
    from skformer import _cli_io

    path = tmp_path / "x.csv"
    path.write_bytes(content)

    def outcome():
        try:
            return read_table(str(path), **options)
        except TableError as exc:
            return str(exc)

    whole = outcome()  # one piece: the whole input
    for size in (1, 2, 3, 5, 8, 13):
        monkeypatch.setattr(_cli_io, "CHUNK", size)
        got = outcome()
        if isinstance(whole, str):
            assert got == whole, size
        else:
            np.testing.assert_array_equal(got, whole)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"1,2\n" * 30 + b"3,inf\n4,x\n", r"line 31, column 2: 'inf' is not a finite number"),
        (b"1,2\n" * 30 + b"3,4\n5,\xe9\n6,x\n", r"line 32: not UTF-8 text \(byte 0xe9\)"),
        (b"1,2\n" * 30 + b"3,x\n5,\xe9\n", r"line 31, column 2: cannot convert 'x'"),
        (b"1,2\n" * 30 + b"3,4,5\n", r"line 31 has 3 values where line 1 has 2$"),
        (b"1,2\r" * 30 + b"3,x\r", r"line 31, column 2: cannot convert 'x'"),
        (b"a,b\n1,\xe9\n", r"line 2: not UTF-8 text"),
    ],
)
def test_the_first_problem_is_named_across_pieces(tmp_path, monkeypatch, content, message):
    from skformer import _cli_io

    monkeypatch.setattr(_cli_io, "CHUNK", 7, raising=False)
    path = tmp_path / "x.csv"
    path.write_bytes(content)
    with pytest.raises(TableError, match=message):
        read_table(str(path))


@pytest.mark.parametrize("compress", [False, True])
def test_a_table_is_read_without_holding_its_text(tmp_path, monkeypatch, compress):
    # A float array grows as pieces of the text are parsed: the text, its lines and their
    # fields are never held whole (they took 11 to 29 times the array).
    import tracemalloc

    from skformer import _cli_io

    monkeypatch.setattr(_cli_io, "CHUNK", 1 << 16, raising=False)
    X = np.random.default_rng(0).normal(size=(20_000, 8))
    path = tmp_path / "x.csv"
    np.savetxt(path, X, delimiter=",")  # 4 MB of text: 3 times the array
    if compress:
        path.write_bytes(gzip.compress(path.read_bytes()))
    tracemalloc.start()
    try:
        Y = read_table(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(Y, X)
    assert peak < 2.5 * Y.nbytes, peak / Y.nbytes


# ----------------------------------------------------- delimiters that cannot be (issue 41)


@pytest.mark.parametrize(
    "delimiter, message",
    [
        (",,", r"--delimiter ',,': a delimiter is one character"),
        ("ab", r"--delimiter 'ab': a delimiter is one character"),
        ('"', r"""--delimiter '"' cannot separate fields: it is the quote character"""),
        ("#", r"--delimiter '#' cannot separate fields: it is the start of a comment"),
        ("5", r"--delimiter '5' cannot separate fields: it is a character of numbers"),
        (".", r"--delimiter '.' cannot separate fields: it is a character of numbers"),
        ("\n", r"--delimiter '\\n' cannot separate fields: it is a line end"),
    ],
)
def test_delimiters_that_cannot_separate_fields(small, capsys, delimiter, message):
    path, work = small
    with pytest.raises(TableError, match=message):
        read_table(str(path), delimiter=delimiter)
    assert main(["cluster", str(path), "-k", "1", "--delimiter", delimiter]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("skformer cluster: error: --delimiter")
    assert work == []  # refused before the input is read


@pytest.mark.parametrize("delimiter", [",", ";", "\\t", "\t", " ", "  ", "", "|", ":"])
def test_delimiters_that_can(tmp_path, delimiter):
    sep = {"\\t": "\t", "": " ", "  ": " "}.get(delimiter, delimiter)
    path = tmp_path / "x.txt"
    path.write_text(f"1{sep}2\n3{sep}4\n")
    np.testing.assert_array_equal(read_table(str(path), delimiter=delimiter), [[1, 2], [3, 4]])


# ----------------------------------------------------- columns left out (issue 41)


def _frame_csv(tmp_path, index=True):
    import pandas as pd

    frame = pd.DataFrame({"a": [0.5, 1.5, 9.0, 9.5], "b": [2.0, 2.5, 7.0, 7.5]})
    path = tmp_path / "frame.csv"
    frame.to_csv(path, index=index)
    return path, frame.to_numpy()


def test_pandas_index_column_is_left_out_with_skip_columns(tmp_path, capsys):
    pytest.importorskip("pandas")
    path, values = _frame_csv(tmp_path)
    np.testing.assert_array_equal(read_table(str(path), skip_columns=[1]), values)
    assert main(["cluster", str(path), "-k", "2", "--seed", "0", "--skip-columns", "1"]) == 0
    err = capsys.readouterr().err
    assert "4 rows x 2 features" in err and "note" not in err


def test_pandas_index_column_read_as_a_feature_is_noted(tmp_path, capsys):
    pytest.importorskip("pandas")
    path, values = _frame_csv(tmp_path)
    with pytest.warns(TableWarning, match=r"column 1 has no name and holds 0, 1, 2, \.\.\.: "
                                          r"pandas' index .* --skip-columns 1"):
        X = read_table(str(path))
    np.testing.assert_array_equal(X[:, 1:], values)
    assert main(["cluster", str(path), "-k", "2", "--seed", "0"]) == 0
    err = capsys.readouterr().err
    assert "skformer cluster: note: " in err and "--skip-columns 1" in err
    assert "4 rows x 3 features" in err
    without, _ = _frame_csv(tmp_path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_table(str(without))


@pytest.mark.parametrize(
    "content, skip, expected",
    [
        ("id,a,b\nx,1,2\ny,3,4\n", [1], [[1, 2], [3, 4]]),
        ("x,1,2\ny,3,4\n", [1], [[1, 2], [3, 4]]),  # no header: the text is skipped
        ("a,id,b\n1,x,2\n3,y,4\n", [2], [[1, 2], [3, 4]]),
        ("a,b,c\n1,2,3\n4,5,6\n", [1, 3], [[2], [5]]),
        ('n,a\n"x, y",1\nz,2\n', [1], [[1], [2]]),  # a quoted field holding the delimiter
    ],
)
def test_skip_columns(tmp_path, content, skip, expected):
    path = tmp_path / "x.csv"
    path.write_text(content)
    np.testing.assert_array_equal(read_table(str(path), skip_columns=skip), expected)


@pytest.mark.parametrize(
    "content, skip, message",
    [
        ("id,a\nx,1\ny,2\n", [], r"line 2, column 1: cannot convert 'x' to a number \(column 1 "
         r"holds text, such as names or IDs: leave it out with --skip-columns 1\)$"),
        ("i,id,a\n1,x,1\n2,y,2\n", [1], r"line 2, column 2: .*--skip-columns 1,2\)$"),
        ("a,b\n1,2\n3,4\n", [3], r"x.csv: --skip-columns 3: line 2 has 2 columns"),
        ("a,b\n1,2\n3,4\n", [1, 2], r"--skip-columns 1,2 leaves no column to cluster"),
        ("id,a\nx,1\ny,2,3\n", [1], r"line 3 has 3 values where line 2 has 2"),
        ("id,a\nx,1\ny\n", [1], r"line 3 has 1 values where line 2 has 2"),
        ("1,2\n3,x\n", [0], r"--skip-columns counts columns from 1, got 0"),
    ],
)
def test_skip_columns_errors(tmp_path, content, skip, message):
    path = tmp_path / "x.csv"
    path.write_text(content)
    with pytest.raises(TableError, match=message):
        read_table(str(path), skip_columns=skip)


def test_skip_columns_of_an_npy_array(tmp_path):
    X = np.arange(12.0).reshape(4, 3)
    np.save(tmp_path / "x.npy", X)
    np.testing.assert_array_equal(read_table(str(tmp_path / "x.npy"), skip_columns=[2]),
                                  X[:, [0, 2]])
    with pytest.raises(TableError, match=r"--skip-columns 4: the array has 3 columns"):
        read_table(str(tmp_path / "x.npy"), skip_columns=[4])


@pytest.mark.parametrize("value", ["0", "a", "", "1,,2", "-1"])
def test_skip_columns_option_needs_column_numbers(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["cluster", "x.csv", "--skip-columns", value])
    assert exc.value.code == 2
    assert "--skip-columns: expected column numbers counted from 1" in capsys.readouterr().err
