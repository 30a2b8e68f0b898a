"""The command line: the demo, the benchmark wrapper, argument errors."""

import json

import pytest

from skformer.cli import main


def test_demo_prints_a_comparison(capsys):
    assert main(["demo", "--dataset", "wine", "--embedding", "onehot"]) == 0
    out = capsys.readouterr().out
    assert "ExactLloydTransformer(onehot)" in out and "KMeans(lloyd)" in out
    assert "inertia ratio transformer / KMeans" in out


def test_demo_reports_too_many_clusters(capsys):
    assert main(["demo", "--n-clusters", "500"]) == 2
    assert "n_samples=150 should be >= n_clusters=500." in capsys.readouterr().err


def test_bench_exact_small(tmp_path, capsys):
    out = tmp_path / "bench.json"
    args = ["bench", "exact", "--n", "3000", "--k", "4", "--reps", "1", "--max-iter", "4"]
    assert main([*args, "--no-memory", "--out", str(out)]) == 0
    (record,) = json.loads(out.read_text())
    assert record["n"] == 3000 and record["k"] == 4 and record["iterations"] == 4
    assert record["iter_time_ratio"] > 0 and record["fit_time_ratio"] > 0
    assert "| 3,000 | 4 |" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["demo", "--n-clusters", "0"], ["bench", "nope"], []])
def test_bad_arguments_exit_2(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
