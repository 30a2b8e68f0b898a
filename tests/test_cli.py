"""The command line: the demo, cluster, the benchmark wrapper, argument errors."""

import json

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from skformer import TransformerKMeans
from skformer.cli import main


def test_demo_prints_a_comparison(capsys):
    assert main(["demo", "--dataset", "wine", "--embedding", "onehot"]) == 0
    out = capsys.readouterr().out
    assert "ExactLloydTransformer(onehot)" in out and "KMeans(lloyd)" in out
    assert "TransformerKMeans(onehot)" in out and "learned steps, then" in out
    assert "inertia ratio TransformerKMeans(onehot) / KMeans" in out


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
        ("1,2\n3,x\n", 1, "cannot read"),
        ("1,2\n3,4\n", 3, "n_samples=2 should be >= n_clusters=3."),
        ("1,2\nnan,4\n", 1, "Input X contains NaN"),
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
