"""``python -m benchmarks.side_by_side``: two checkouts timed side by side. Its arithmetic on
made-up rounds, and one quick run with the repository on both sides (timings are
measured, never asserted)."""

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("benchmarks.side_by_side")

from benchmarks.side_by_side import SIDES, cases, main, summarise  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _child(ours_ms, kmeans_ms, n_iter=5):
    return {"cases": {"a": {"ours_ms": ours_ms, "kmeans_ms": kmeans_ms,
                            "ours_n_iter": n_iter}}}


def test_summarise_takes_medians_of_paired_ratios():
    rounds = [
        # the machine is twice as slow for the candidate's child: KMeans shows it
        {"baseline": _child([10, 12, 11], [10, 10, 10]),
         "candidate": _child([22, 20, 24], [20, 20, 20])},
        {"baseline": _child([10, 10, 10], [10, 10, 10]),
         "candidate": _child([11, 11, 11], [10, 10, 10])},
        {"baseline": _child([30, 30, 30], [10, 10, 10]),
         "candidate": _child([30, 30, 30], [10, 10, 10])},
    ]
    (s,) = summarise(["a"], rounds)
    assert s["per_round"]["candidate_over_baseline"] == pytest.approx([2.0, 1.1, 1.0])
    assert s["candidate_over_baseline"] == pytest.approx(1.1)
    assert s["candidate_over_baseline_range"] == pytest.approx([1.0, 2.0])
    assert s["per_round"]["via_kmeans"] == pytest.approx([1.0, 1.1, 1.0])
    assert s["candidate_over_baseline_via_kmeans"] == pytest.approx(1.0)
    assert s["baseline_over_kmeans"] == pytest.approx(1.1)
    assert s["candidate_over_kmeans"] == pytest.approx(1.1)
    assert s["baseline_ms"] == 11 and s["candidate_ms"] == 22
    assert s["outside_tolerance"] == ["candidate_over_baseline"] and s["flagged"]


def test_summarise_flags_different_iterations_alone():
    rounds = [{"baseline": _child([10], [10], n_iter=5),
               "candidate": _child([10], [10], n_iter=6)}]
    (s,) = summarise(["a"], rounds)
    assert s["outside_tolerance"] == [] and not s["same_iterations"] and s["flagged"]


def test_a_folder_without_skformer_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--baseline", str(tmp_path), "--candidate", str(ROOT), "--quick"])
    assert exc.value.code == 2
    assert "no skformer/__init__.py" in capsys.readouterr().err


def test_quick_run_of_the_repository_against_itself(tmp_path, capsys):
    out = tmp_path / "side_by_side.json"
    assert main(["--baseline", str(ROOT), "--candidate", str(ROOT), "--quick",
                 "--repeat", "2", "--reps", "1", "--threads", "1", "--out", str(out)]) == 0
    payload = json.loads(out.read_text())
    selected = cases(quick=True)
    assert {c["bench"] for c in selected} == {"exact", "kmeans", "batch"}
    assert [c["name"] for c in payload["cases"]] == [c["name"] for c in selected]
    assert [r["order"] for r in payload["rounds"]] == [list(SIDES), list(SIDES[::-1])]
    for side in SIDES:
        checkout = payload["checkouts"][side]
        assert checkout["folder"] == str(ROOT)
        assert Path(checkout["skformer_file"]).is_relative_to(ROOT)
        assert checkout["openmp_threads"] == checkout["torch_threads"] == 1
    assert [s["case"] for s in payload["summaries"]] == [c["name"] for c in selected]
    for s in payload["summaries"]:
        for key in ("candidate_over_baseline", "candidate_over_baseline_via_kmeans",
                    "baseline_over_kmeans", "candidate_over_kmeans", "baseline_ms",
                    "candidate_ms"):
            assert isinstance(s[key], float) and math.isfinite(s[key]) and s[key] > 0, key
        lo, hi = s["candidate_over_baseline_range"]
        assert 0 < lo <= s["candidate_over_baseline"] <= hi
        assert len(s["per_round"]["candidate_over_baseline"]) == 2
        assert s["same_iterations"]  # the same code, data and starts on both sides
    table = capsys.readouterr().out
    assert "| candidate / baseline (min-max) |" in table
    assert all(f"| {c['name']} |" in table for c in selected)
