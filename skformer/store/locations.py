"""Where models are: file names, the user cache, the shipped weights and their index.

A model is keyed by ``(d, k, embedding, loss)`` and stored as
``d{d}_k{k}_{embedding}_{loss}.safetensors``: shipped in the package (``skformer/weights/``,
described by its ``index.json``) or in the user cache (``$SKFORMER_CACHE_DIR``, else
``$XDG_CACHE_HOME/skformer``, else ``~/.cache/skformer``). Shipped models come first.
"""

from __future__ import annotations

import functools
import json
import numbers
import os
import tempfile
from pathlib import Path

from .format import ModelStoreError, _atomic_write, read_model

__all__ = ["cache_dir", "find_model", "index_entry", "model_filename", "shipped_dir",
           "shipped_index", "write_index", "write_problem"]

EMBEDDINGS = ("binary", "onehot", "none")
LOSSES = ("l2", "ne")


# --------------------------------------------------------------------------- validation


def _check_model_key(n_features, n_clusters, embedding: str, loss: str) -> None:
    for name, value in (("n_features", n_features), ("n_clusters", n_clusters)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    if embedding not in EMBEDDINGS:
        raise ValueError(f"embedding must be one of {EMBEDDINGS}, got {embedding!r}.")
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")


# ---------------------------------------------------------------------------- locations


def model_filename(n_features: int, n_clusters: int, embedding: str = "binary",
                   loss: str = "l2") -> str:
    """File name of a model: ``d{d}_k{k}_{embedding}_{loss}.safetensors``.

    Examples
    --------
    >>> model_filename(32, 10)
    'd32_k10_binary_l2.safetensors'
    """
    _check_model_key(n_features, n_clusters, embedding, loss)
    return f"d{int(n_features)}_k{int(n_clusters)}_{embedding}_{loss}.safetensors"


def cache_dir() -> Path:
    """The user cache: ``$SKFORMER_CACHE_DIR``, else ``$XDG_CACHE_HOME/skformer``,
    else ``~/.cache/skformer``. The folder is not created here.

    Examples
    --------
    >>> cache_dir().name != ""
    True
    """
    if os.environ.get("SKFORMER_CACHE_DIR"):
        return Path(os.environ["SKFORMER_CACHE_DIR"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "skformer"
    return Path.home() / ".cache" / "skformer"


def shipped_dir() -> Path:
    """The folder of the weights shipped with the package (it may not exist)."""
    return Path(__file__).resolve().parent.parent / "weights"


def shipped_index() -> list[dict]:
    """Entries of ``skformer/weights/index.json``; empty if nothing is shipped.

    Each entry has ``file``, ``n_features``, ``n_clusters``, ``embedding``, ``loss``,
    ``val_relative``, ``training`` (see :func:`index_entry`) and, for models measured on
    held-out tasks, ``heldout``. The file is read once per modification.

    Examples
    --------
    >>> isinstance(shipped_index(), list)
    True
    """
    path = shipped_dir() / "index.json"
    if not path.is_file():
        return []
    return [dict(e) for e in _read_index(str(path), path.stat().st_mtime_ns)]


@functools.lru_cache(maxsize=4)
def _read_index(path: str, stamp: int) -> tuple[dict, ...]:
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelStoreError(f"Cannot read the shipped index {path}: {exc}") from exc
    if not isinstance(entries, list):
        raise ModelStoreError(f"The shipped index {path} must hold a JSON list.")
    return tuple(entries)


def find_model(n_features: int, n_clusters: int, *, embedding: str = "binary",
               loss: str = "l2") -> Path | None:
    """Path of the stored model for a shape: shipped first, then cached; None if neither.

    Examples
    --------
    >>> find_model(10**6, 3) is None
    True
    """
    _check_model_key(n_features, n_clusters, embedding, loss)
    key = (int(n_features), int(n_clusters), embedding, loss)
    for entry in shipped_index():
        if (entry.get("n_features"), entry.get("n_clusters"), entry.get("embedding"),
                entry.get("loss")) == key:
            path = shipped_dir() / entry["file"]
            if path.is_file():
                return path
    path = cache_dir() / model_filename(*key)
    # os.path.isfile, unlike Path.is_file, says False where the folder cannot be read.
    return path if os.path.isfile(path) else None


def write_problem(folder: str | os.PathLike) -> str | None:
    """Why files cannot be written to ``folder`` (created if missing), or None where they
    can: checked by creating and removing a temporary file, as saving a model does.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     write_problem(tmp) is None
    True
    """
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder, prefix=".skformer-write-test-"):
            pass
    except OSError as exc:
        return str(exc.strerror or exc)
    return None


# ------------------------------------------------------------------------------ index


def index_entry(path: str | os.PathLike) -> dict:
    """The ``index.json`` entry describing a model file (for shipping weights).

    Returns
    -------
    dict
        ``file`` (the name), ``n_features``, ``n_clusters``, ``embedding``, ``loss``,
        ``val_relative`` and ``training`` (the summary stored at training time).
    """
    meta = read_model(path).metadata
    config = meta["model_config"]
    loss = (meta.get("training_config") or {}).get("loss")
    return {
        "file": Path(path).name,
        "n_features": config["n_features"],
        "n_clusters": config["n_clusters"],
        "embedding": config["embedding"],
        "loss": loss,
        "val_relative": meta.get("val_relative"),
        "training": meta.get("training"),
    }


def write_index(folder: str | os.PathLike | None = None,
                heldout: dict[str, dict] | None = None) -> Path:
    """Write ``index.json`` for the model files of a folder (default: the shipped one).

    Every ``*.safetensors`` file is read (so checked) and described by
    :func:`index_entry`; the index is sorted by embedding, loss, ``d`` and ``k``.

    Parameters
    ----------
    folder : path-like, default=None
    heldout : dict, default=None
        Figures measured on held-out tasks, by file name (``skformer bench learning
        multistep``); each goes into its entry as ``"heldout"``.

    Returns
    -------
    Path
        The index file written.
    """
    folder = shipped_dir() if folder is None else Path(folder)
    entries = [index_entry(p) for p in folder.glob("*.safetensors")]
    for entry in entries:
        if heldout and entry["file"] in heldout:
            entry["heldout"] = heldout[entry["file"]]
    entries.sort(key=lambda e: (e["embedding"], e["loss"] or "", e["n_features"],
                                e["n_clusters"]))
    path = folder / "index.json"
    _atomic_write(path, (json.dumps(entries, indent=1) + "\n").encode("utf-8"))
    return path
