"""The command line: the demo, cluster, the benchmark wrapper, argument errors."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_blobs

import skformer
from skformer import TransformerKMeans
from skformer.cli import main

PACKAGE = Path(skformer.__file__).resolve().parent


def test_demo_prints_a_comparison(capsys, monkeypatch):
    from skformer.store import pretraining

    # The one-hot model of wine's shape is pretrained on demand in the tests' own cache:
    # a tiny run, not the minute-long on-demand budget.
    real = pretraining._on_demand_config
    monkeypatch.setattr(pretraining, "_on_demand_config", lambda *a: real(*a).__class__(
        **{**real(*a).to_dict(), "steps": 2, "schedule_search": 2, "n_val_tasks": 4,
           "n_points": 32, "eval_every": 2}))
    assert main(["demo", "--dataset", "wine", "--embedding", "onehot"]) == 0
    out = capsys.readouterr().out
    assert "ExactLloydTransformer(onehot)" in out and "KMeans(lloyd)" in out
    assert "TransformerKMeans(onehot, learned_starts=1)" in out and "learned run" in out
    assert "inertia ratio TransformerKMeans(onehot) / KMeans" in out


def test_demo_on_overlapping_blobs_keeps_the_learned_run(capsys):
    # The bundled data sets hardly change with the learned mode (iris by 5e-5); the
    # generated blobs of the README's first snippet do (issue 21).
    assert main(["demo", "--dataset", "blobs"]) == 0
    out = capsys.readouterr().out
    assert "n_samples=2000 n_features=8 n_clusters=10" in out
    assert "The learned run was kept" in out
    assert "lower objective than KMeans" in out
    assert re.search(r"Global moves: \d+ breathing cycles, (which|none of which) lowered", out)


def test_demo_says_when_the_learned_run_cannot_help(capsys):
    # On wine (standardised, 3 clusters) the learned run ends where the Lloyd run does.
    assert main(["demo", "--dataset", "wine"]) == 0
    out = capsys.readouterr().out
    assert "the Lloyd run was kept" in out
    assert "--dataset blobs" in out


def test_demo_reports_too_many_clusters(capsys):
    assert main(["demo", "--n-clusters", "500"]) == 2
    assert "n_samples=150 should be >= n_clusters=500." in capsys.readouterr().err


def test_bench_exact_small(tmp_path, capsys):
    out = tmp_path / "bench.json"
    args = ["bench", "exact", "--n", "3000", "--k", "4", "--reps", "1", "--max-iter", "4"]
    assert main([*args, "--no-memory", "--out", str(out)]) == 0
    (record,) = json.loads(out.read_text())
    assert record["n"] == 3000 and record["k"] == 4 and record["iterations"] == 4
    # A marginal time (long fit - short fit) can come out negative on a busy machine.
    assert np.isfinite(record["iter_time_ratio"]) and record["fit_time_ratio"] > 0
    assert "| 3,000 | 4 |" in capsys.readouterr().out


def test_bench_sparse_small(tmp_path, capsys):
    out = tmp_path / "bench.json"
    args = ["bench", "sparse", "--n", "2000", "--d", "300", "--density", "0.05", "--k", "4",
            "--reps", "1", "--max-iter", "4", "--documents", "200", "--topics", "3",
            "--seeds", "0"]
    assert main([*args, "--no-memory", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    (exact,) = record["exact"]
    assert exact["k"] == 4 and exact["same_labels"] and exact["fit_time_ratio"] > 0
    text = record["text"]["learned_starts=1"]
    # Wide TF-IDF data get the generic model in principal directions: the learned steps ran.
    assert text["inertia_ratio_max"] <= 1 + 1e-9 and text["learned_skipped"] is None
    assert "| 4 |" in capsys.readouterr().out


@pytest.fixture
def blobs_files(tmp_path):
    X, _ = make_blobs(200, n_features=3, centers=4, random_state=0)
    csv = tmp_path / "x.csv"
    np.savetxt(csv, X, delimiter=",", header="a,b,c", comments="")
    npy = tmp_path / "x.npy"
    np.save(npy, X)
    return X, csv, npy


def test_cluster_csv_to_stdout(blobs_files, capsys):
    X, csv, _ = blobs_files
    assert main(["cluster", str(csv), "-k", "4", "--seed", "0"]) == 0
    captured = capsys.readouterr()
    labels = np.array(captured.out.split(), dtype=int)
    expected = TransformerKMeans(4, random_state=0).fit_predict(X)
    np.testing.assert_array_equal(labels, expected)
    assert "200 rows x 3 features -> 4 clusters" in captured.err


def test_cluster_npy_to_files(blobs_files, tmp_path):
    X, _, npy = blobs_files
    out, centers = tmp_path / "labels.npy", tmp_path / "centres.csv"
    argv = ["cluster", str(npy), "-k", "4", "--seed", "0", "-o", str(out)]
    assert main([*argv, "--centers", str(centers)]) == 0
    fit = TransformerKMeans(4, random_state=0).fit(X)
    np.testing.assert_array_equal(np.load(out), fit.labels_)
    np.testing.assert_allclose(np.loadtxt(centers, delimiter=","), fit.cluster_centers_)


@pytest.mark.parametrize(
    "content, k, message",
    [
        ("1,2\n3,x\n", 1, "line 2, column 2: cannot convert 'x' to a number"),
        ("1,2\n3,4\n", 3, "n_samples=2 should be >= n_clusters=3."),
        ("1,2\nnan,4\n", 1, "line 2, column 1: 'nan' is a missing value"),
    ],
)
def test_cluster_errors_exit_2(tmp_path, capsys, content, k, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    assert main(["cluster", str(path), "-k", str(k)]) == 2
    assert message in capsys.readouterr().err


def test_cluster_missing_file_exits_2(tmp_path, capsys):
    assert main(["cluster", str(tmp_path / "none.csv")]) == 2
    assert "No such file" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["demo", "--n-clusters", "0"], ["bench", "nope"], [],
                                  ["cluster"], ["cluster", "x.csv", "-k", "0"]])
def test_bad_arguments_exit_2(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2


# ----------------------------------------------------- finding the benchmarks package

# Imports skformer from the package folder argv[1] by its file (not through sys.path, so
# that only the CLI's own search can find ``benchmarks``), runs ``skformer ARGS`` for each
# list of arguments in the JSON argv[2], and prints one JSON list of what each did.
_CHILD = """
    import contextlib, importlib.util, io, json, sys
    init = sys.argv[1] + "/__init__.py"
    spec = importlib.util.spec_from_file_location("skformer", init,
                                                  submodule_search_locations=[sys.argv[1]])
    sys.modules["skformer"] = module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from skformer.cli import main
    runs = []
    for argv in json.loads(sys.argv[2]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code
        runs.append({"code": code, "out": out.getvalue(), "err": err.getvalue(),
                     "benchmarks": "benchmarks" in sys.modules})
    print(json.dumps(runs))
"""


def _skformer(package: Path, cwd: Path, *runs: list[str]) -> list[dict]:
    """What ``skformer`` does with each of ``runs``, in one fresh interpreter in ``cwd``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD), str(package), json.dumps(runs)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_bench_and_probe_find_the_checkout_from_any_directory(tmp_path):
    usages = {("bench", "--help"): "usage: skformer bench",
              ("bench", "exact", "--help"): "usage: skformer bench exact",
              ("bench", "kmeans", "--help"): "usage: skformer bench kmeans",
              ("bench", "cost", "--help"): "usage: skformer bench cost",
              ("probe", "--help"): "'loss-gap':",
              ("probe", "shift", "--help"): "usage: skformer probe shift"}
    runs = _skformer(PACKAGE, tmp_path, *map(list, usages))
    for (argv, usage), run in zip(usages.items(), runs, strict=True):
        assert run["code"] == 0 and usage in run["out"], (argv, run)


def test_without_benchmarks_the_other_commands_work_and_bench_says_why(tmp_path):
    # An installed wheel: the skformer package alone, no benchmarks/ beside it.
    package = tmp_path / "site-packages" / "skformer"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    runs = _skformer(package, tmp_path, ["--help"], ["pretrain", "--help"], ["demo"],
                     ["bench", "exact", "--help"], ["probe", "--help"], ["probe", "shift"])
    for run in runs[:3]:
        assert run["code"] == 0 and not run["benchmarks"], run
    assert "KMeans(lloyd)" in runs[2]["out"]
    for run in runs[3:]:
        assert run["code"] == 3, run  # NO_CHECKOUT_STATUS, not argparse's 2
        assert len(run["err"].splitlines()) == 1, run
        assert "live in the folder benchmarks/ of skformer's source repository" in run["err"]
        assert "pip install -e ." in run["err"]


def test_installed_without_checkout_help_says_which_commands_need_it(tmp_path):
    # `pip install .` puts the package alone in site-packages: run `python -m skformer` as
    # a user would, from a folder and a PYTHONPATH where `benchmarks` cannot be imported.
    site = tmp_path / "site-packages"
    shutil.copytree(PACKAGE, site / "skformer", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(site)}

    def skformer_(*argv):
        return subprocess.run([sys.executable, "-m", "skformer", *argv], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)

    where = subprocess.run([sys.executable, "-c", "import skformer; print(skformer.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert where.stdout.startswith(str(site)), where  # the copy, not the checkout
    top = skformer_("--help")
    assert top.returncode == 0
    assert "bench and probe need a source checkout" in " ".join(top.stdout.split())
    assert "3 bench or probe without a source checkout" in " ".join(top.stdout.split())
    bench = skformer_("bench", "--help")
    assert bench.returncode == 0
    assert "skformer bench needs a source checkout" in " ".join(bench.stdout.split())
    for argv in (["probe", "--help"], ["bench", "kmeans", "--help"], ["bench", "batch", "--help"],
                 ["bench", "device", "--help"], ["bench", "equal-time", "--help"]):
        run = skformer_(*argv)
        assert run.returncode == 3, (argv, run)
        (line,) = run.stderr.splitlines()  # one line, no traceback
        assert line.startswith(f"skformer {argv[0]}: not available in this installation")
        assert "pip install -e ." in line and run.stdout == ""


# ----------------------------------------------------- pretrain: a race on one file


def _fake_pretrain(saved: list):
    """A stand-in for skformer.store.pretrain that saves an exact-construction model
    (val_relative 0.97) at once; each call appends ``path`` to ``saved``."""
    from skformer.nn.learned import LearnedKMeansModel
    from skformer.store import save_model

    def pretrain(d, k, *, path, **options):
        model = LearnedKMeansModel.from_exact(d, k).eval()
        save_model(path, model, val_relative=0.97)
        saved.append(path)
        return model

    return pretrain


def _other_run(path) -> None:
    """Another run's model of the same shape, saved over ``path``."""
    from skformer.nn.learned import LearnedKMeansModel
    from skformer.store import save_model

    save_model(path, LearnedKMeansModel.from_exact(2, 3, scale=2.0).eval(), val_relative=0.5)


PRETRAIN = ["pretrain", "--d", "2", "--k", "3", "--no-progress"]


def test_pretrain_reports_its_own_model(tmp_path, capsys, monkeypatch):
    import skformer.cli
    import skformer.store

    saved = []
    monkeypatch.setattr(skformer.store, "pretrain", _fake_pretrain(saved))
    out = tmp_path / "m.safetensors"
    assert main([*PRETRAIN, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"d=2 k=3: {out}" in text and "relative validation loss 0.9700" in text
    assert "another run" not in text
    # The same weights written again by a twin run (other metadata): still this model.
    monkeypatch.setattr(skformer.cli, "_pretrain_one", _then(skformer.cli._pretrain_one,
                                                             _fake_pretrain([])))
    assert main([*PRETRAIN, "--out", str(out)]) == 0
    assert "another run" not in capsys.readouterr().out


def _then(pretrain_one, after):
    """``pretrain_one``, then ``after(2, 3, path=...)`` (another run's save)."""

    def wrapped(d, k, options, out, many):
        result = pretrain_one(d, k, options, out, many)
        after(d, k, path=result.path)
        return result

    return wrapped


def test_pretrain_replaced_after_saving_says_which_model_is_kept(tmp_path, capsys,
                                                                 monkeypatch):
    # The other run saves between this run's save and its reading back.
    import skformer.store

    mine = _fake_pretrain([])

    def raced(d, k, *, path, **options):
        model = mine(d, k, path=path)
        _other_run(path)
        return model

    monkeypatch.setattr(skformer.store, "pretrain", raced)
    out = tmp_path / "m.safetensors"
    assert main([*PRETRAIN, "--out", str(out)]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert (f"another run replaced this model at {out}; kept: the other run's model "
            "(relative validation loss 0.5000") in text
    assert "This run's model (figures unknown" in text and "0.9700" not in text


def test_pretrain_replaced_before_reporting_says_which_model_is_kept(tmp_path, capsys,
                                                                     monkeypatch):
    # The other run saves after this run read its file back, before the report.
    import skformer.cli
    import skformer.store

    monkeypatch.setattr(skformer.store, "pretrain", _fake_pretrain([]))
    monkeypatch.setattr(skformer.cli, "_pretrain_one",
                        _then(skformer.cli._pretrain_one,
                              lambda d, k, path: _other_run(path)))
    out = tmp_path / "m.safetensors"
    assert main([*PRETRAIN, "--out", str(out)]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert (f"another run replaced this model at {out}; kept: the other run's model "
            "(relative validation loss 0.5000") in text
    assert "This run's model (relative validation loss 0.9700" in text
    assert "is not on disk" in text


# ----------------------------------------------------- reading the input of cluster


def _labels(capsys) -> np.ndarray:
    return np.array(capsys.readouterr().out.split(), dtype=int)


@pytest.mark.parametrize(
    "content, header, n_rows",
    [
        ("a,b\n1,2\n3,4\n5,6\n", None, 3),       # a text first line, every other line numbers
        ('"a","b"\n1,2\n3,4\n5,6\n', None, 3),   # quoted names
        ("1,2\n3,4\n5,6\n7,8\n", None, 4),
        ("1,2\n3,4\n5,6\n7,8\n", False, 4),
        ("10,20\n3,4\n5,6\n7,8\n", True, 3),     # a numeric header, named explicitly
        ("a,b\n1,2\n3,4\n5,6\n", True, 3),
        ("# x,y\n1,2\n3,4\n5,6\n", None, 3),     # np.savetxt's commented header
        ("1,2\n\n3,4\n5,6\n", None, 3),          # blank lines are not rows
    ],
)
def test_cluster_header_only_when_explicit_or_unambiguous(tmp_path, capsys, content, header,
                                                          n_rows):
    path = tmp_path / "x.csv"
    path.write_text(content)
    flag = {None: [], True: ["--header"], False: ["--no-header"]}[header]
    assert main(["cluster", str(path), "-k", "1", *flag]) == 0
    assert len(_labels(capsys)) == n_rows


@pytest.mark.parametrize(
    "content, flag, message",
    [
        # An NA-like first row is data with a missing value, never a header.
        ("NA,2,3\n1,2,3\n4,5,6\n7,8,9\n", [], r"line 1, column 1: 'NA' is a missing value"),
        # A text column, no header: the first line that fails is named by its number.
        ("a,1\nb,2\nc,3\n", [], r"line 1, column 1: cannot convert 'a' to a number"),
        ("1,2\n3,4\n5,x\n", [], r"line 3, column 2: cannot convert 'x' to a number"),
        ("a,b\n1,2\n\n3,x\n", ["--header"], r"line 4, column 2: cannot convert 'x'"),
        ("a,b\n1,2\n3,4\n", ["--no-header"], r"line 1, column 1: cannot convert 'a'"),
        ("1,2\n3,4,5\n", [], r"line 2 has 3 values where line 1 has 2"),
        ("1;2\n3;4\n", [], r"pass --delimiter ';'"),
        ("1,5;2,5\n", [], r"line 1, column 2: .*pass --delimiter ';'"),
        ("1 2\n3 4\n", [], r"pass --delimiter ' '"),
        ("1\t2\n3\t4\n", [], r"pass --delimiter '\\t'"),
        ("", [], r"x.csv is empty: no rows to cluster"),
        ("\n\n", [], r"x.csv is empty: no rows to cluster"),
        ("a,b\n", [], r"x.csv has a header line but no data rows"),
        ("1,2\n", ["--header"], r"x.csv has a header line but no data rows"),
    ],
)
@pytest.mark.filterwarnings("error")  # no numpy warning ("input contained no data")
def test_cluster_input_errors_name_the_line(tmp_path, capsys, content, flag, message):
    import re

    path = tmp_path / "x.csv"
    path.write_text(content)
    assert main(["cluster", str(path), "-k", "1", *flag]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()  # one line, no traceback, no numpy warning
    assert line.startswith("skformer cluster: error: ")
    assert re.search(message, line), line


def test_cluster_whitespace_and_tab_delimiters(tmp_path, capsys):
    path = tmp_path / "x.txt"
    path.write_text("1  2\n3\t4\n 5 6\n")
    assert main(["cluster", str(path), "-k", "1", "--delimiter", " "]) == 0
    assert len(_labels(capsys)) == 3
    path.write_text("1\t2\n3\t4\n")
    assert main(["cluster", str(path), "-k", "1", "--delimiter", "\\t"]) == 0
    assert len(_labels(capsys)) == 2


def test_cluster_npy_that_is_not_npy(tmp_path, capsys):
    path = tmp_path / "x.npy"
    path.write_text("1,2\n3,4\n")
    assert main(["cluster", str(path), "-k", "1"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "x.npy is not a NumPy .npy file" in line and "allow_pickle" not in line


@pytest.mark.parametrize(
    "array, message",
    [
        (np.array([[1, "a"]], dtype=object), r"holds Python objects \(dtype object\)"),
        (np.array([["1", "a"]]), r"holds <U1 values, not numbers"),
        (np.zeros((2, 2, 2)), r"has shape \(2, 2, 2\); expected a 2-D table"),
        (np.zeros((0, 3)), r"x.npy is empty: no rows to cluster"),
    ],
)
def test_cluster_npy_errors(tmp_path, capsys, array, message):
    import re

    path = tmp_path / "x.npy"
    np.save(path, array, allow_pickle=True)
    assert main(["cluster", str(path), "-k", "1"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert re.search(message, line), line
    assert "allow_pickle" not in line


@pytest.mark.parametrize("option", ["-o", "--centers"])
def test_cluster_unwritable_output_one_line_before_fitting(tmp_path, capsys, monkeypatch,
                                                            blobs_files, option):
    _, csv, _ = blobs_files
    target = tmp_path / "no-such-folder" / "out.csv"
    fitted = []
    monkeypatch.setattr(TransformerKMeans, "fit", lambda *a, **k: fitted.append(1))
    assert main(["cluster", str(csv), "-k", "2", option, str(target)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("skformer cluster: error: cannot write ")
    assert str(target) in line and not fitted


def test_cluster_write_failure_is_one_line(tmp_path, capsys, monkeypatch, blobs_files):
    from skformer import _cli_io

    _, csv, _ = blobs_files

    def fail(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(_cli_io, "_write_text", fail)
    assert main(["cluster", str(csv), "-k", "2", "-o", str(tmp_path / "l.txt")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "cannot write" in line and "Permission denied" in line


def test_cluster_standardised_centres_in_the_input_units(blobs_files, tmp_path, capsys):
    from sklearn.preprocessing import StandardScaler

    X, csv, _ = blobs_files
    centers = tmp_path / "c.npy"
    argv = ["cluster", str(csv), "-k", "4", "--seed", "0", "--standardise"]
    assert main([*argv, "--centers", str(centers)]) == 0
    scaler = StandardScaler().fit(X)
    fit = TransformerKMeans(4, random_state=0).fit(scaler.transform(X))
    np.testing.assert_array_equal(_labels(capsys), fit.labels_)
    np.testing.assert_allclose(np.load(centers),
                               scaler.inverse_transform(fit.cluster_centers_))


def test_cluster_learned_starts_option(blobs_files, capsys, monkeypatch):
    _, csv, _ = blobs_files
    seen = []
    original = TransformerKMeans.fit

    def spy(self, X, y=None, sample_weight=None):
        seen.append(self.learned_starts)
        return original(self, X, y, sample_weight)

    monkeypatch.setattr(TransformerKMeans, "fit", spy)
    assert main(["cluster", str(csv), "-k", "4", "--seed", "0", "--learned-starts", "1"]) == 0
    assert seen == [1]
    assert "learned" in capsys.readouterr().err


# ----------------------------------------------------- a fast --help (lazy imports)

_HEAVY = ("torch", "sklearn", "scipy", "numpy", "joblib", "benchmarks")

# Imports skformer.cli with the package's __init__ left out (argv[1]: the package folder),
# parses each --help of the JSON argv[2], and prints the heavy modules then imported.
_CLI_ONLY = """
    import contextlib, io, json, sys, types
    package = types.ModuleType("skformer")
    package.__path__ = [sys.argv[1]]
    sys.modules["skformer"] = package
    from skformer.cli import build_parser
    for argv in json.loads(sys.argv[2]):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                build_parser().parse_args(argv)
            except SystemExit:
                pass
    print(json.dumps(sorted(m for m in json.loads(sys.argv[3]) if m in sys.modules)))
"""


def test_cli_parser_imports_nothing_heavy():
    helps = [["--help"], ["--version"], ["demo", "--help"], ["cluster", "--help"],
             ["pretrain", "--help"], ["bench", "--help"], ["bench", "exact", "--help"]]
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CLI_ONLY), str(PACKAGE), json.dumps(helps),
         json.dumps(_HEAVY)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == []


def test_python_m_skformer_help_imports_nothing_heavy():
    code = ("import runpy, sys, json\n"
            "sys.argv = ['skformer', '--help']\n"
            "try:\n    runpy.run_module('skformer', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            f"print(json.dumps(sorted(m for m in {_HEAVY!r} if m in sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "usage: skformer" in proc.stdout
    assert json.loads(proc.stdout.splitlines()[-1]) == []
