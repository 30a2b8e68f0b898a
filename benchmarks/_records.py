"""Writing a benchmark's records."""

from __future__ import annotations

import json

__all__ = ["write_records"]


def write_records(path: str | None, payload: dict) -> None:
    """``payload`` as JSON into ``path`` (nothing when ``path`` is None): a benchmark
    rewrites it after every case, so an interrupted run keeps what it measured."""
    if path:
        with open(path, "w") as f:
            json.dump(payload, f, indent=1)
