"""The model file format: one ``.safetensors`` file, JSON metadata, a content hash.

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
and renamed into place (:func:`os.replace`), so readers never see a partial file.

A write replaces only what it may (:func:`check_target`, checked before training and
again just before the rename): a new path, or a regular file of the same format (a model
over a model, a schedule over a schedule). Any other regular file is kept unless
``overwrite=True`` (``skformer pretrain --overwrite``); a symbolic link, a folder, a
device, a pipe or a socket is never replaced.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import re
import stat
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import safetensors.torch
import torch

from .._version import __version__
from ..nn.learned import LearnedKMeansModel
from ..training import TrainingConfig

__all__ = ["FORMAT", "FORMAT_VERSION", "ModelStoreError", "StoredModel", "check_target",
           "file_format", "read_model", "save_model"]

FORMAT = "skformer-model"
FORMAT_VERSION = 1
_METADATA_KEY = "skformer"
_MAX_HEADER = 100_000_000  # safetensors' own limit on the JSON header


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


def file_format(path: str | os.PathLike) -> str | None:
    """The ``"format"`` a skformer file's metadata names (:data:`FORMAT` for a model,
    ``"skformer-generic-schedule"`` for a schedule), None for any other file.

    Only the safetensors header is read, not the tensors, and nothing is verified: a
    model file with a damaged tensor is still a model file (one that may be replaced).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     csv = pathlib.Path(tmp) / "data.csv"
    ...     _ = csv.write_text("1,2\\n")
    ...     model = save_model(pathlib.Path(tmp) / "m.safetensors",
    ...                        LearnedKMeansModel.from_exact(2, 3))
    ...     file_format(csv), file_format(model)
    (None, 'skformer-model')
    """
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            size = struct.unpack("<Q", head)[0] if len(head) == 8 else 0
            # The header's bytes only (_read_header refuses a short or oversized one).
            data = head + (f.read(size) if size <= _MAX_HEADER else b"")
        header = _read_header(data, Path(path))
        found = json.loads(header["__metadata__"][_METADATA_KEY])["format"]
    except (OSError, ValueError, KeyError, TypeError):  # ModelStoreError is a ValueError
        return None
    return found if isinstance(found, str) else None


def check_target(path: str | os.PathLike, kind: str = FORMAT, *,
                 overwrite: bool = False) -> None:
    """Raise where a skformer file of format ``kind`` may not be written at ``path``.

    A new path may be written, and a regular file of the same format replaced. Another
    regular file (``data.csv``, a damaged or foreign file) is replaced only with
    ``overwrite=True``. A symbolic link, a folder, a device, a pipe or a socket is never
    replaced: renaming a new file onto it would remove the link (not write through it)
    or the node.

    Parameters
    ----------
    path : path-like
    kind : str, default=FORMAT
        The format of the file to be written (:func:`file_format`).
    overwrite : bool, default=False
        Replace a regular file of another format (or of none).

    Raises
    ------
    FileExistsError
        What is at ``path`` may not be replaced; the message names the path and why.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     csv = pathlib.Path(tmp) / "data.csv"
    ...     _ = csv.write_text("1,2\\n")
    ...     check_target(csv, overwrite=True)
    ...     check_target(csv)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileExistsError: ...data.csv exists and is not a skformer model file: ...
    """
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # new (its folder is checked apart)
        return
    if stat.S_ISLNK(mode):
        what = "a symbolic link"
    elif stat.S_ISDIR(mode):
        what = "a folder"
    elif not stat.S_ISREG(mode):
        what = "not a regular file (a device, a pipe or a socket)"
    elif overwrite or file_format(path) == kind:
        return
    else:
        name, option = (("skformer model", " (skformer pretrain --overwrite)")
                        if kind == FORMAT else ("skformer schedule", ""))
        raise FileExistsError(f"{path} exists and is not a {name} file: it is kept. Pass "
                              f"another path, or overwrite=True{option} to replace it")
    raise FileExistsError(f"{path} is {what}: skformer writes its files only to a new "
                          "path or over a regular file; pass another path")


def _atomic_write(path: Path, data: bytes, check: Callable[[], None] | None = None) -> None:
    """Write ``data`` to ``path`` through an fsynced temporary file and a rename
    (``check``, if given, is called just before the rename, and may raise to stop it)."""
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
        if check is not None:
            check()
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


def model_metadata(model: LearnedKMeansModel, *, training_config: TrainingConfig | None = None,
                   val_relative: float | None = None, training: dict | None = None) -> dict:
    """The metadata :func:`save_model` writes for a model (without its content hash),
    exactly as :func:`read_model` decodes it; see :func:`save_model` for the arguments."""
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
    return json.loads(json.dumps(metadata))  # exactly what a reader will decode


def save_model(
    path: str | os.PathLike,
    model: LearnedKMeansModel,
    *,
    training_config: TrainingConfig | None = None,
    val_relative: float | None = None,
    training: dict | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a model and its metadata to one ``.safetensors`` file, atomically.

    Parameters
    ----------
    path : path-like
        The file to write (its folder is created if needed). An existing model file is
        replaced in one step: readers see the old or the new file, never a mix. Another
        existing file is kept (:class:`FileExistsError`) unless ``overwrite``; a symbolic
        link, a folder or a device is never replaced (:func:`check_target`).
    model : LearnedKMeansModel
        Saved from any device; the file always holds CPU tensors.
    training_config : TrainingConfig, default=None
    val_relative : float, default=None
        Relative validation loss of the model (paper eq. 20; < 1 beats one Lloyd step).
    training : dict, default=None
        A JSON-serialisable summary of the training run (steps, seconds, ...).
    overwrite : bool, default=False
        Replace a regular file at ``path`` that is not a skformer model.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    FileExistsError
        What is at ``path`` may not be replaced (:func:`check_target`).

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
    check_target(path, overwrite=overwrite)
    tensors = {
        name: t.detach().cpu().contiguous().clone() for name, t in model.state_dict().items()
    }
    metadata = model_metadata(model, training_config=training_config,
                              val_relative=val_relative, training=training)
    metadata["content_hash"] = _content_hash(tensors, metadata)
    data = safetensors.torch.save(tensors, metadata={_METADATA_KEY: json.dumps(metadata)})
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, data, lambda: check_target(path, overwrite=overwrite))
    return path


# The file name of a stored model (see :func:`skformer.store.model_filename`).
_KEYED_NAME = re.compile(r"d(\d+)_k(\d+)_([a-z0-9]+)_([a-z0-9]+)\.safetensors")


def _name_key(path: Path) -> tuple | None:
    """The ``(d, k, embedding, loss)`` a file's name promises, None for another name."""
    match = _KEYED_NAME.fullmatch(path.name)
    if match is None:
        return None
    d, k, embedding, loss = match.groups()
    return int(d), int(k), embedding, loss


def _check_key(metadata: dict, expect: tuple, path: Path) -> None:
    """The model's ``(d, k, embedding, loss)`` is ``expect``, or ModelStoreError (a
    model trained without a recorded loss takes the expected one)."""
    config = metadata.get("model_config") or {}
    trained = metadata.get("training_config") or {}
    found = (config.get("n_features"), config.get("n_clusters"), config.get("embedding"),
             trained.get("loss", expect[3]))
    if found != tuple(expect):
        raise ModelStoreError(
            f"{path} holds a model for (d, k, embedding, loss) = {found}, expected "
            f"{tuple(expect)}."
        )


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


def _model_from(config: dict, tensors: dict[str, torch.Tensor]) -> LearnedKMeansModel:
    """The model of ``config`` holding ``tensors`` (all its parameters, strictly).

    It is built on the ``meta`` device, which allocates nothing and draws no default
    initialisation from PyTorch's global generator (a user's ``torch.manual_seed``
    stream stays as it was), and the file's tensors are then assigned to it.
    """
    with torch.device("meta"):
        model = LearnedKMeansModel(**config)
    model.load_state_dict(tensors, strict=True, assign=True)
    left = [name for name, t in model.state_dict().items() if t.is_meta]
    if left:  # not in the state dict (none today): nothing to read them from
        raise ValueError(f"no values for {left}")
    return model


def read_model(path: str | os.PathLike, *, map_location: str | torch.device = "cpu",
               expect: tuple | None = None) -> StoredModel:
    """Read and verify a model file written by :func:`save_model`.

    The weights are decoded on the CPU first and then moved to ``map_location``, so a
    model saved from a GPU loads on a CPU-only machine.

    Parameters
    ----------
    path : path-like
    map_location : str or torch.device, default="cpu"
    expect : tuple (d, k, embedding, loss), default=None
        The model the file must hold. By default, what a store file name
        (``d{d}_k{k}_{embedding}_{loss}.safetensors``) promises; another name promises
        nothing.

    Returns
    -------
    StoredModel
        The model in eval mode, its metadata and the path.

    Raises
    ------
    ModelStoreError
        If the file is not safetensors, is truncated, is not a skformer model, has an
        unsupported format version, fails the content-hash check, holds weights that
        are not finite (the message names them), or holds a model for another shape,
        embedding or loss than ``expect`` (or its name) says.
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
    for name, tensor in sorted(tensors.items()):  # a crafted file can carry a good hash
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ModelStoreError(f"{path}: the weights {name!r} hold values that are not "
                                  "finite; the file is not a trained model.")
    expect = _name_key(path) if expect is None else expect
    if expect is not None:
        _check_key(metadata, expect, path)
    try:
        model = _model_from(metadata["model_config"], tensors)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise ModelStoreError(f"{path}: the weights do not fit the model config ({exc}).") from exc
    model.to(map_location).eval()
    return StoredModel(model=model, metadata=metadata, path=path)
