"""The anchors benchmark: its data sets and Fritzke reader, its report's arithmetic, and a
quick run of the command."""

import doctest
import importlib.util
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from benchmarks import anchors as an
from benchmarks.anchors import cli, data, report, runs
from benchmarks.equal_time.report import kmeans_at_time
from skformer.cli import main


@pytest.mark.parametrize("module", [data, report, runs])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


# --------------------------------------------------------------------------- data


def test_mixed_2d_is_the_documented_generator():
    X, y = an.mixed_2d()
    counts = np.bincount(y)
    assert X.shape == (len(y), 2) and len(counts) == 60
    assert counts.min() >= 50 and counts.max() <= 400
    assert an.SETS["mixed2d-k60"].n == len(X)  # the registry's n, drawn without the rows
    # each cluster's spread within [0.5, 5] (sample std of >= 50 rows, with slack)
    spread = np.array([X[y == j].std(axis=0).mean() for j in range(60)])
    assert spread.min() > 0.3 and spread.max() < 6.5 and spread.max() / spread.min() > 3
    X2, y2 = an.mixed_2d()
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(X, an.mixed_2d(seed=1)[0])


def test_sets_cover_the_issues_list():
    chosen = {s.name: s for s in an.select(["chosen"])}
    assert (chosen["mixture-unequal"].n, chosen["mixture-unequal"].d) == (20_000, 32)
    assert chosen["blobs16-k64"].k >= 50 and chosen["china-k64"].k >= 48
    assert chosen["digits-k50"].k >= 40 and chosen["mixed2d-k60"].k >= 50
    assert chosen["embed128-k100"].d >= 96
    fritzke = an.select(["fritzke"])
    assert len(fritzke) == 14 and {s.k for s in fritzke} == {100}
    assert "Intrusion" not in an.DEFAULT and an.select(["Intrusion"])[0].d == 35
    with pytest.raises(ValueError, match="unknown data set 'nope'"):
        an.select(["digits-k10", "nope"])


def test_tiny_versions_are_seeded_samples():
    t = an.tiny(an.SETS["blobs16-k64"])
    X = t.load()
    assert X.shape == (data.TINY_ROWS, 16) and t.k == data.TINY_K
    np.testing.assert_array_equal(X, t.load())
    full = an.SETS["blobs16-k64"].load()
    assert (X[:, None, :] == full[None]).all(axis=2).any(axis=1).all()  # rows of the set


@pytest.fixture
def fritzke_dir(tmp_path):
    """A folder with gmd5x5.csv and Spam.zip (holding Spam.csv), as in Fritzke's
    repository, and a broken Cloud.zip."""
    rng = np.random.default_rng(0)
    a, b = rng.random((30, 2)), rng.random((20, 4))
    np.savetxt(tmp_path / "gmd5x5.csv", a, delimiter=",")
    with zipfile.ZipFile(tmp_path / "Spam.zip", "w") as z:
        z.writestr("Spam.csv", "\n".join(",".join(repr(float(v)) for v in row) for row in b))
    with zipfile.ZipFile(tmp_path / "Cloud.zip", "w") as z:
        z.writestr("notes.txt", "no data")
    return tmp_path, a, b


def test_read_fritzke_csv_and_zip(fritzke_dir):
    folder, a, b = fritzke_dir
    np.testing.assert_array_equal(an.read_fritzke(folder, "gmd5x5"), a)
    np.testing.assert_array_equal(an.read_fritzke(str(folder), "Spam"), b)
    np.testing.assert_array_equal(an.SETS["Spam"].load(folder), b)
    with pytest.raises(FileNotFoundError, match=r"no rice.csv or rice.zip in .*"):
        an.read_fritzke(folder, "rice")
    with pytest.raises(ValueError, match=r"Cloud.zip holds no Cloud.csv \(members: notes"):
        an.read_fritzke(folder, "Cloud")
    (folder / "rice.csv").write_text("1,2\n3,x\n")
    with pytest.raises(ValueError, match="rice.csv: not a comma-separated table"):
        an.read_fritzke(folder, "rice")


def test_available_says_why_fritzkes_sets_are_skipped(fritzke_dir, tmp_path):
    folder, *_ = fritzke_dir
    sets = an.select(["digits-k10", "gmd5x5", "rice"])
    runs_, note = an.available(sets, None)
    assert [s.name for s in runs_] == ["digits-k10"]
    assert "(gmd5x5, rice)" in note and "--fritzke-data DIR" in note
    assert data.ENV_VAR in note and "gittar/breathing-k-means" in note
    runs_, note = an.available(sets, tmp_path / "absent")
    assert "absent is not a folder" in note and len(runs_) == 1
    runs_, note = an.available(sets, folder)
    assert [s.name for s in runs_] == ["digits-k10", "gmd5x5"] and "(rice)" in note
    assert an.available(an.select(["digits-k10"]), None) == (an.select(["digits-k10"]), None)


def test_fritzke_folder_from_option_or_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    assert an.fritzke_folder(None) is None
    monkeypatch.setenv(data.ENV_VAR, str(tmp_path))
    assert an.fritzke_folder(None) == tmp_path
    assert an.fritzke_folder("elsewhere").name == "elsewhere"


# --------------------------------------------------------------------------- methods


def test_select_methods_and_missing_packages(monkeypatch):
    assert [m.name for m in an.select_methods(["kmeans"])] == [
        f"kmeans-{n}" for n in runs.KMEANS_N_INITS]
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        an.select_methods(["nope"])
    monkeypatch.setitem(sys.modules, "bkmeans", None)  # import bkmeans raises ImportError
    ok, missing = runs.split_available(an.select_methods(["bkm", "long", "learned"]))
    assert [m.name for m in ok] == ["learned"] and list(missing) == ["bkmeans"]


def test_faiss_kmeans_centres():
    """In a child process: faiss brings its own OpenMP and BLAS runtimes, whose thread
    limits the test process's other tests could then no longer set
    (docs/benchmarks.rst, "faiss in the same process slows skformer's compiled kernels")."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("faiss") is None:
        pytest.skip("faiss is not installed")
    code = (
        "import numpy as np\n"
        "from benchmarks.anchors import runs\n"
        "X = np.random.default_rng(0).random((200, 3))\n"
        "est = runs.FaissKMeans(4, nredo=2, seed=1).fit(X)\n"
        "assert est.cluster_centers_.shape == (4, 3)\n"
        "assert est.cluster_centers_.dtype == np.float64\n"
        "again = runs.FaissKMeans(4, nredo=2, seed=1).fit(X).cluster_centers_\n"
        "np.testing.assert_array_equal(est.cluster_centers_, again)\n"
        "print('ok')\n")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# --------------------------------------------------------------------------- report


def _rec(method, seed, inertia, seconds, dataset="a"):
    m = runs.METHODS[method]
    return runs.AnchorRecord(dataset=dataset, group="chosen", n=100, d=2, k=5, seed=seed,
                             method=method, family=m.family, n_init=m.n_init, position=0,
                             inertia=inertia, seconds=seconds)


def _hand_made():
    # KMeans' curve: n_init=1 at 1 s, n_init=2 at 2 s; best known 100 (the long search)
    return [
        _rec("kmeans-1", 0, 110.0, 1.0), _rec("kmeans-1", 1, 104.0, 1.2),
        _rec("kmeans-1", 2, 102.0, 0.8),
        _rec("kmeans-2", 0, 103.0, 2.0), _rec("kmeans-2", 1, 102.0, 2.2),
        _rec("kmeans-2", 2, 101.0, 1.8),
        _rec("bkm", 0, 100.5, 4.0), _rec("bkm", 1, 101.0, 1.0), _rec("bkm", 2, 100.2, 3.0),
        _rec("learned", 0, 100.4, 2.0), _rec("learned", 1, 101.0, 1.0),
        _rec("learned", 2, 100.6, 1.414),
        _rec("long", 0, 100.0, 9.0),
    ]


def test_summarise_gaps_medians_and_paired_ratios():
    (s,) = report.summarise(_hand_made())
    assert s.best == 100.0 and s.best_by == "long, seed 0"
    rows = {r.method: r for r in s.rows}
    assert list(rows) == ["kmeans-1", "kmeans-2", "bkm", "learned", "long"]
    assert rows["kmeans-1"].gap == pytest.approx(4.0) and s.kmeans_1_gap == pytest.approx(4.0)
    assert rows["bkm"].gap == pytest.approx(0.5) and rows["long"].seeds == 1
    ours = rows["learned"]
    assert ours.seconds == pytest.approx(1.414) and ours.inertia == pytest.approx(100.6)
    # paired per seed: times 2/4, 1/1, 1.414/3 -> median 0.5 (the medians' ratio is
    # 1.414/3); inertias 100.4/100.5, 1, 100.6/100.2 -> median 1
    assert ours.time_ratio_bkm == pytest.approx(0.5)
    assert ours.inertia_ratio_bkm == pytest.approx(1.0)
    assert rows["long"].time_ratio_bkm == pytest.approx(9.0 / 4.0)  # its one seed only
    # at equal time: KMeans' medians (1 s, 104) and (2 s, 102) read at 1.414 s
    at = kmeans_at_time([1, 2], [1.0, 2.0], [104.0, 102.0], 1.414)
    assert ours.equal_time == pytest.approx(100.6 / at.inertia)
    assert 100.6 / 103.0 == pytest.approx(ours.equal_time, rel=1e-3)
    assert rows["kmeans-1"].equal_time is None and rows["bkm"].equal_time is not None


def test_paired_ratio_is_not_the_ratio_of_medians():
    rs = [_rec("bkm", 0, 1.0, 1.0), _rec("bkm", 1, 1.0, 10.0), _rec("bkm", 2, 1.0, 100.0),
          _rec("learned", 0, 1.0, 3.0), _rec("learned", 1, 1.0, 5.0),
          _rec("learned", 2, 1.0, 50.0)]
    row = {r.method: r for r in report.summarise(rs)[0].rows}["learned"]
    assert row.time_ratio_bkm == pytest.approx(0.5)  # median of 3, 0.5, 0.5
    assert row.seconds / 10.0 == pytest.approx(0.5) and row.equal_time is None


def test_targets_judge_the_learned_mode():
    (s,) = report.summarise(_hand_made())
    t = s.targets
    assert t.equal_time_bound == report.EQUAL_TIME_TARGET  # KMeans(n_init=1) 4 % above
    assert t.checks == {"inertia/bkm": True, "time/bkm": True, "gap": False,
                        "equal time": True}
    assert t.met is False
    # KMeans(n_init=1) within 1 % of the best: only the ceiling applies
    near = [r if r.method != "kmeans-1" else _rec("kmeans-1", r.seed, 100.5, r.seconds)
            for r in _hand_made()]
    assert report.summarise(near)[0].targets.equal_time_bound == report.CEILING
    no_bkm = [r for r in _hand_made() if r.method != "bkm"]
    t = report.summarise(no_bkm)[0].targets
    assert t.checks["inertia/bkm"] is None and t.checks["time/bkm"] is None
    assert report.summarise([r for r in _hand_made() if r.method != "learned"])[0] \
        .targets is None
    text = report.format_targets(report.summarise(_hand_made()))
    assert "gap 0.600 % <= 0.2 % MISSED" in text and "met on 0 of 1" in text


def test_tables():
    summaries = report.summarise(_hand_made() + [_rec("kmeans-1", 0, 7.0, 0.5, "b")])
    md = report.to_markdown(summaries).splitlines()
    assert md[0].count("|") == md[1].count("|") == md[2].count("|") == 6
    assert md[2] == ("| a (100, 2, 5) | 4.00 % / 1 s | - | 0.50 % / 3 s | 0.60 % / 1.4 s |")
    assert md[3].startswith("| b (100, 2, 5) | 0.00 % / 0.5 s | - | - | - |")
    text = report.format_set(summaries[0])
    assert "best known 100 (long, seed 0)" in text and "targets (learned)" in text
    docutils = pytest.importorskip("docutils.core")
    rst = report.to_rst(summaries)
    tree = docutils.publish_doctree(rst, settings_overrides={"report_level": 2,
                                                             "halt_level": 2})
    rows = tree.findall(lambda node: node.tagname == "row")
    assert len(list(rows)) == 1 + 5 + 1  # the header, a's five methods, b's one


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "anchors.png"
    report.plot(report.summarise(_hand_made()), str(path), title="t")
    assert path.stat().st_size > 0


# --------------------------------------------------------------------------- the command


def test_quick_run_end_to_end(fritzke_dir, tmp_path, capsys, monkeypatch):
    folder, *_ = fritzke_dir
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    monkeypatch.setitem(sys.modules, "faiss", None)  # a peer missing: skipped, said so
    # bkmeans is in the bench extra, not the test one: the run is the same without it
    bkmeans = importlib.util.find_spec("bkmeans") is not None
    out, md = tmp_path / "a.json", tmp_path / "a.md"
    argv = ["bench", "anchors", "--quick", "--datasets", "mixed2d-k60", "gmd5x5", "rice",
            "--threads", "1", "--fritzke-data", str(folder), "--out", str(out),
            "--markdown", str(md), "--rst", str(tmp_path / "a.rst")]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "methods needing faiss skipped" in printed
    assert "Fritzke's data sets skipped (rice-tiny)" in printed
    payload = json.loads(out.read_text())
    names = [m for m, method in runs.METHODS.items()
             if method.package not in ("faiss",) + (() if bkmeans else ("bkmeans",))]
    assert payload["methods"] == names and payload["machine"]["threads_used"]["torch"] == 1
    assert payload["versions"]["scikit-learn"] and payload["loadavg_after"]
    records = payload["records"]
    assert len(records) == 2 * len(names)  # 2 sets x methods x 1 seed
    assert {(r["dataset"], r["n"], r["k"]) for r in records} == {
        ("mixed2d-k60-tiny", data.TINY_ROWS, data.TINY_K), ("gmd5x5-tiny", 30, data.TINY_K)}
    for r in records:
        assert r["seconds"] > 0 and r["inertia"] > 0
        if r["method"] == "fast":  # KMeans' run, the same arithmetic for the inertia
            km = next(q for q in records if q["method"] == "kmeans-1"
                      and q["dataset"] == r["dataset"])
            assert r["inertia"] == pytest.approx(km["inertia"], rel=1e-9)
    assert "every target met on" in printed and md.read_text().count("\n") == 4
    # the same tables from the saved run
    again = tmp_path / "b.md"
    assert main(["bench", "anchors", "--from-json", str(out), "--markdown", str(again)]) == 0
    assert again.read_text() == md.read_text()


def test_only_fritzke_sets_and_no_folder_is_an_error(capsys, monkeypatch):
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    assert cli.main(["--datasets", "fritzke", "--quick"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("skformer bench anchors: error: no data set to run: Fritzke's")
    assert "--fritzke-data DIR" in err


@pytest.mark.parametrize("argv, message", [
    (["--datasets", "nope"], "unknown data set 'nope'"),
    (["--methods", "nope"], "unknown method 'nope'"),
    (["--seeds", "0"], "--seeds must be >= 1"),
    (["--threads", "0"], "--threads must be >= 1"),
])
def test_cli_rejects_bad_options(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_cli_from_json_of_something_else(tmp_path, capsys):
    path = tmp_path / "x.json"
    path.write_text("{}")
    assert cli.main(["--from-json", str(path)]) == 2
    assert "not a saved run" in capsys.readouterr().err


def test_registered_as_a_bench_command():
    from skformer._cli_bench import _BENCHMARKS

    assert _BENCHMARKS["anchors"][0] == "benchmarks.anchors"
