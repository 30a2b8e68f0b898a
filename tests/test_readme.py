"""Every Python code block of README.md runs as written (so that the README cannot rot).

Each ```python block is executed on its own, in a fresh namespace, as a reader would paste
it into a new interpreter.
"""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


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
