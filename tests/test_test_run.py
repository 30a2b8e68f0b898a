"""The test run itself: its summary says why cases are deselected (issue 21)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_summary_says_why_cases_are_deselected():
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/sklearn_suite", "--collect-only", "-q",
         "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    assert "228 deselected" in out or "deselected:" in out
    summary = out[out.index("skformer: cases not run or expected to fail, by reason"):]
    assert "MiniBatchKMeans cases of scikit-learn's KMeans suite" in summary
    assert "skformer does not reimplement MiniBatchKMeans" in summary
