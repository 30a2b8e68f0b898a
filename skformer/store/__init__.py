"""The pretrained-model store: shipped weights, a user cache, pretraining on demand.

A learned model is tied to one shape ``(d, k)``, one cluster-index embedding and one
training loss. :func:`load_model` finds it in this order:

1. the weights shipped in the package (``skformer/weights/`` and its ``index.json``);
2. the user cache (``$SKFORMER_CACHE_DIR``, else ``$XDG_CACHE_HOME/skformer``, else
   ``~/.cache/skformer``), one file per model named ``d{d}_k{k}_{embedding}_{loss}.safetensors``;
3. if allowed, a short training run (the ``"multistep"`` preset of
   :class:`~skformer.training.TrainingConfig` on a smaller budget,
   :func:`on_demand_config`) whose result is saved to the cache, or kept in memory
   for the process where the cache cannot be written (:func:`kept_model`).

The store has three parts:

- :mod:`skformer.store.format`: the file format (safetensors + JSON metadata + content
  hash), :func:`save_model`, :func:`read_model`, and :func:`check_target` (what a write
  may replace: a new path or a file of the same kind; never a link or a device);
- :mod:`skformer.store.locations`: file names, the cache and shipped folders, the shipped
  index, :func:`find_model`;
- :mod:`skformer.store.pretraining`: :func:`pretrain` (and :func:`check_pretrain`, what
  it checks before training) and :func:`load_model`, with the inter-process lock of
  on-demand pretraining;
- :mod:`skformer.store.selection`: :func:`choose_model`, the learned model a fit runs
  (or why none), for every driver of the learned steps.
"""

from .format import (
    FORMAT,
    FORMAT_VERSION,
    ModelStoreError,
    StoredModel,
    check_target,
    read_model,
    save_model,
)
from .locations import (
    cache_dir,
    find_model,
    index_entry,
    model_filename,
    shipped_dir,
    shipped_index,
    write_index,
)
from .pretraining import (
    MAX_PRETRAIN_FEATURES,
    check_pretrain,
    kept_model,
    load_model,
    on_demand_config,
    on_demand_feasible,
    on_demand_steps,
    pretrain,
)
from .selection import Choice, choose_model, expected_ratio

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_PRETRAIN_FEATURES",
    "Choice",
    "ModelStoreError",
    "StoredModel",
    "cache_dir",
    "check_pretrain",
    "check_target",
    "choose_model",
    "expected_ratio",
    "find_model",
    "index_entry",
    "kept_model",
    "load_model",
    "model_filename",
    "on_demand_config",
    "on_demand_feasible",
    "on_demand_steps",
    "pretrain",
    "read_model",
    "save_model",
    "shipped_dir",
    "shipped_index",
    "write_index",
]
