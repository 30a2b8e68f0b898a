"""``skformer bench batch`` (benchmarks/batch): its data, its scoring and one tiny run.
Timings are measured, never asserted."""

import json

import numpy as np
import pytest

pytest.importorskip("benchmarks.batch")

from benchmarks.batch import main  # noqa: E402
from benchmarks.batch.data import make_batch  # noqa: E402
from benchmarks.batch.runs import Run, literal_inertia, run_method  # noqa: E402


def test_ragged_batches_keep_at_least_half_and_k_points():
    batch = make_batch(50, 40, 3, 30, ragged=True, seed=1)
    assert batch.lengths.min() >= 30 and batch.lengths.max() <= 40
    assert (batch.X[np.arange(40)[None, :] >= batch.lengths[:, None]] == 0).all()
    assert batch.problem(3).shape == (batch.lengths[3], 3)


def test_literal_inertia_scores_labels_and_centres():
    batch = make_batch(2, 4, 1, 2)
    batch.X[:] = np.array([[[0.0], [1.0], [10.0], [12.0]]] * 2, dtype=np.float32)
    run = Run(0.0, [np.array([[0.5], [11.0]])] * 2, [np.array([0, 0, 1, 1])] * 2)
    np.testing.assert_allclose(literal_inertia(batch, run), [2.5, 2.5])


def test_the_loop_and_the_batch_score_alike():
    batch = make_batch(6, 60, 2, 3, seed=2)
    loop = literal_inertia(batch, run_method("loop", batch, 6, 0))
    ours = literal_inertia(batch, run_method("batch", batch, 6, 0))
    assert ours.mean() / loop.mean() == pytest.approx(1.0, abs=0.2)


def test_a_tiny_run_writes_its_records(tmp_path, capsys):
    out = tmp_path / "batch.json"
    assert main(["--shapes", "8,30,2,3", "--reps", "1", "--peer-problems", "4",
                 "--out", str(out)]) == 0
    records = json.loads(out.read_text())["records"]
    assert [r["ragged"] for r in records] == [False, True]
    for r in records:
        assert r["batch_speedup"] > 0 and r["batch_inertia_ratio"] > 0
        assert r["best_loop_s"] == min(r["loop_s"], r["joblib_s"])
    assert "| (8, 30, 2, 3) | no |" in capsys.readouterr().out


def test_no_peers_runs_the_loops_and_the_batch_only(tmp_path):
    out = tmp_path / "batch.json"
    assert main(["--shapes", "8,30,2,3", "--reps", "1", "--no-ragged", "--no-peers",
                 "--out", str(out)]) == 0
    (record,) = json.loads(out.read_text())["records"]
    assert not any(key.startswith(("torch_kmeans", "fast_pytorch")) for key in record)
    assert record["batch_speedup"] > 0
