"""Every Python code block of README.md runs as written (so that the README cannot rot),
its set-up commands say what they install, and its figures on the first snippet's data are
those of the recorded run of the command that measures them.

Each ```python block is executed on its own, in a fresh namespace, as a reader would paste
it into a new interpreter.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SNIPPET_RESULT = ROOT / "benchmarks" / "results" / "readme_snippet.json"


def _blocks() -> list:
    text = README.read_text(encoding="utf-8")
    blocks = []
    for match in re.finditer(r"^( *)```python\n(.*?)^\1```", text, re.S | re.M):
        indent = match.group(1)
        code = "".join(line.removeprefix(indent)
                       for line in match.group(2).splitlines(keepends=True))
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(pytest.param(code, line, id=f"README.md:{line}"))
    return blocks


def test_the_readme_has_python_blocks():
    assert len(_blocks()) >= 3


@pytest.mark.parametrize("code, line", _blocks())
def test_readme_block_runs(code, line, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path / "cache"))  # nothing pretrains
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"README.md:{line}", "exec"), {"__name__": "__main__"})
    assert not (tmp_path / "cache").exists()


# ------------------------------------------------------------------------- set-up commands


def _section(text: str, title: str) -> str:
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start:] if end < 0 else text[start:end]


@pytest.mark.parametrize("path, title, fence", [
    ("README.md", "## Quick start", r"```bash\n(.*?)```"),
    ("docs/quickstart.rst", "Installation\n", r"\.\. code-block:: bash\n\n(.*?)\n\n"),
])
def test_the_quick_start_says_what_the_torch_pin_installs(path, title, fence):
    # Issue 32: from the package index alone the pin is the CUDA build with its nvidia-*
    # packages; the CPU build comes from PyTorch's own index.
    text = _section((ROOT / path).read_text(encoding="utf-8"), title)
    commands = [" ".join(c.split()) for c in re.findall(fence, text, re.S)]
    assert commands[:2] == ["pip install torch==2.13.0 && pip install . && skformer demo",
                            'pip install torch==2.13.0 && pip install ".[test]" && pytest']
    flat = " ".join(text.replace("`", "").split())
    assert "pip install torch==2.13.0 installs the CUDA build" in flat
    assert "nvidia-*" in flat
    assert ("pip install torch --index-url https://download.pytorch.org/whl/cpu instead of "
            "pip install torch==2.13.0") in flat


# ------------------------------------------------- figures on the first snippet's data


def _flat_readme() -> str:
    return " ".join(README.read_text(encoding="utf-8").replace("`", "").split())


def test_the_learned_mode_figures_are_those_of_the_recorded_run():
    from benchmarks.readme_snippet import DATA

    text = _flat_readme()
    recorded = json.loads(SNIPPET_RESULT.read_text(encoding="utf-8"))
    summary = recorded["summary"]
    assert recorded["data"] == DATA
    assert ("make_blobs(n_samples=2000, n_features=8, centers=10, cluster_std=4.0, "
            "random_state=1)") in text
    assert ("python -m benchmarks.readme_snippet (recorded in "
            "benchmarks/results/readme_snippet.json)") in text

    match = re.search(
        r"the learned run was kept for (\d+) of the seeds 0 to (\d+), and the inertia was "
        r"([\d.]+) % below KMeans' on average \(at most KMeans' for every seed\), at "
        r"([\d.]+) times the fast mode's time \(the median over the seeds of each seed's "
        r"paired ratio, ([\d.]+) to ([\d.]+);", text)
    assert match, "the README's sentence on the snippet's data changed: update this test"
    kept, last_seed, below, ratio, low, high = match.groups()
    assert summary["seeds"] == list(range(int(last_seed) + 1))
    assert int(kept) == summary["learned_kept"]
    assert below == f"{summary['learned_below_kmeans_percent']:.1f}"
    assert summary["learned_never_above_kmeans"]
    assert ratio == f"{summary['time_learned_over_fast_median']:.1f}"
    assert low == f"{summary['time_learned_over_fast_min']:.1f}"
    assert high == f"{summary['time_learned_over_fast_max']:.1f}"

    match = re.search(r"KMeans\(n_init=3\) took less time than one learned fit and ended "
                      r"([\d.]+) % lower on average", text)
    assert match
    assert match[1] == f"{summary['kmeans_n_init3_below_learned_percent']:.1f}"
    assert summary["time_kmeans_n_init3_over_learned_median"] < 1


def test_the_command_that_records_them_runs(tmp_path, capsys):
    from benchmarks import readme_snippet

    out = tmp_path / "snippet.json"
    assert readme_snippet.main(["--seeds", "2", "--reps", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    recorded = json.loads(SNIPPET_RESULT.read_text(encoding="utf-8"))
    assert result.keys() == recorded.keys()
    assert result["summary"].keys() == recorded["summary"].keys()
    for new, old in zip(result["records"], recorded["records"], strict=False):
        assert new.keys() == old.keys()
        for key in (k for k in old if k.startswith("inertia_")):
            assert new[key] == pytest.approx(old[key], rel=1e-6), (new["seed"], key)
    assert "learned run kept for" in capsys.readouterr().out
