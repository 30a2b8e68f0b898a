"""Which learned model a fit uses, and whether it is worth running.

One decision for every driver of the learned steps (:class:`skformer.TransformerKMeans`
and :func:`skformer.batch_k_means`): :func:`choose_model` finds the model for a shape
and says why there is none to run, where that is so. In order:

1. a model trained for the shape (shipped, cached, or a wider shipped one with zero
   features), where its held-out figures expect it to help;
2. with the binary code, the shape-generic model of the code width
   (:mod:`skformer.store.generic`): every ``(d, k)``, nothing trained at fit time; data
   wider than :data:`PROJECTED_WIDTH` features are stepped in as many principal
   directions;
3. otherwise (one-hot or no index code) a model pretrained on demand, where the shape
   is within the on-demand budget.
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
from .generic import generic_model
from .locations import find_model
from .pretraining import kept_model, load_model, on_demand_feasible

__all__ = ["HELPS_BELOW", "PROJECTED_WIDTH", "Choice", "choose_model", "expected_ratio",
           "stored_model"]

logger = logging.getLogger("skformer")

# The learned run is made when the model's expected cost after its steps, relative to
# Lloyd's algorithm from the same kind of start, is below this (a 0.5 % gain): measured
# on held-out tasks for shipped models (``index.json``), on the training's validation
# tasks otherwise. Models trained for one step carry no such figure and always run.
HELPS_BELOW = 0.995
# Data wider than this run the shape-generic model's steps in this many principal
# directions of the context: a step costs in proportion to the width, and the k-means
# cost is about preserved in the top O(k) directions (docs: "Learned models for every
# shape" measures the projection against the full width).
PROJECTED_WIDTH = 64


class Choice(NamedTuple):
    """The learned model of a fit, or why there is none."""

    model: LearnedKMeansModel | None
    """On the fit's device, float32 (a copy where the shared one lives elsewhere)."""
    padding: int = 0
    """Zero features appended to the data to reach the model's width."""
    skipped: str | None = None
    """Why no learned steps run (``model`` is then None)."""
    project: int | None = None
    """Principal directions the steps run in (the model's width); None: all features."""
    origin: str = ""
    """``"trained"`` (a model of the shape), ``"generic"`` or ``"pretrained"`` (on demand
    in this call); empty when skipped."""


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
          progress: bool, on_demand: bool = True
          ) -> tuple[LearnedKMeansModel, int, dict, dict | None] | None:
    """The learned model for (d, k), how many zero features the data need, its metadata
    and its entry in the shipped index (None for a cached or kept model).

    A model kept in memory (pretrained on demand earlier in this process, where the
    cache could not be written) comes first, then one stored for exactly (d, k)
    (shipped or cached). Otherwise the narrowest *shipped* model with the same k and
    more features is used, the data padded with zero features (which change no
    distance). Otherwise one is pretrained on demand (``pretrain=True``; saved to the
    cache, or kept in memory where it cannot be written) or :class:`LookupError` is
    raised; None where the shape is too large to pretrain within the on-demand budget
    (:func:`~skformer.store.on_demand_feasible`: wide data, many clusters), and where
    nothing is stored and ``on_demand`` is False.
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
        elif not on_demand or (pretrain and not on_demand_feasible(d, k)):
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
    device = torch.device(device)
    if embedding == "binary":
        found = _find(n_features, n_clusters, embedding, loss, pretrain=pretrain,
                      progress=progress, on_demand=False)
        if found is not None:
            model, padding, metadata, entry = found
            ratio = expected_ratio(metadata, entry, init)
            if not (judge and ratio is not None and ratio >= HELPS_BELOW):
                return Choice(_on(model, device), padding, origin="trained")
            logger.info("The model trained for d=%d, k=%d is not expected to beat Lloyd's "
                        "algorithm (cost ratio %.4f): the generic one runs.",
                        n_features + padding, n_clusters, ratio)
        generic = generic_model(min(n_features, PROJECTED_WIDTH), n_clusters)
        if generic is not None:
            project = PROJECTED_WIDTH if n_features > PROJECTED_WIDTH else None
            return Choice(_on(generic[0], device), project=project, origin="generic")
    found = _find(n_features, n_clusters, embedding, loss, pretrain=pretrain, progress=progress)
    if found is None:
        return Choice(None, skipped=(
            f"no model is stored for n_features={n_features}, n_clusters={n_clusters}, "
            f"embedding={embedding!r}, and pretraining one on demand would take over 90 s "
            f"(skformer.store.on_demand_feasible). embedding='binary' serves every shape "
            f"without training; or train it once with `skformer pretrain --d {n_features} "
            f"--k {n_clusters} --embedding {embedding}`"))
    model, padding, metadata, entry = found
    ratio = expected_ratio(metadata, entry, init)
    if judge and ratio is not None and ratio >= HELPS_BELOW:
        return Choice(None, skipped=(
            f"the model for d={n_features + padding}, k={n_clusters} is not expected to "
            f"beat Lloyd's algorithm (cost ratio {ratio:.4f} on held-out tasks); "
            "embedding='binary' runs the generic model instead"))
    return Choice(_on(model, device), padding, origin="trained")


def _on(model: LearnedKMeansModel, device: torch.device) -> LearnedKMeansModel:
    """``model`` in float32 on ``device``: a copy where it lives elsewhere."""
    weight = next(model.parameters())
    if weight.device != device or weight.dtype != torch.float32:
        # The stored model is shared by every fit of the process (``stored_model``):
        # move a copy, never the shared one.
        model = copy.deepcopy(model).to(device=device, dtype=torch.float32)
    return model
