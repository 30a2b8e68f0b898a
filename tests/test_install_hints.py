"""Install hints install this package's dependencies, never the index's ``skformer``
(issue 32).

``skformer`` on the public package index is an unrelated project, so a hint such as
``pip install skformer[plot]`` installs someone else's code. Hints name the extra's own
packages (``pip install matplotlib``) or this checkout (``pip install ".[plot]"``).
"""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLACES = ["skformer", "benchmarks", "docs", "examples", "README.md", "pyproject.toml"]
SUFFIXES = {".py", ".rst", ".md", ".txt", ".toml", ".cfg", ".ini"}
# ``pip install skformer``, ``pip install -U "skformer[plot]"``, ``pip install 'skformer'``...
WRONG = re.compile(r"pip3?\s+install\s+(?:-\S+\s+)*[\"']?skformer\b")


def _files():
    for place in PLACES:
        path = ROOT / place
        if path.is_file():
            yield path
        else:
            yield from (p for p in sorted(path.rglob("*"))
                        if p.suffix in SUFFIXES and "_build" not in p.parts)


def test_the_pattern_finds_the_wrong_hints():
    for hint in ["pip install skformer[plot]", 'pip install "skformer[dask]"',
                 "pip install -U skformer", "pip3 install 'skformer[plot]'"]:
        assert WRONG.search(hint), hint
    for hint in ['pip install ".[plot]"', "pip install -e .", "pip install matplotlib",
                 'pip install "dask[array,distributed]"']:
        assert not WRONG.search(hint), hint


def test_no_hint_installs_the_unrelated_skformer_of_the_package_index():
    wrong = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in WRONG.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            wrong.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)}")
    assert not wrong, "\n".join(wrong)


# ------------------------------------------------- a probe's --plot without matplotlib


def test_a_probe_without_matplotlib_fails_before_any_work_with_the_hint(monkeypatch,
                                                                        tmp_path):
    from benchmarks.probes import multistep

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"requires matplotlib\. "
                                          r"Install with: pip install matplotlib$"):
        multistep.main(["--plot", str(tmp_path / "x.png")])


def test_the_cli_reports_a_missing_matplotlib_on_one_line(monkeypatch, tmp_path, capsys):
    from skformer.cli import main

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    status = main(["probe", "multistep", "--plot", str(tmp_path / "x.png")])
    err = capsys.readouterr().err
    assert status != 0
    assert err.strip().splitlines() == [
        "skformer probe: error: Plotting a probe requires matplotlib. "
        "Install with: pip install matplotlib"]
    assert not (tmp_path / "x.png").exists()
