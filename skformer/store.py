"""The pretrained-model store: shipped weights, a user cache, pretraining on demand.

A learned model is tied to one shape ``(d, k)``, one cluster-index embedding and one
training loss. :func:`load_model` finds it in this order:

1. the weights shipped in the package (``skformer/weights/`` and its ``index.json``);
2. the user cache (``$SKFORMER_CACHE_DIR``, else ``$XDG_CACHE_HOME/skformer``, else
   ``~/.cache/skformer``), one file per model named ``d{d}_k{k}_{embedding}_{loss}.safetensors``;
3. if allowed, a short training run (the ``"fast"`` preset of
   :class:`~skformer.training.TrainingConfig`) whose result is saved to the cache.

File format
-----------
One ``.safetensors`` file: the model's ``state_dict``, plus header metadata with a single
key ``"skformer"`` whose value is a JSON document::

    {"format": "skformer-model", "format_version": 1,
     "model_config": {...},            # LearnedKMeansModel(**model_config) rebuilds the model
     "training_config": {...} | null,  # TrainingConfig.to_dict()
     "val_relative": float | null,     # relative validation loss, paper eq. (20)
     "training": {...} | null,         # summary: steps, seconds, best_val_relative, best_step
     "package_version": "...", "created": "ISO 8601 timestamp",
     "content_hash": "sha256:..."}

The content hash covers the tensors (by sorted name: name, dtype, shape, raw bytes) and the
metadata without the hash itself (``json.dumps(..., sort_keys=True)``), so a flipped byte
anywhere is detected. Writes go to a temporary file in the target directory, are fsynced
and renamed into place (:func:`os.replace`), so readers never see a partial file; on POSIX
a lock file serialises "check the cache, train, save" across processes.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import numbers
import os
import struct
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import safetensors.torch
import torch

from ._version import __version__
from .nn.learned import LearnedKMeansModel
from .training import TrainingConfig, TrainingResult, train

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ModelStoreError",
    "StoredModel",
    "cache_dir",
    "find_model",
    "index_entry",
    "load_model",
    "model_filename",
    "pretrain",
    "read_model",
    "save_model",
    "shipped_dir",
    "shipped_index",
    "write_index",
]

FORMAT = "skformer-model"
FORMAT_VERSION = 1
EMBEDDINGS = ("binary", "onehot", "none")
LOSSES = ("l2", "ne")
PRESETS = ("fast", "paper")
_METADATA_KEY = "skformer"
_MAX_HEADER = 100_000_000  # safetensors' own limit on the JSON header

logger = logging.getLogger("skformer")


class ModelStoreError(ValueError):
    """A model file that is missing, unreadable, corrupted or not a skformer model."""


@dataclass(frozen=True)
class StoredModel:
    """A model read from a file, with its metadata."""

    model: LearnedKMeansModel
    """The model, in eval mode."""
    metadata: dict
    """The decoded ``"skformer"`` JSON document (see the module docstring)."""
    path: Path


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
    return Path(__file__).resolve().parent / "weights"


def shipped_index() -> list[dict]:
    """Entries of ``skformer/weights/index.json``; empty if nothing is shipped.

    Each entry has ``file``, ``n_features``, ``n_clusters``, ``embedding``, ``loss``,
    ``val_relative`` and ``training`` (see :func:`index_entry`).

    Examples
    --------
    >>> isinstance(shipped_index(), list)
    True
    """
    path = shipped_dir() / "index.json"
    if not path.is_file():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelStoreError(f"Cannot read the shipped index {path}: {exc}") from exc
    if not isinstance(entries, list):
        raise ModelStoreError(f"The shipped index {path} must hold a JSON list.")
    return entries


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
    return path if path.is_file() else None


# -------------------------------------------------------------------------- file format


def _tensor_bytes(tensor: torch.Tensor) -> bytes:
    flat = tensor.detach().cpu().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes()


def _content_hash(tensors: dict[str, torch.Tensor], metadata: dict) -> str:
    """SHA-256 over the tensors (sorted by name) and the canonical metadata JSON."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name]
        head = json.dumps([name, str(t.dtype).removeprefix("torch."), list(t.shape)])
        data = _tensor_bytes(t)
        h.update(head.encode("utf-8") + b"\n" + len(data).to_bytes(8, "little"))
        h.update(data)
    body = {k: v for k, v in metadata.items() if k != "content_hash"}
    h.update(json.dumps(body, sort_keys=True).encode("utf-8"))
    return "sha256:" + h.hexdigest()


def _json_float(value) -> float | None:
    return None if value is None else float(value)


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through an fsynced temporary file and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):  # mkstemp makes 0600 files; give the usual permissions
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
        with contextlib.suppress(OSError):
            dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


def save_model(
    path: str | os.PathLike,
    model: LearnedKMeansModel,
    *,
    training_config: TrainingConfig | None = None,
    val_relative: float | None = None,
    training: dict | None = None,
) -> Path:
    """Write a model and its metadata to one ``.safetensors`` file, atomically.

    Parameters
    ----------
    path : path-like
        The file to write (its folder is created if needed). An existing file is
        replaced in one step: readers see the old or the new file, never a mix.
    model : LearnedKMeansModel
        Saved from any device; the file always holds CPU tensors.
    training_config : TrainingConfig, default=None
    val_relative : float, default=None
        Relative validation loss of the model (paper eq. 20; < 1 beats one Lloyd step).
    training : dict, default=None
        A JSON-serialisable summary of the training run (steps, seconds, ...).

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> model = LearnedKMeansModel.from_exact(2, 3)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = save_model(pathlib.Path(tmp) / "m.safetensors", model, val_relative=0.97)
    ...     stored = read_model(path)
    >>> stored.metadata["val_relative"], stored.metadata["model_config"]["n_clusters"]
    (0.97, 3)
    """
    path = Path(path)
    tensors = {
        name: t.detach().cpu().contiguous().clone() for name, t in model.state_dict().items()
    }
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model_config": model.config,
        "training_config": None if training_config is None else training_config.to_dict(),
        "val_relative": _json_float(val_relative),
        "training": training,
        "package_version": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    metadata = json.loads(json.dumps(metadata))  # exactly what a reader will decode
    metadata["content_hash"] = _content_hash(tensors, metadata)
    data = safetensors.torch.save(tensors, metadata={_METADATA_KEY: json.dumps(metadata)})
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, data)
    return path


def _read_header(data: bytes, path: Path) -> dict:
    """The safetensors JSON header, or a ModelStoreError saying why there is none."""
    if len(data) < 8:
        raise ModelStoreError(f"{path} is not a safetensors file (only {len(data)} bytes).")
    (size,) = struct.unpack("<Q", data[:8])
    if size > _MAX_HEADER or size > len(data) - 8:
        raise ModelStoreError(
            f"{path} is not a safetensors file, or it is truncated (header of {size} bytes "
            f"in a file of {len(data)} bytes)."
        )
    try:
        header = json.loads(data[8 : 8 + size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ModelStoreError(f"{path} is not a safetensors file: bad header ({exc}).") from exc
    if not isinstance(header, dict):
        raise ModelStoreError(f"{path} is not a safetensors file: bad header.")
    return header


def read_model(path: str | os.PathLike, *, map_location: str | torch.device = "cpu"
               ) -> StoredModel:
    """Read and verify a model file written by :func:`save_model`.

    The weights are decoded on the CPU first and then moved to ``map_location``, so a
    model saved from a GPU loads on a CPU-only machine.

    Parameters
    ----------
    path : path-like
    map_location : str or torch.device, default="cpu"

    Returns
    -------
    StoredModel
        The model in eval mode, its metadata and the path.

    Raises
    ------
    ModelStoreError
        If the file is not safetensors, is truncated, is not a skformer model, has an
        unsupported format version, or fails the content-hash check.
    FileNotFoundError
        If there is no such file.
    """
    path = Path(path)
    data = path.read_bytes()
    header = _read_header(data, path)
    try:
        tensors = safetensors.torch.load(data)  # always CPU tensors
    except Exception as exc:  # SafetensorError is not exported under a stable name
        raise ModelStoreError(f"{path} is not a valid safetensors file: {exc}") from exc
    raw = (header.get("__metadata__") or {}).get(_METADATA_KEY)
    if raw is None:
        raise ModelStoreError(f"{path} is not a skformer model (no skformer metadata).")
    try:
        metadata = json.loads(raw)
    except ValueError as exc:
        raise ModelStoreError(f"{path}: unreadable skformer metadata ({exc}).") from exc
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise ModelStoreError(f"{path} is not a skformer model (format is not {FORMAT!r}).")
    version = metadata.get("format_version")
    if version != FORMAT_VERSION:
        raise ModelStoreError(
            f"{path} has format_version {version!r}; this skformer ({__version__}) reads "
            f"format_version {FORMAT_VERSION}. Pretrain the model again."
        )
    if metadata.get("content_hash") != _content_hash(tensors, metadata):
        raise ModelStoreError(f"{path} is corrupted: content hash mismatch.")
    try:
        model = LearnedKMeansModel(**metadata["model_config"])
        model.load_state_dict(tensors)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise ModelStoreError(f"{path}: the weights do not fit the model config ({exc}).") from exc
    model.to(map_location).eval()
    return StoredModel(model=model, metadata=metadata, path=path)


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


def write_index(folder: str | os.PathLike | None = None) -> Path:
    """Write ``index.json`` for the model files of a folder (default: the shipped one).

    Every ``*.safetensors`` file is read (so checked) and described by
    :func:`index_entry`; the index is sorted by embedding, loss, ``d`` and ``k``.

    Returns
    -------
    Path
        The index file written.
    """
    folder = shipped_dir() if folder is None else Path(folder)
    entries = [index_entry(p) for p in folder.glob("*.safetensors")]
    entries.sort(key=lambda e: (e["embedding"], e["loss"] or "", e["n_features"],
                                e["n_clusters"]))
    path = folder / "index.json"
    _atomic_write(path, (json.dumps(entries, indent=1) + "\n").encode("utf-8"))
    return path


# -------------------------------------------------------------------- training and cache


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock on ``path.lock`` (POSIX ``flock``; else no lock)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: atomic writes still keep every file whole
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _summary(result: TrainingResult) -> dict:
    return {
        "steps": result.config.steps,
        "seconds": round(float(result.seconds), 3),
        "best_val_relative": float(result.best_val_relative),
        "best_step": int(result.best_step),
    }


def _pretrain(config: TrainingConfig, *, path: Path | None, progress: bool,
              device) -> TrainingResult:
    result = train(config, progress=progress, device=device)
    if path is not None:
        save_model(path, result.model, training_config=config,
                   val_relative=result.last_val_relative, training=_summary(result))
    return result


def pretrain(
    n_features: int,
    n_clusters: int,
    *,
    embedding: str = "binary",
    loss: str = "l2",
    preset: str = "fast",
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = False,
    save: bool = True,
    path: str | os.PathLike | None = None,
    **overrides,
) -> LearnedKMeansModel:
    """Train a learned model for one shape and (by default) save it to the cache.

    Parameters
    ----------
    n_features, n_clusters : int
        The shape ``(d, k)``.
    embedding : {"binary", "onehot", "none"}, default="binary"
    loss : {"l2", "ne"}, default="l2"
        Smoothed k-means loss: sparsemax (L2) or softmax (NE) weights.
    preset : {"fast", "paper"}, default="fast"
        :meth:`TrainingConfig.fast` (warm start from the exact construction, 200 steps;
        with ``embedding="none"``, which has no exact construction, a cold start) or
        :meth:`TrainingConfig.paper` (cold start, 10,000 steps).
    seed : int, default=0
    device : str or torch.device, default="cpu"
    progress : bool, default=False
        Show a tqdm progress bar.
    save : bool, default=True
        Write the model, its training config and validation score to ``path``.
    path : path-like, default=None
        Where to save; None is the cache file of the shape (see :func:`cache_dir`).
    **overrides
        Other :class:`~skformer.training.TrainingConfig` fields (``steps``, ``lr``, ...).

    Returns
    -------
    LearnedKMeansModel
        In eval mode, on ``device``.

    Examples
    --------
    >>> import tempfile
    >>> model = pretrain(2, 3, steps=2, eval_every=2, n_val_tasks=8, n_points=32, save=False)
    >>> model.config["n_clusters"], model.training
    (3, False)
    """
    _check_model_key(n_features, n_clusters, embedding, loss)
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}.")
    if preset == "fast":
        config = _fast_config(int(n_features), int(n_clusters), embedding, loss, seed=seed,
                              **overrides)
    else:
        config = TrainingConfig.paper(int(n_features), int(n_clusters), embedding=embedding,
                                      loss=loss, seed=seed, **overrides)
    target = None
    if save:
        target = Path(path) if path is not None else cache_dir() / model_filename(
            n_features, n_clusters, embedding, loss)
    return _pretrain(config, path=target, progress=progress, device=device).model.eval()


def _fast_config(n_features: int, n_clusters: int, embedding: str, loss: str,
                 **overrides) -> TrainingConfig:
    """The ``"fast"`` preset; without an index embedding there is no exact warm start."""
    if embedding == "none":
        overrides.setdefault("init", "random")
    return TrainingConfig.fast(n_features, n_clusters, embedding=embedding, loss=loss,
                               **overrides)


def _on_demand_config(n_features: int, n_clusters: int, embedding: str,
                      loss: str) -> TrainingConfig:
    """The training run of on-demand pretraining (the ``"fast"`` preset)."""
    return _fast_config(n_features, n_clusters, embedding, loss)


def _read_checked(path: Path, key: tuple, device) -> LearnedKMeansModel:
    stored = read_model(path, map_location=device)
    config = stored.metadata["model_config"]
    trained = stored.metadata.get("training_config") or {}
    found = (config.get("n_features"), config.get("n_clusters"), config.get("embedding"),
             trained.get("loss", key[3]))
    if found != key:
        raise ModelStoreError(
            f"{path} holds a model for (d, k, embedding, loss) = {found}, expected {key}."
        )
    return stored.model


def load_model(
    n_features: int,
    n_clusters: int,
    *,
    embedding: str = "binary",
    loss: str = "l2",
    pretrain: bool = True,
    device: str | torch.device = "cpu",
    progress: bool = False,
) -> LearnedKMeansModel:
    """The learned model for a shape: shipped, else cached, else pretrained on demand.

    Parameters
    ----------
    n_features, n_clusters : int
        The shape ``(d, k)``.
    embedding : {"binary", "onehot", "none"}, default="binary"
    loss : {"l2", "ne"}, default="l2"
    pretrain : bool, default=True
        If no stored model exists, train one with the ``"fast"`` preset and save it to
        the cache (under an inter-process lock, so concurrent callers train it once).
        If False, raise :class:`LookupError` instead.
    device : str or torch.device, default="cpu"
    progress : bool, default=False
        Show a progress bar while pretraining.

    Returns
    -------
    LearnedKMeansModel
        In eval mode, on ``device``; its parameters still require gradients, so it
        can be fine-tuned.

    Raises
    ------
    LookupError
        If no model is stored and ``pretrain=False``.
    ModelStoreError
        If a shipped model file is broken, or a cached one is and ``pretrain=False``.

    Examples
    --------
    >>> load_model(10**6, 3, pretrain=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    LookupError: No pretrained skformer model for d=1000000, k=3, ...
    """
    _check_model_key(n_features, n_clusters, embedding, loss)
    d, k = int(n_features), int(n_clusters)
    key = (d, k, embedding, loss)
    cached = cache_dir() / model_filename(*key)

    def read_stored() -> LearnedKMeansModel | None:
        path = find_model(*key[:2], embedding=embedding, loss=loss)
        if path is None:
            return None
        if path != cached or not pretrain:
            return _read_checked(path, key, device)
        try:
            return _read_checked(path, key, device)
        except ModelStoreError as exc:
            warnings.warn(f"{exc} Pretraining it again.", UserWarning, stacklevel=3)
            return None

    model = read_stored()
    if model is not None:
        return model
    if not pretrain:
        raise LookupError(
            f"No pretrained skformer model for d={d}, k={k}, embedding={embedding!r}, "
            f"loss={loss!r} (looked in {shipped_dir()} and {cache_dir()}). Pretrain it with "
            f"`skformer pretrain --d {d} --k {k} --embedding {embedding} --loss {loss}` or "
            "skformer.pretrain(...), or pass pretrain=True."
        )
    with _locked(cached):
        model = read_stored()  # another process may have trained it while we waited
        if model is not None:
            return model
        logger.info("pretraining on demand a model for d=%d, k=%d, embedding=%s, loss=%s; "
                    "it will be saved to %s", d, k, embedding, loss, cached)
        config = _on_demand_config(d, k, embedding, loss)
        result = _pretrain(config, path=cached, progress=progress, device=device)
    return result.model.to(device).eval()
