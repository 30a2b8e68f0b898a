"""The test run writes nothing to the user's own caches (issue 32).

``tests/conftest.py::session_caches`` points ``SKFORMER_CACHE_DIR`` and ``XDG_CACHE_HOME``
at a folder of the run; these tests pretrain a model into "the cache", in this process and
in a CLI subprocess, and check where it landed. The shape ``(2, 2, "none", "ne")`` is used
by no other test, and its file is removed afterwards, so that no other test of the session
loads a model trained for one step.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skformer.store import cache_dir, model_filename

NAME = model_filename(2, 2, "none", "ne")


@pytest.fixture
def user_cache(session_caches, monkeypatch):
    """The user's own model cache (as before the session) and its files' state."""
    with monkeypatch.context() as mp:
        for name, value in session_caches.saved.items():
            if value is None:
                mp.delenv(name, raising=False)
            else:
                mp.setenv(name, value)
        folder = cache_dir()
    assert not folder.resolve().is_relative_to(session_caches.root.resolve())
    return folder


def _state(folder: Path) -> dict:
    if not folder.is_dir():
        return {}
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}


@pytest.fixture
def fresh_model_path(session_caches):
    path = cache_dir() / NAME
    assert path.resolve().is_relative_to(session_caches.root.resolve())
    path.unlink(missing_ok=True)
    yield path
    path.unlink(missing_ok=True)


def test_the_cache_of_the_run_is_temporary(session_caches):
    assert cache_dir() == session_caches.root / "skformer"
    assert os.environ["XDG_CACHE_HOME"] == str(session_caches.root / "xdg")


def test_pretraining_in_process_writes_to_the_cache_of_the_run(user_cache,
                                                               fresh_model_path):
    from skformer.store import pretrain

    before = _state(user_cache)
    pretrain(2, 2, embedding="none", loss="ne", preset="fast", steps=1, progress=False)
    assert fresh_model_path.is_file()
    assert _state(user_cache) == before


def test_a_cli_subprocess_writes_to_the_cache_of_the_run(user_cache, fresh_model_path):
    before = _state(user_cache)
    proc = subprocess.run(
        [sys.executable, "-m", "skformer", "pretrain", "--d", "2", "--k", "2",
         "--embedding", "none", "--loss", "ne", "--preset", "fast", "--steps", "1",
         "--no-progress"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert str(fresh_model_path) in proc.stdout
    assert fresh_model_path.is_file()
    assert _state(user_cache) == before
