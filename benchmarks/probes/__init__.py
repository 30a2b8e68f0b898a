"""The paper's probes of the learned model, one module each, run by ``skformer probe NAME``.

Each module has ``main(argv) -> int``, a small CPU preset (the default, minutes) and the
paper's full setting (``--preset paper``), writes its numbers as JSON (``--out``) and its
figure with matplotlib (``--plot``, the ``plot`` extra).
"""

from __future__ import annotations

# name -> (module, one-line description); the CLI builds ``skformer probe NAME`` from it.
PROBES: dict[str, tuple[str, str]] = {
    "convergence": (
        "benchmarks.probes.convergence",
        "training curves, NE against L2 loss with OH, BN and NA embeddings (paper Fig. 2)",
    ),
    "multistep": (
        "benchmarks.probes.multistep",
        "multi-step clustering, naive iteration against re-embedding (paper Fig. 6)",
    ),
    "shift": (
        "benchmarks.probes.shift",
        "distribution shift: unequal weights, anisotropic, half and double scale (Fig. 7)",
    ),
    "transfer": (
        "benchmarks.probes.transfer",
        "family transfer, 5 x 5 train/test grid over noise families (paper Fig. 8)",
    ),
    "dissimilarity": (
        "benchmarks.probes.dissimilarity",
        "task dissimilarity between families by 1-D earth mover's distance (Fig. 9)",
    ),
    "length": (
        "benchmarks.probes.length",
        "length generalisation to n in {128, 256, 1024, 2048} (paper Fig. 12)",
    ),
    "loss-gap": (
        "benchmarks.probes.loss_gap",
        "gap between the smoothed and the true k-means objective (paper Fig. 5)",
    ),
}

__all__ = ["PROBES"]
