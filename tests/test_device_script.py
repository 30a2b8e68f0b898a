"""``skformer bench device`` (benchmarks/device.py), the one prepared command that runs
every GPU measurement: CI has no GPU, so it runs here on the CPU at toy sizes, every
part, and its records must come out whole."""

import json

import pytest

pytest.importorskip("benchmarks.device")


def test_every_part_runs_at_a_tiny_size(tmp_path):
    from benchmarks.device import main

    assert main(["--tiny", "--device", "cpu", "--out-dir", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["parts"]) == {"equality", "batch", "kmeans", "cost"}
    assert all(v.startswith("done") for v in summary["parts"].values()), summary
    rows = json.loads((tmp_path / "equality.json").read_text())
    # on the same device, CPU against CPU: the same numbers
    assert all(r["same_labels"] == 1.0 and r["centres_max_rel_diff"] == 0.0 for r in rows)
    batch = json.loads((tmp_path / "batch.json").read_text())["records"]
    assert {"batch_s", "batch_learned_s", "best_loop_s"} <= set(batch[0])
    for part in ("kmeans", "cost"):
        assert (tmp_path / f"{part}.json").stat().st_size > 0


def test_a_part_past_the_budget_is_skipped(tmp_path):
    from benchmarks.device import main

    assert main(["--tiny", "--device", "cpu", "--out-dir", str(tmp_path), "--budget", "0",
                 "--parts", "equality", "cost"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["parts"]["cost"].startswith("skipped")
