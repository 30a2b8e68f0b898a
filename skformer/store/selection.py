"""Which learned model a fit uses, and whether it is worth running.

One decision for every driver of the learned steps (:class:`skformer.TransformerKMeans`
and :func:`skformer.batch_k_means`): :func:`choose_model` finds the model for a shape
(stored, a wider shipped one with zero features, or pretrained on demand) and says why
there is none to run, where that is so.
"""

from __future__ import annotations

import copy
import logging
from functools import lru_cache
from typing import NamedTuple

import torch

from ..nn.learned import LearnedKMeansModel
from . import locations
from .format import ModelStoreError, read_model
from .locations import find_model
from .pretraining import kept_model, load_model, on_demand_feasible

__all__ = ["HELPS_BELOW", "Choice", "choose_model", "expected_ratio", "stored_model"]

logger = logging.getLogger("skformer")

# The learned run is made when the model's expected cost after its steps, relative to
# Lloyd's algorithm from the same kind of start, is below this (a 0.5 % gain): measured
# on held-out tasks for shipped models (``index.json``), on the training's validation
# tasks otherwise. Models trained for one step carry no such figure and always run.
HELPS_BELOW = 0.995


class Choice(NamedTuple):
    """The learned model of a fit, or why there is none."""

    model: LearnedKMeansModel | None
    """On the fit's device, float32 (a copy where the shared one lives elsewhere)."""
    padding: int = 0
    """Zero features appended to the data to reach the model's width."""
    skipped: str | None = None
    """Why no learned steps run (``model`` is then None)."""


@lru_cache(maxsize=32)
def stored_model(path: str, stamp: int) -> tuple[LearnedKMeansModel, dict]:
    """A stored model and its metadata, read once per process (``stamp``: the file's
    modification time, so a re-trained file is read again). Fits only read it."""
    stored = read_model(path)
    return stored.model, stored.metadata


def _pretrained(d: int, k: int, embedding: str, loss: str, *, pretrain: bool,
                progress: bool) -> tuple[LearnedKMeansModel, int, dict, None]:
    """A model pretrained on demand: read back from the cache, or kept in memory for the
    process where the cache cannot be written."""
    load_model(d, k, embedding=embedding, loss=loss, pretrain=pretrain, progress=progress)
    kept = kept_model(d, k, embedding, loss)
    if kept is not None:
        return kept[0], 0, kept[1], None
    path = find_model(d, k, embedding=embedding, loss=loss)
    model, metadata = stored_model(str(path), path.stat().st_mtime_ns)
    return model, 0, metadata, None


def _find(d: int, k: int, embedding: str, loss: str, *, pretrain: bool,
          progress: bool) -> tuple[LearnedKMeansModel, int, dict, dict | None] | None:
    """The learned model for (d, k), how many zero features the data need, its metadata
    and its entry in the shipped index (None for a cached or kept model).

    A model kept in memory (pretrained on demand earlier in this process, where the
    cache could not be written) comes first, then one stored for exactly (d, k)
    (shipped or cached). Otherwise the narrowest *shipped* model with the same k and
    more features is used, the data padded with zero features (which change no
    distance). Otherwise one is pretrained on demand (``pretrain=True``; saved to the
    cache, or kept in memory where it cannot be written) or :class:`LookupError` is
    raised; None where the shape is too large to pretrain within the on-demand budget
    (:func:`~skformer.store.on_demand_feasible`: wide data, many clusters).
    """
    kept = kept_model(d, k, embedding, loss)
    if kept is not None:  # pretrained earlier in this process, the cache not writable
        return kept[0], 0, kept[1], None
    width, path = d, find_model(d, k, embedding=embedding, loss=loss)
    if path is None:
        wider = sorted(
            e["n_features"]
            for e in locations.shipped_index()
            if e.get("n_clusters") == k and e.get("embedding") == embedding
            and e.get("loss") == loss and e.get("n_features", 0) > d
        )
        if wider:
            width = wider[0]
            path = find_model(width, k, embedding=embedding, loss=loss)
            logger.info("No model for d=%d, k=%d: using the shipped d=%d model with %d "
                        "zero features.", d, k, width, width - d)
        elif pretrain and not on_demand_feasible(d, k):
            return None
        else:  # pretrain on demand (or raise LookupError); saved to the cache, or kept
            return _pretrained(d, k, embedding, loss, pretrain=pretrain, progress=progress)
    try:
        model, metadata = stored_model(str(path), path.stat().st_mtime_ns)
    except ModelStoreError:
        if not pretrain or path.parent == locations.shipped_dir():
            raise
        # A broken cache file: load_model warns, pretrains it again and saves it.
        return _pretrained(d, k, embedding, loss, pretrain=True, progress=progress)
    entry = next((e for e in locations.shipped_index() if e.get("file") == path.name
                  and path.parent == locations.shipped_dir()), None)
    return model, width - d, metadata, entry


def expected_ratio(metadata: dict, entry: dict | None, init) -> float | None:
    """The model's expected cost after its steps over Lloyd's from the fit's kind of start:
    the held-out figures of the shipped index (mean over the task families) if any, else
    the training's multi-step validation figure; None for a model trained for one step.

    Examples
    --------
    >>> expected_ratio({"training": {"val_multistep": 0.95}}, None, "k-means++")
    0.95
    """
    heldout = (entry or {}).get("heldout") or {}
    start = "random" if isinstance(init, str) and init == "random" else "k-means++"
    ratios = [v["ratio20"] for key, v in heldout.items()
              if key.endswith("/" + start) and isinstance(v, dict)]
    if ratios:
        return sum(ratios) / len(ratios)
    value = (metadata.get("training") or {}).get("val_multistep")
    return None if value is None else float(value)


def choose_model(n_features: int, n_clusters: int, *, embedding: str = "binary",
                 loss: str = "l2", pretrain: bool = True, progress: bool = False,
                 init="k-means++", judge: bool = True,
                 device: torch.device | str = "cpu") -> Choice:
    """The learned model a fit of this shape runs, or why it runs none.

    Parameters
    ----------
    n_features, n_clusters : int
    embedding, loss : str
    pretrain : bool, default=True
        Pretrain on demand where no model is stored (False: :class:`LookupError`).
    progress : bool, default=False
        A progress bar while pretraining.
    init : str or array-like, default="k-means++"
        The fit's initialisation (which held-out figure judges the model).
    judge : bool, default=True
        Skip a model not expected to gain :data:`HELPS_BELOW` over Lloyd's algorithm
        (False: run any model, as a fit with ``finish="none"`` must).
    device : torch.device or str, default="cpu"

    Returns
    -------
    Choice

    Examples
    --------
    >>> choose_model(2, 1).skipped
    'n_clusters=1: the mean is the optimum'
    """
    if n_clusters == 1:
        return Choice(None, skipped="n_clusters=1: the mean is the optimum")
    found = _find(n_features, n_clusters, embedding, loss, pretrain=pretrain, progress=progress)
    if found is None:
        return Choice(None, skipped=(
            f"no model is stored for n_features={n_features}, n_clusters={n_clusters}, "
            "and pretraining one on demand would take over 90 s (see "
            "skformer.store.on_demand_feasible)"))
    model, padding, metadata, entry = found
    ratio = expected_ratio(metadata, entry, init)
    if judge and ratio is not None and ratio >= HELPS_BELOW:
        return Choice(None, skipped=(
            f"the model for d={n_features + padding}, k={n_clusters} is not expected to "
            f"beat Lloyd's algorithm (cost ratio {ratio:.4f} on held-out tasks)"))
    device = torch.device(device)
    weight = next(model.parameters())
    if weight.device != device or weight.dtype != torch.float32:
        # The stored model is shared by every fit of the process (``stored_model``):
        # move a copy, never the shared one.
        model = copy.deepcopy(model).to(device=device, dtype=torch.float32)
    return Choice(model, padding)
