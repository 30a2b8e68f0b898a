"""Every Python code block of README.md runs as written (so that the README cannot rot),
its set-up commands say what they install, it stays a page a newcomer reads (short, the
install line first, one table of results, links to the docs), and the figures on the
snippet's data (docs/benchmarks.rst, "From the README") are those of the recorded run of
the command that measures them.

Each ```python block is executed on its own, in a fresh namespace, as a reader would paste
it into a new interpreter (tests/test_docs_blocks.py does the same for docs/*.rst).
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SNIPPET_RESULT = ROOT / "benchmarks" / "results" / "readme_snippet.json"
# Where the snippet's figures moved when the README was cut to a page (issue 41).
SNIPPET_PAGE = ROOT / "docs" / "benchmarks.rst"


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
    assert len(_blocks()) >= 1


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


# ------------------------------------------------------------ a page a newcomer reads


# What a newcomer wants first (issue 41): what it is, the install line, a short example,
# one table of results against KMeans and the other methods, then links to the docs.
MAX_BYTES = 7000
METHODS = ["KMeans (n_init=1)", "KMeans (n_init=10)", "Breathing K-Means",
           "TransformerKMeans (learned_starts=1)"]


def test_the_readme_fits_on_about_three_screens():
    assert len(README.read_bytes()) < MAX_BYTES


def test_the_install_line_comes_first():
    text = README.read_text(encoding="utf-8")
    before = text[:text.index("pip install torch==2.13.0 && pip install . && skformer demo")]
    assert len(before.split()) <= 100


def _table(text: str) -> list:
    """The cells of the README's first markdown table, one list per line."""
    lines = [line.strip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_readme_has_one_table_of_results_against_the_other_methods():
    text = README.read_text(encoding="utf-8")
    header, rule, *rows = _table(text)
    assert header[1:] == METHODS
    assert len(rows) >= 3
    for row in rows:
        assert len(row) == len(header), row
        for cell in row[1:]:  # gap to the best known inertia (%) / time (s)
            assert re.fullmatch(r"(?:[\d.]+|–) / (?:[\d.]+|–)", cell), (row[0], cell)
    after = " ".join(text[text.index(rule[0]):].split())
    assert "Made by `skformer bench anchors" in after
    assert "[docs/benchmarks.rst](docs/benchmarks.rst)" in after


def _shape(name: str) -> str:
    return re.search(r"\(\d+, \d+, \d+\)", name)[0]


def test_the_readme_table_is_the_recorded_run():
    """Each row of the README's table is the recorded run's (benchmarks/results/anchors.*):
    a data set's row as the command wrote it, Fritzke's sets as medians over them."""
    import statistics
    from collections import defaultdict

    _, _, *rows = _table(README.read_text(encoding="utf-8"))
    _, _, *recorded = _table((ROOT / "benchmarks/results/anchors.md").read_text(encoding="utf-8"))
    by_shape = {_shape(r[0]): r[1:] for r in recorded}
    run = json.loads((ROOT / "benchmarks/results/anchors.json").read_text(encoding="utf-8"))
    best: dict = defaultdict(lambda: float("inf"))
    for r in run["records"]:
        best[r["dataset"]] = min(best[r["dataset"]], r["inertia"])
    fritzke = [d["dataset"] for d in run["datasets"] if d["group"] == "fritzke"]
    for row in rows:
        if "Fritzke" not in row[0]:
            want = [re.sub(r" %| s", "", c) for c in by_shape[_shape(row[0])]]
            got = [re.sub(r"\.?0+(?= |$)", "", c) for c in row[1:]]
            assert got == [re.sub(r"\.?0+(?= |$)", "", c) for c in want], row[0]
            continue
        assert len(fritzke) == 14
        for cell, method in zip(row[1:], ("kmeans-1", "kmeans-10", "bkm", "learned"),
                                strict=True):
            gaps, times = defaultdict(list), defaultdict(list)
            for r in run["records"]:
                if r["method"] == method and r["dataset"] in fritzke:
                    gaps[r["dataset"]].append(r["inertia"] / best[r["dataset"]] - 1)
                    times[r["dataset"]].append(r["seconds"])
            gap = statistics.median(statistics.median(v) for v in gaps.values())
            seconds = statistics.median(statistics.median(v) for v in times.values())
            assert cell == f"{100 * gap:.2f} / {seconds:.2f}", method


def test_the_readme_s_links_lead_to_files_of_the_repository():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert any(target.startswith("docs/") for target in targets)
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert not missing


# ------------------------------------------------- figures on the snippet's data


def _flat(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").replace("`", "").split())


def test_the_learned_mode_figures_are_those_of_the_recorded_run():
    from benchmarks.readme_snippet import DATA

    text = _flat(SNIPPET_PAGE)
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
    assert match, "the sentence on the snippet's data changed: update this test"
    kept, last_seed, below, ratio, low, high = match.groups()
    assert summary["seeds"] == list(range(int(last_seed) + 1))
    assert int(kept) == summary["learned_kept"]
    assert below == f"{summary['learned_below_kmeans_percent']:.1f}"
    assert summary["learned_never_above_kmeans"]
    assert ratio == f"{summary['time_learned_over_fast_median']:.1f}"
    assert low == f"{summary['time_learned_over_fast_min']:.1f}"
    assert high == f"{summary['time_learned_over_fast_max']:.1f}"

    match = re.search(r"KMeans\(n_init=3\) ended 0.9 % lower then; now, in ([\d.]+) of one "
                      r"learned fit's time, it ends level with it, ([\d.]+) % apart on "
                      r"average", text)
    assert match
    assert match[1] == f"{summary['time_kmeans_n_init3_over_learned_median']:.2f}"
    assert match[2] == f"{abs(summary['kmeans_n_init3_below_learned_percent']):.1f}"


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
