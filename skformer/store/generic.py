"""Shape-generic schedules: one small file per binary code width serves every ``(d, k)``.

A file ``generic_b{B}.safetensors`` holds ``log_effective`` of shape ``(S, 3)`` (the
log effective inverse temperatures of a schedule trained by
:func:`~skformer.training.generic.train_generic` on tasks of every ``k`` of ``B`` code
bits), optionally ``log_step_size`` of shape ``(S,)`` (the centre update's learned step
sizes; a file without it steps as eq. (4)), and JSON metadata with a content hash, in
the model files' format (:mod:`skformer.store.format`). :func:`generic_model` builds the
model for a shape from it (:meth:`~skformer.nn.learned.LearnedKMeansModel.from_schedule`):
nothing is trained at fit time.

Files are looked for in the package (``skformer/weights/``), then in the user cache. A
code width with no file of its own uses the nearest one below it (the schedule is
shape-free; the metadata says which ``k`` it was trained on). A file is checked when it
is read (:func:`read_schedule`): a damaged or crafted one (a temperature of ``inf``) is a
:class:`~skformer.store.ModelStoreError` that names the file and the field, not a failure
inside a fit.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import safetensors.torch
import torch

from .._version import __version__
from ..nn.embedding import index_width
from ..nn.learned import LearnedKMeansModel
from . import locations
from .format import (
    ModelStoreError,
    _atomic_write,
    _content_hash,
    _read_header,
    check_target,
    read_model,
)
from .locations import find_model

__all__ = ["GENERIC_FORMAT", "MAX_LOG", "SHIPPED_BUDGETS", "SHIPPED_STEP_SIZE_BUDGETS",
           "SHIPPED_WARM_STARTS", "GenericSchedule", "code_bits", "find_schedule",
           "generic_filename", "generic_model", "pretrain_generic", "pretrain_step_sizes",
           "read_schedule", "save_schedule"]

GENERIC_FORMAT = "skformer-generic-schedule"
_KEY = "skformer"
# The largest magnitude of a stored log temperature or log step size: its exponential
# must stay a finite float32 (below e^88.7) with room for the factors it meets in a step.
MAX_LOG = 80.0


def code_bits(n_clusters: int) -> int:
    """Columns of the binary code of ``n_clusters`` centres, at least 1 (the code width
    whose schedule serves them).

    Examples
    --------
    >>> code_bits(2), code_bits(3), code_bits(16), code_bits(17), code_bits(1000)
    (1, 2, 4, 5, 10)
    """
    return max(1, index_width("binary", int(n_clusters)))


def generic_filename(bits: int) -> str:
    """``generic_b{bits}.safetensors``.

    Examples
    --------
    >>> generic_filename(7)
    'generic_b7.safetensors'
    """
    return f"generic_b{int(bits)}.safetensors"


@dataclass(frozen=True)
class GenericSchedule:
    """A shape-generic schedule read from a file."""

    log_effective: torch.Tensor
    """Shape (S, 3), float32, on the CPU."""
    metadata: dict
    """``bits``, ``clusters`` (the k trained on), ``features``, ``val_ratio``,
    ``training_config``, ``training`` (steps, seconds), ``created``, ..."""
    path: Path
    log_step_size: torch.Tensor | None = None
    """Shape (S,), float32: the log step sizes of the centre update; None: unit steps."""

    def model(self, n_features: int, n_clusters: int) -> LearnedKMeansModel:
        """The model of this schedule at ``(n_features, n_clusters)``, eval mode."""
        return LearnedKMeansModel.from_schedule(
            n_features, n_clusters, self.log_effective,
            log_step_size=self.log_step_size).eval()


def save_schedule(path: str | os.PathLike, log_effective: torch.Tensor, *, bits: int,
                  clusters: tuple[int, int], features, val_ratio: float | None = None,
                  training_config: dict | None = None, training: dict | None = None,
                  log_step_size: torch.Tensor | None = None,
                  extra: dict | None = None, overwrite: bool = False) -> Path:
    """Write a schedule file (atomically), with its metadata and content hash
    (``log_step_size``: the schedule's step sizes, (S,), if it has them; ``extra``: more
    metadata, JSON-serialisable).

    An existing schedule file is replaced; another file only with ``overwrite``, and a
    symbolic link, a folder or a device never (:class:`FileExistsError`, see
    :func:`~skformer.store.format.check_target`).
    """
    path = Path(path)
    check_target(path, GENERIC_FORMAT, overwrite=overwrite)
    tensors = {"log_effective": torch.as_tensor(log_effective).detach().float().cpu()
               .contiguous()}
    if log_step_size is not None:
        tensors["log_step_size"] = (torch.as_tensor(log_step_size).detach().float().cpu()
                                    .contiguous())
    for name, values in tensors.items():  # never write what read_schedule refuses
        _check_values(path, name, values, saving=True)
    metadata = json.loads(json.dumps({
        "format": GENERIC_FORMAT, "format_version": 1, "embedding": "binary",
        "bits": int(bits), "clusters": [int(c) for c in clusters],
        "features": [int(d) for d in features],
        "val_ratio": None if val_ratio is None else float(val_ratio),
        "training_config": training_config, "training": training, **(extra or {}),
        "package_version": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }))
    metadata["content_hash"] = _content_hash(tensors, metadata)
    data = safetensors.torch.save(tensors, metadata={_KEY: json.dumps(metadata)})
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, data, lambda: check_target(path, GENERIC_FORMAT, overwrite=overwrite))
    return path


def _check_values(path: Path, name: str, values: torch.Tensor, saving: bool = False) -> None:
    """A :class:`ModelStoreError` naming the file and the field where ``values`` hold a
    value that is not finite or beyond :data:`MAX_LOG` (``saving``: it is not written)."""
    bad = ~torch.isfinite(values) | (values.abs() > MAX_LOG)
    if bad.any():
        where = tuple(int(i) for i in bad.nonzero()[0])
        advice = ("not written" if saving else "The file is not a trained schedule: remove "
                  "it or train it again (pretrain_generic)")
        raise ModelStoreError(
            f"{path}: {name!r} holds {float(values[where])!r} at {list(where)}; a schedule's "
            f"logarithms must be finite and within +-{MAX_LOG:g}. {advice}.")


def read_schedule(path: str | os.PathLike) -> GenericSchedule:
    """Read and verify a schedule file.

    Raises
    ------
    ModelStoreError
        If the file is not safetensors, is truncated, is not a skformer schedule, fails
        its content-hash check, or holds a log temperature or log step size that is not
        finite or beyond :data:`MAX_LOG` (the message names the file and the field).
    """
    path = Path(path)
    data = path.read_bytes()
    header = _read_header(data, path)
    try:
        tensors = safetensors.torch.load(data)
    except Exception as exc:  # SafetensorError is not exported under a stable name
        raise ModelStoreError(f"{path} is not a valid safetensors file: {exc}") from exc
    try:
        metadata = json.loads((header.get("__metadata__") or {})[_KEY])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelStoreError(f"{path} is not a skformer schedule ({exc}).") from exc
    if not isinstance(metadata, dict) or metadata.get("format") != GENERIC_FORMAT:
        raise ModelStoreError(f"{path} is not a skformer schedule (format is not "
                              f"{GENERIC_FORMAT!r}).")
    if metadata.get("content_hash") != _content_hash(tensors, metadata):
        raise ModelStoreError(f"{path} is corrupted: content hash mismatch.")
    schedule = tensors.get("log_effective")
    if (schedule is None or schedule.ndim != 2 or schedule.shape[1] != 3
            or not len(schedule) or not schedule.is_floating_point()):
        raise ModelStoreError(f"{path}: no (S, 3) float tensor 'log_effective' with S >= 1.")
    _check_values(path, "log_effective", schedule.float())
    step = tensors.get("log_step_size")
    if step is not None and tuple(step.shape) != (len(schedule),):
        raise ModelStoreError(f"{path}: 'log_step_size' must have shape ({len(schedule)},), "
                              f"got {tuple(step.shape)}.")
    if step is not None:
        if not step.is_floating_point():
            raise ModelStoreError(f"{path}: 'log_step_size' must be a float tensor.")
        _check_values(path, "log_step_size", step.float())
    return GenericSchedule(schedule.float(), metadata, path,
                           None if step is None else step.float())


def _candidates(bits: int) -> list[Path]:
    """The files that may serve ``bits``: that width's, then narrower ones, shipped
    before cached."""
    out = []
    for b in range(int(bits), 0, -1):
        out += [locations.shipped_dir() / generic_filename(b),
                locations.cache_dir() / generic_filename(b)]
    return out


def find_schedule(bits: int) -> Path | None:
    """The schedule file serving a code width: its own, else the nearest narrower one;
    None where there is none at all.

    Examples
    --------
    >>> find_schedule(12).name.startswith("generic_b")   # wider than any trained: the widest
    True
    """
    return next((p for p in _candidates(bits) if p.is_file()), None)


@lru_cache(maxsize=16)
def _read_cached(path: str, stamp: int) -> GenericSchedule:
    return read_schedule(path)


def generic_model(n_features: int, n_clusters: int) -> tuple[LearnedKMeansModel, dict] | None:
    """The shape-generic model for ``(n_features, n_clusters)`` (binary code), and its
    schedule's metadata; None where no schedule file is found.

    Examples
    --------
    >>> model, metadata = generic_model(3, 300)
    >>> model.layer.embed_dim, metadata["bits"] <= 9
    (12, True)
    """
    path = find_schedule(code_bits(n_clusters))
    if path is None:
        return None
    schedule = _read_cached(str(path), path.stat().st_mtime_ns)
    return schedule.model(n_features, n_clusters), schedule.metadata


# The shipped schedules' training budgets by code width: the cost of a batch grows with
# k times the points (16 per cluster), so wide codes train on fewer, smaller batches and
# on their smallest k (``max_clusters``); the metadata records what each was trained on.
SHIPPED_BUDGETS = {
    **{b: {} for b in range(1, 7)},
    7: {"batch_size": 8},
    8: {"batch_size": 4, "steps": 30, "search": 24, "n_val_batches": 4},
    9: {"batch_size": 4, "steps": 30, "search": 4, "n_val_batches": 4, "max_clusters": 320},
    10: {"batch_size": 4, "steps": 20, "search": 4, "n_val_batches": 3,
         "max_clusters": 600},
}
# The first candidate of each width's search: the schedule of a shipped model trained
# for (d, k), or (an int) the shipped generic schedule of a narrower code width. The
# widest codes start from 8 bits': their few, small batches (above) train a noisy
# schedule from random candidates.
SHIPPED_WARM_STARTS = {**{b: (32, 16) for b in range(1, 9)}, 9: 8, 10: 8}


def pretrain_generic(bits: int, *, path: str | os.PathLike | None = None,
                     warm_start: tuple[int, int] | int | None | str = "shipped",
                     progress: bool = False, overwrite: bool = False,
                     **overrides) -> GenericSchedule:
    """Train the shape-generic schedule of a code width and save it.

    Parameters
    ----------
    bits : int
        Code width ``B``: the schedule serves every ``k`` in ``(2^(B-1), 2^B]``.
    path : path-like, default=None
        Where to save: None is the user cache (``generic_b{B}.safetensors``, replaced if
        it exists). An explicit path may be new or a schedule file; another file there
        is kept (:class:`FileExistsError`, before training) unless ``overwrite``.
    warm_start : (d, k), int, None or "shipped", default="shipped"
        The search's first candidate: the schedule (as effective temperatures) of the
        shipped model trained for ``(d, k)``, or the shipped generic schedule of a code
        width (an int); None: random candidates only; ``"shipped"``: the shipped
        schedules' choice (:data:`SHIPPED_WARM_STARTS`).
    progress : bool, default=False
    overwrite : bool, default=False
        Replace a regular file at ``path`` that is not a schedule file.
    **overrides
        :class:`~skformer.training.generic.GenericConfig` fields (default: the shipped
        budget of the width, :data:`SHIPPED_BUDGETS`).

    Returns
    -------
    GenericSchedule
        As read back from the file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "generic_b2.safetensors"
    >>> s = pretrain_generic(2, path=out, features=(2,), steps=1, search=1, batch_size=2,
    ...                      n_val_batches=1, min_points=16, unroll=2, schedule=2)
    >>> s.metadata["bits"], s.metadata["clusters"], tuple(s.log_effective.shape)
    (2, [3, 4], (2, 3))
    """
    from ..training.generic import GenericConfig, train_generic

    target, overwrite = _target(bits, path, overwrite)  # before training, not after it
    params = {**SHIPPED_BUDGETS.get(int(bits), {}), **overrides}
    if warm_start == "shipped":
        warm_start = SHIPPED_WARM_STARTS.get(int(bits))
    if warm_start is not None and "init" not in params:
        init = None
        if isinstance(warm_start, int):
            narrower = locations.shipped_dir() / generic_filename(warm_start)
            if narrower.is_file():
                init = read_schedule(narrower).log_effective
        else:
            shipped = find_model(*warm_start, embedding="binary", loss="l2")
            if shipped is not None and shipped.parent == locations.shipped_dir():
                init = read_model(shipped).model.effective_schedule()
        if init is not None and len(init) == params.get("schedule", len(init)):
            params["init"] = init.exp().tolist()
    config = GenericConfig(bits=int(bits), **params)
    result = train_generic(config, progress=progress)
    return _save_trained(bits, target, result, overwrite, clusters=config.clusters,
                         features=config.features)


def _target(bits: int, path, overwrite: bool) -> tuple[Path, bool]:
    """The file a training saves to (``path``, or the user cache, whose file of the width
    is skformer's own and replaced), checked, and whether another file may be replaced."""
    overwrite = overwrite or path is None
    target = Path(path) if path is not None else locations.cache_dir() / generic_filename(bits)
    check_target(target, GENERIC_FORMAT, overwrite=overwrite)
    return target, overwrite


def _save_trained(bits: int, target: Path, result, overwrite: bool,
                  **fields) -> GenericSchedule:
    """Save a training's schedule to ``target``, with its configuration and history, and
    read it back; ``fields``: ``clusters``, ``features`` and ``extra`` of
    :func:`save_schedule`."""
    config = result.config
    save_schedule(target, result.log_effective, log_step_size=result.log_step_size,
                  bits=bits, val_ratio=result.val_ratio, training_config=config.to_dict(),
                  training={"steps": config.steps, "seconds": round(result.seconds, 1),
                            "history": result.history}, overwrite=overwrite, **fields)
    return read_schedule(target)


# The second stage of the shipped schedules: step sizes learned on the temperatures of
# the first, judged by the cost after the unrolled steps (a fit keeps the best centres
# its steps reach; the multi-step objective preferred step sizes whose cost after 20
# steps was higher). The learned steps of a fit run on to convergence with the
# schedule's last row, so the objective unrolls twice the schedule (the last row's step
# size is then trained for the steps after it); tasks have 32 points per cluster (a fit's context
# has more than the first stage's 16) and half of the batches tile a few wide densities
# with many clusters (pixels, sub-space codebooks). Adam's rate is a fifth of the first
# stage's: at 0.05 the validation objective of 5 and 6 bits rose from the search's best
# within 20 steps. Wide codes train fewer, smaller batches, as in the first stage.
SHIPPED_STEP_SIZE_BUDGETS = {
    **{b: {} for b in range(1, 7)},
    7: {"batch_size": 8},
    8: {"batch_size": 4, "steps": 30, "search": 12, "n_val_batches": 4},
    9: {"batch_size": 4, "steps": 15, "search": 4, "n_val_batches": 3, "max_clusters": 320,
        "points_per_cluster": 16},
    10: {"batch_size": 2, "steps": 10, "search": 4, "n_val_batches": 3, "max_clusters": 600,
         "points_per_cluster": 16},
}
_STEP_SIZE_STAGE = {"step_size": True, "learn": ("step_size",), "objective": "final",
                    "unroll": 20, "points_per_cluster": 32, "search": 24,
                    "tiling_share": 0.5, "lr": 0.01}
_STEP_SIZE_START = 1.5


def pretrain_step_sizes(bits: int, *, source: str | os.PathLike | None = None,
                        path: str | os.PathLike | None = None, progress: bool = False,
                        overwrite: bool = False, **overrides) -> GenericSchedule:
    """Learn the step sizes of a code width's schedule, its temperatures kept, and save it.

    Parameters
    ----------
    bits : int
        Code width ``B``.
    source : path-like, default=None
        The schedule whose temperatures are kept: None is the one serving ``bits``
        (:func:`find_schedule`).
    path : path-like, default=None
        Where to save: None is the user cache (``generic_b{B}.safetensors``), as
        :func:`pretrain_generic` saves.
    progress : bool, default=False
    overwrite : bool, default=False
        Replace a regular file at ``path`` that is not a schedule file.
    **overrides
        :class:`~skformer.training.generic.GenericConfig` fields (default: the shipped
        budget of the width, :data:`SHIPPED_STEP_SIZE_BUDGETS`).

    Returns
    -------
    GenericSchedule
        As read back from the file: the source's temperatures, the learned step sizes;
        the source's training is kept in the metadata as ``temperature_training``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "generic_b2.safetensors"
    >>> s = pretrain_step_sizes(2, path=out, features=(2,), steps=1, search=1,
    ...                         batch_size=2, n_val_batches=1, min_points=16, unroll=2)
    >>> tuple(s.log_step_size.shape) == (len(s.log_effective),)
    True
    """
    from ..training.generic import GenericConfig, train_generic

    target, overwrite = _target(bits, path, overwrite)  # before training, not after it
    source = Path(source) if source is not None else find_schedule(bits)
    if source is None:
        raise FileNotFoundError(f"no schedule serves {bits} bits: train one first "
                                "(pretrain_generic).")
    start = read_schedule(source)
    init = start.log_effective.exp().tolist()
    params = {**_STEP_SIZE_STAGE, **SHIPPED_STEP_SIZE_BUDGETS.get(int(bits), {}),
              "schedule": len(init), "init": init,
              "init_step_size": (start.log_step_size.exp().tolist()
                                 if start.log_step_size is not None
                                 else [_STEP_SIZE_START] * len(init)),
              **overrides}
    config = GenericConfig(bits=int(bits), **params)
    # The temperatures saved are the source's own bits (the training's went through
    # exp and log).
    result = dataclasses.replace(train_generic(config, progress=progress),
                                 log_effective=start.log_effective)
    meta = start.metadata
    return _save_trained(
        bits, target, result, overwrite, clusters=meta.get("clusters", config.clusters),
        features=meta.get("features", config.features),
        extra={"temperature_training": {
            "training_config": meta.get("training_config"), "training": meta.get("training"),
            "val_ratio": meta.get("val_ratio"), "clusters": meta.get("clusters")}})
