"""Pretraining and loading: :func:`pretrain`, and :func:`load_model` (shipped, cached, or
trained on demand).

On-demand pretraining runs the ``"multistep"`` preset of
:class:`~skformer.training.TrainingConfig` on a smaller budget than the shipped models
(:func:`on_demand_config`, under 90 s on a 2-core CPU) and saves its model to the cache;
on POSIX a lock file serialises "check the cache, train, save" across processes.

A cache that cannot be written (checked before training) does not stop a fit: the model
pretrained on demand is kept in memory for the process (:func:`kept_model`), with one
warning that names ``SKFORMER_CACHE_DIR``; later fits of the process use it.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch

from ..nn.learned import LearnedKMeansModel
from ..training import TrainingConfig, TrainingResult, train
from .format import ModelStoreError, check_target, model_metadata, read_model, save_model
from .locations import (
    _check_model_key,
    cache_dir,
    find_model,
    model_filename,
    shipped_dir,
    write_problem,
)

__all__ = ["MAX_PRETRAIN_FEATURES", "check_pretrain", "kept_model", "load_model", "pretrain"]

PRESETS = ("multistep", "fast", "paper")
# The widest data a model is pretrained for. A model of token width e holds about
# 12 e^2 weights and its training keeps b * n * e activations per unrolled step, so
# memory and time grow with the width beyond what a workstation serves; the widest
# shapes users cluster (text and image embeddings) have up to 1024 features, and wider
# data run the shape-generic models in their principal directions.
MAX_PRETRAIN_FEATURES = 1024

logger = logging.getLogger("skformer")

# The on-demand budget: schedule candidates, Adam steps, validation tasks, as many as
# keep a run of the common shapes to about a minute on a 2-core CPU, within the 90 s
# that a first fit may wait. A step costs about in proportion to the token width times
# k, so wider shapes train fewer steps (:func:`on_demand_steps`) rather than take longer.
ON_DEMAND = {"schedule_search": 64, "steps": 100, "n_val_tasks": 64}
# Token width times k up to which the full number of steps runs: the largest product
# measured to train them all within the budget (d=64, k=16: 68 * 16).
_ON_DEMAND_WIDTH_K = 1100
_ON_DEMAND_MIN_STEPS = 25
# The shapes pretrained on demand at all: the envelope measured within the 90 s budget
# (2 torch threads, a 2-core CPU). Fewer steps do not keep every shape within it: past
# 128 features runs overran the budget even with few steps, and so did more than 20
# clusters at moderate widths.
ON_DEMAND_MAX_FEATURES = 128
ON_DEMAND_MAX_CLUSTERS = 20


def on_demand_feasible(n_features: int, n_clusters: int) -> bool:
    """Whether a model of this shape is pretrained on demand within the budget of about
    90 s on a 2-core CPU: at most :data:`ON_DEMAND_MAX_FEATURES` features and
    :data:`ON_DEMAND_MAX_CLUSTERS` clusters (the measured envelope).

    Examples
    --------
    >>> on_demand_feasible(128, 20), on_demand_feasible(192, 4), on_demand_feasible(8, 64)
    (True, False, False)
    """
    return n_features <= ON_DEMAND_MAX_FEATURES and n_clusters <= ON_DEMAND_MAX_CLUSTERS


def on_demand_steps(n_features: int, n_clusters: int, embedding: str = "binary") -> int:
    """Adam steps of on-demand pretraining at a shape: :data:`ON_DEMAND`'s up to a token
    width times ``k`` of 1100, proportionally fewer beyond (at least 25), so that the run
    stays near a minute.

    Examples
    --------
    >>> on_demand_steps(8, 5), on_demand_steps(128, 20)
    (100, 41)
    """
    code = n_clusters if embedding == "onehot" else max(1, math.ceil(math.log2(n_clusters)))
    cost = (n_features + code) * n_clusters
    steps = ON_DEMAND["steps"]
    if cost <= _ON_DEMAND_WIDTH_K:
        return steps
    return max(_ON_DEMAND_MIN_STEPS, steps * _ON_DEMAND_WIDTH_K // cost)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock on ``path.lock`` (POSIX ``flock``; else no lock).

    A lock file that another user created (a shared cache) is locked read-only, which
    ``flock`` allows; one that cannot be opened at all gives no lock.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: atomic writes still keep every file whole
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(path.name + ".lock")
    try:
        f = open(lock, "a+b")
    except PermissionError:
        try:
            f = open(lock, "rb")
        except OSError:
            yield
            return
    with f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _summary(result: TrainingResult) -> dict:
    """What the metadata and the index say of a training run: its budget and the
    validation figures of the model it returned (the best checkpoint)."""
    best = result.best
    out = {
        "steps": result.config.steps,
        "seconds": round(float(result.seconds), 3),
        "best_val_relative": float(result.best_val_relative),
        "best_step": int(result.best_step),
    }
    if best.get("val_multistep") is not None:
        out["val_multistep"] = float(best["val_multistep"])
        out["val_score"] = float(best["val_score"])
    return out


def _pretrain(config: TrainingConfig, *, path: Path | None, progress: bool,
              device, overwrite: bool = False) -> TrainingResult:
    result = train(config, progress=progress, device=device)
    if path is not None:
        save_model(path, result.model, overwrite=overwrite, **_described(result))
    return result


def _described(result: TrainingResult) -> dict:
    """What the metadata says of a trained model (:func:`save_model`'s keywords)."""
    return dict(training_config=result.config, val_relative=result.best_val_relative,
                training=_summary(result))


# Models pretrained on demand in this process whose cache could not be written, by
# (d, k, embedding, loss): (model in eval mode on the CPU, the metadata it would be saved
# with). Shared by every fit of the process, as the models read from files are.
_KEPT: dict[tuple, tuple[LearnedKMeansModel, dict]] = {}

_CACHE_ADVICE = ("Set SKFORMER_CACHE_DIR to a writable folder to keep pretrained models "
                 "across processes.")


def kept_model(n_features: int, n_clusters: int, embedding: str = "binary",
               loss: str = "l2") -> tuple[LearnedKMeansModel, dict] | None:
    """The model pretrained on demand in this process and kept in memory because the
    cache could not be written, with its metadata; None where there is none.

    The model is shared (the estimators only read it): copy it before changing it.

    Examples
    --------
    >>> kept_model(10**6, 3) is None
    True
    """
    return _KEPT.get((int(n_features), int(n_clusters), embedding, loss))


def _keep(key: tuple, result: TrainingResult, reason: str) -> LearnedKMeansModel:
    """Keep a model that could not be saved for the process, and warn once."""
    d, k, embedding, loss = key
    model = result.model.cpu().eval()
    _KEPT[key] = (model, model_metadata(model, **_described(result)))
    warnings.warn(
        f"The skformer cache {cache_dir()} cannot be written ({reason}): the model "
        f"pretrained on demand for d={d}, k={k}, embedding={embedding!r}, loss={loss!r} is "
        f"kept in memory for this process only. {_CACHE_ADVICE}",
        UserWarning, stacklevel=3,
    )
    return model


def _plan(n_features, n_clusters, *, embedding: str, loss: str, preset: str, seed: int,
          save: bool, path, overwrite: bool, **overrides
          ) -> tuple[TrainingConfig, Path | None, bool]:
    """What :func:`pretrain` checks before it trains: the training run, the file to write
    (None: none), and whether a regular file there may be replaced."""
    _check_model_key(n_features, n_clusters, embedding, loss)
    if n_features > MAX_PRETRAIN_FEATURES:
        raise ValueError(
            f"n_features={n_features} is more than pretraining serves (at most "
            f"{MAX_PRETRAIN_FEATURES}: memory and time grow with the width). Wider data "
            "run the shape-generic models (embedding='binary') in their principal "
            "directions; or reduce the features first (e.g. sklearn.decomposition.PCA).")
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}.")
    if preset == "multistep":
        config = _multistep_config(int(n_features), int(n_clusters), embedding, loss,
                                   seed=seed, **overrides)
    elif preset == "fast":
        config = _fast_config(int(n_features), int(n_clusters), embedding, loss, seed=seed,
                              **overrides)
    else:
        config = TrainingConfig.paper(int(n_features), int(n_clusters), embedding=embedding,
                                      loss=loss, seed=seed, **overrides)
    if not save:
        return config, None, overwrite
    # The cache file of the shape is skformer's own: a damaged one is replaced.
    overwrite = overwrite or path is None
    target = Path(path) if path is not None else cache_dir() / model_filename(
        n_features, n_clusters, embedding, loss)
    check_target(target, overwrite=overwrite)
    problem = write_problem(target.parent)  # before training, not after it
    if problem is not None:
        where = (f"{target.parent} cannot be written" if path is not None else
                 f"The skformer cache {target.parent} cannot be written")
        raise OSError(f"{where} ({problem}). "
                      + ("Pass a writable path, or save=False." if path is not None
                         else f"{_CACHE_ADVICE} Or pass path=... or save=False."))
    return config, target, overwrite


def check_pretrain(
    n_features: int,
    n_clusters: int,
    *,
    embedding: str = "binary",
    loss: str = "l2",
    preset: str = "multistep",
    seed: int = 0,
    save: bool = True,
    path: str | os.PathLike | None = None,
    overwrite: bool = False,
    **overrides,
) -> None:
    """Raise what :func:`pretrain` would raise before training, without training.

    For checking every shape of a grid before the first is trained. The arguments are
    :func:`pretrain`'s (``device`` and ``progress`` change nothing here).

    Raises
    ------
    ValueError
        An invalid shape, embedding, loss, preset or training field; more than
        :data:`MAX_PRETRAIN_FEATURES` features.
    FileExistsError
        ``path`` holds what may not be replaced (:func:`~skformer.store.format.check_target`).
    OSError
        The folder of the file cannot be written.

    Examples
    --------
    >>> check_pretrain(32, 10, save=False)
    >>> check_pretrain(10**5, 10, save=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: n_features=100000 is more than pretraining serves (at most 1024: ...
    """
    _plan(n_features, n_clusters, embedding=embedding, loss=loss, preset=preset, seed=seed,
          save=save, path=path, overwrite=overwrite, **overrides)


def pretrain(
    n_features: int,
    n_clusters: int,
    *,
    embedding: str = "binary",
    loss: str = "l2",
    preset: str = "multistep",
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = False,
    save: bool = True,
    path: str | os.PathLike | None = None,
    overwrite: bool = False,
    **overrides,
) -> LearnedKMeansModel:
    """Train a learned model for one shape and (by default) save it to the cache.

    Parameters
    ----------
    n_features, n_clusters : int
        The shape ``(d, k)``; at most :data:`MAX_PRETRAIN_FEATURES` features, and
        ``n_clusters`` at most the preset's points per training task (``n_points``).
    embedding : {"binary", "onehot", "none"}, default="binary"
    loss : {"l2", "ne"}, default="l2"
        Smoothed k-means loss: sparsemax (L2) or softmax (NE) weights.
    preset : {"multistep", "fast", "paper"}, default="multistep"
        :meth:`TrainingConfig.multistep` (the shipped models' recipe: a temperature
        schedule trained for 10 re-embedded steps), :meth:`TrainingConfig.fast` (the
        one-step objective from the exact construction, 200 steps) or
        :meth:`TrainingConfig.paper` (cold start, 10,000 steps). With
        ``embedding="none"``, which has no exact construction, ``"multistep"`` and
        ``"fast"`` train the one-step objective from a cold start.
    seed : int, default=0
    device : str or torch.device, default="cpu"
    progress : bool, default=False
        Show a tqdm progress bar.
    save : bool, default=True
        Write the model, its training config and validation score to ``path``.
    path : path-like, default=None
        Where to save; None is the cache file of the shape (see :func:`cache_dir`),
        replaced if it exists. An explicit path may be new or a skformer model file,
        which is replaced atomically; any other file there is kept and
        :class:`FileExistsError` raised before training, unless ``overwrite``. A symbolic
        link, a folder or a device is never replaced
        (:func:`~skformer.store.format.check_target`).
    overwrite : bool, default=False
        Replace a regular file at ``path`` that is not a skformer model.
    **overrides
        Other :class:`~skformer.training.TrainingConfig` fields (``steps``, ``lr``, ...).

    Returns
    -------
    LearnedKMeansModel
        In eval mode, on ``device``.

    Raises
    ------
    ValueError, FileExistsError, OSError
        Before training, as :func:`check_pretrain` says.

    Examples
    --------
    >>> import tempfile
    >>> model = pretrain(2, 3, steps=2, eval_every=2, n_val_tasks=8, n_points=32,
    ...                  schedule_search=2, save=False)
    >>> model.config["n_clusters"], model.training
    (3, False)
    """
    config, target, overwrite = _plan(
        n_features, n_clusters, embedding=embedding, loss=loss, preset=preset, seed=seed,
        save=save, path=path, overwrite=overwrite, **overrides)
    return _pretrain(config, path=target, progress=progress, device=device,
                     overwrite=overwrite).model.eval()


def _fast_config(n_features: int, n_clusters: int, embedding: str, loss: str,
                 **overrides) -> TrainingConfig:
    """The ``"fast"`` preset; without an index embedding there is no exact warm start."""
    if embedding == "none":
        overrides.setdefault("init", "random")
    return TrainingConfig.fast(n_features, n_clusters, embedding=embedding, loss=loss,
                               **overrides)


def _multistep_config(n_features: int, n_clusters: int, embedding: str, loss: str,
                      **overrides) -> TrainingConfig:
    """The ``"multistep"`` preset (the ``"fast"`` one without an index embedding)."""
    if embedding == "none":
        return _fast_config(n_features, n_clusters, embedding, loss, **overrides)
    return TrainingConfig.multistep(n_features, n_clusters, embedding=embedding, loss=loss,
                                    **overrides)


def on_demand_config(n_features: int, n_clusters: int, embedding: str = "binary",
                     loss: str = "l2") -> TrainingConfig:
    """The training run of on-demand pretraining: the ``"multistep"`` preset on the
    :data:`ON_DEMAND` budget: as many searched schedules as the shipped models, fewer
    Adam steps and validation tasks, and fewer steps still for wide shapes
    (:func:`on_demand_steps`).

    Examples
    --------
    >>> on_demand_config(8, 5).steps
    100
    """
    budget = {**ON_DEMAND, "steps": on_demand_steps(n_features, n_clusters, embedding)}
    return _multistep_config(n_features, n_clusters, embedding, loss, **budget)


_on_demand_config = on_demand_config


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
        If no stored model exists, train one on demand (:func:`on_demand_config`) and
        save it to the cache (under an inter-process lock, so concurrent callers train
        it once). Where the cache cannot be written (checked before training), the
        model is kept in memory for the process instead (:func:`kept_model`), with a
        warning that names ``SKFORMER_CACHE_DIR``. If False, raise :class:`LookupError`
        instead.
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
    if key in _KEPT:  # pretrained earlier in this process; the cache could not be written
        return copy.deepcopy(_KEPT[key][0]).to(device).eval()

    def read_stored(warn: bool = True) -> LearnedKMeansModel | None:
        path = find_model(*key[:2], embedding=embedding, loss=loss)
        if path is None:
            return None
        if path != cached or not pretrain:
            return read_model(path, map_location=device, expect=key).model
        try:
            return read_model(path, map_location=device, expect=key).model
        except ModelStoreError as exc:
            if warn:
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
    config = _on_demand_config(d, k, embedding, loss)
    problem = write_problem(cached.parent)  # before training, not after it
    if problem is None:
        with _locked(cached):
            # Another process may have trained it while we waited (the broken file, if
            # any, was reported above).
            model = read_stored(warn=False)
            if model is not None:
                return model
            # Said at default verbosity (a log record at WARNING reaches stderr without
            # any logging set up): the fit waits for it.
            logger.warning("skformer: no stored model for d=%d, k=%d, embedding=%s, "
                           "loss=%s: pretraining one on demand (about a minute on a 2-core "
                           "CPU, once; saved to %s)", d, k, embedding, loss, cached)
            result = _pretrain(config, path=None, progress=progress, device=device)
            try:  # the cache is skformer's: a damaged file there is replaced
                save_model(cached, result.model, overwrite=True, **_described(result))
            except OSError as exc:  # writable when checked, not now (a full disk)
                problem = str(exc.strerror or exc)
            else:
                return result.model.to(device).eval()
    else:
        logger.warning("skformer: no stored model for d=%d, k=%d, embedding=%s, loss=%s: "
                       "pretraining one on demand (about a minute on a 2-core CPU); the "
                       "cache %s cannot be written (%s): it is kept in memory", d, k,
                       embedding, loss, cached.parent, problem)
        result = _pretrain(config, path=None, progress=progress, device=device)
    return copy.deepcopy(_keep(key, result, problem)).to(device).eval()
