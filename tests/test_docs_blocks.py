"""Every Python code block of the documentation pages (``docs/*.rst``) runs as written, so
that the pages cannot rot: ``.. code-block:: python`` blocks, and ``>>>`` examples (doctest
blocks, or literal blocks after ``::``) whose printed results are checked as doctest does.

Each block runs on its own, in a fresh namespace, in an empty folder, with its own
``SKFORMER_CACHE_DIR``, as a reader would paste it into a new interpreter (as
``tests/test_readme.py`` runs the README's blocks). A block that imports an optional
package (dask) is skipped where that package is missing. A block that is too slow for
every run is marked in the page by an rst comment on the line above its directive::

    .. doc-test: slow

and runs as a ``slow`` test (deselect with ``-m "not slow"``).
"""

import ast
import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PYTHON = {"python", "python3", "py", "pycon"}
DIRECTIVE = re.compile(r"^(?P<indent> *)\.\. (?:code-block|code|sourcecode)::(?P<lang>.*)$")
MARK = re.compile(r"^ *\.\. doc-test: *(?P<mark>\w+)")
MARKS = {"slow"}
# Packages of the extras (pip install ".[dask]"...) that a block may need: missing, it skips.
OPTIONAL = {"dask", "distributed", "matplotlib", "pandas", "faiss", "bkmeans"}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _body(lines: list, start: int, indent: int) -> tuple:
    """The lines indented deeper than ``indent`` from ``start`` on (options skipped), dedented;
    and the index after them."""
    i = start
    while i < len(lines) and lines[i].strip().startswith(":") and _indent(lines[i]) > indent:
        i += 1  # the directive's options
    body = []
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
        body.append(lines[i])
        i += 1
    while body and not body[-1].strip():
        body.pop()
    while body and not body[0].strip():
        body.pop(0)
    cut = min((_indent(line) for line in body if line.strip()), default=0)
    return "\n".join(line[cut:] for line in body) + "\n", i


def extract(text: str) -> list:
    """``(line, code, kind, mark)`` for each Python block of an rst text: kind ``"code"`` for
    a code directive, ``"doctest"`` for ``>>>`` examples; line counts from 1."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        line = lines[i]
        mark = None
        for previous in reversed(lines[:i]):
            if previous.strip():
                found = MARK.match(previous)
                mark = found["mark"] if found else None
                break
        directive = DIRECTIVE.match(line)
        if directive:
            code, end = _body(lines, i + 1, len(directive["indent"]))
            lang = directive["lang"].strip().lower()
            if lang in PYTHON and code.strip():
                kind = "doctest" if code.lstrip().startswith(">>>") else "code"
                blocks.append((i + 1, code, kind, mark))
            i = end
            continue
        if line.rstrip().endswith("::") and not line.lstrip().startswith(".. "):
            code, end = _body(lines, i + 1, _indent(line))  # a literal block
            if code.lstrip().startswith(">>>"):
                blocks.append((i + 2, code, "doctest", mark))
            i = max(end, i + 1)
            continue
        if line.lstrip().startswith(">>>"):  # a doctest block: a paragraph of examples
            end = i
            while end < len(lines) and lines[end].strip():
                end += 1
            code = "\n".join(x[_indent(line):] for x in lines[i:end]) + "\n"
            blocks.append((i + 1, code, "doctest", mark))
            i = end
            continue
        i += 1
    return blocks


def _params() -> list:
    params = []
    for path in sorted(DOCS.glob("*.rst")):
        for line, code, kind, mark in extract(path.read_text(encoding="utf-8")):
            name = f"docs/{path.name}:{line}"
            marks = [pytest.mark.slow] if mark == "slow" else []
            params.append(pytest.param(name, code, kind, id=name, marks=marks))
    return params


def _imports(code: str) -> set:
    tree = ast.parse(doctest.script_from_examples(code) if ">>>" in code else code)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def _close_clusters(namespace: dict) -> None:
    """Close the dask clients and clusters a block made (they would outlive the test)."""
    for value in list(namespace.values()):
        module = type(value).__module__ or ""
        if module.startswith("distributed") and callable(getattr(value, "close", None)):
            value.close()


@pytest.mark.parametrize("name, code, kind", _params())
def test_docs_block_runs(name, code, kind, tmp_path, monkeypatch):
    for module in sorted(_imports(code) & OPTIONAL):
        pytest.importorskip(module, reason=f"{name} needs {module}")
    import torch

    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    threads = torch.get_num_threads()  # a block may set them (docs/reliability.rst)
    namespace = {"__name__": "__main__"}
    try:
        if kind == "doctest":
            parser = doctest.DocTestParser()
            test = parser.get_doctest(code, namespace, name, name, 0)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS
                                           | doctest.NORMALIZE_WHITESPACE)
            runner.run(test, clear_globs=False)
            assert runner.failures == 0, f"{name}: {runner.failures} example(s) failed"
        else:
            exec(compile(code, name, "exec"), namespace)
    finally:
        _close_clusters(namespace)
        torch.set_num_threads(threads)


# ------------------------------------------------------------------- the extraction itself


def test_every_python_directive_of_the_docs_is_collected():
    directives = sum(len(re.findall(r"^ *\.\. (?:code-block|code|sourcecode):: *"
                                    r"(?:python3?|py|pycon) *$",
                                    path.read_text(encoding="utf-8"), re.M))
                     for path in DOCS.glob("*.rst"))
    assert directives >= 10
    assert sum(kind == "code" for _, _, kind in (p.values for p in _params())) == directives


def test_the_extraction_finds_each_kind_of_block():
    text = """Title
=====

.. code-block:: python
   :caption: one

   x = 1

   y = x + 1

.. doc-test: slow

.. code-block:: python

   z = 3

.. code-block:: bash

   echo no

An example::

   >>> 1 + 1
   2

>>> print("a doctest block")
a doctest block

A literal block::

   not python
"""
    blocks = extract(text)
    assert [(kind, mark) for _, _, kind, mark in blocks] == [
        ("code", None), ("code", "slow"), ("doctest", None), ("doctest", None)]
    assert blocks[0][1] == "x = 1\n\ny = x + 1\n"
    assert blocks[0][0] == 4
    assert blocks[2][1] == ">>> 1 + 1\n2\n"
    assert blocks[3][1] == '>>> print("a doctest block")\na doctest block\n'


def test_the_marks_in_the_docs_are_known():
    for path in DOCS.glob("*.rst"):
        for mark in MARK.findall(path.read_text(encoding="utf-8")):
            assert mark in MARKS, f"{path.name}: unknown '.. doc-test: {mark}'"


# ------------------------------------------------------------ what the pages state


def _pages() -> list:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.rst")), *sorted((ROOT / "examples")
                                                                   .glob("*.py"))]


def test_the_first_fit_compile_time_is_stated_in_one_place():
    # Issue 41: the README, the quick start and the benchmarks page gave it three ways. The
    # figures live in docs/benchmarks.rst, "The first fit's compile"; other pages link there.
    figure = re.compile(r"compil[^.;]*?\d+(?:\.\d+)? ?(?:s|seconds?)\b", re.I)
    found = []
    for path in _pages():
        if path.name == "benchmarks.rst":
            continue
        text = " ".join(path.read_text(encoding="utf-8").split())
        found += [f"{path.relative_to(ROOT)}: {m[0]}" for m in figure.finditer(text)]
    assert not found, "\n".join(found)
    benchmarks = (DOCS / "benchmarks.rst").read_text(encoding="utf-8")
    assert ".. _first-fit-compile:\n\nThe first fit's compile\n" in benchmarks


def test_the_learned_mode_changes_little_on_the_demo_s_bundled_data_sets():
    # What the quick start, transformer_kmeans.rst and examples/plot_quickstart.py say of
    # them, rather than which run the demo keeps on each (issue 41: they said the learned
    # run is dropped on iris, where the demo keeps it).
    import numpy as np

    from skformer import TransformerKMeans
    from skformer.cli import _load_dataset

    for name in ("iris", "wine", "breast_cancer", "digits"):
        X, y = _load_dataset(name)
        k = len(np.unique(y))
        fast = TransformerKMeans(k, random_state=0).fit(X)
        learned = TransformerKMeans(k, random_state=0, learned_starts=1).fit(X)
        assert learned.inertia_ == pytest.approx(fast.inertia_, rel=0.01), name
