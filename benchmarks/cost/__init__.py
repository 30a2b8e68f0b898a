"""Benchmark: cost of the learned one-layer model, one-hot (OH) against binary (BN) embedding.

The model is :class:`skformer.nn.learned.LearnedKMeansModel` (one layer of paper eq. (4),
softmax distance attention, gamma = 1, biased projections, attention dropout 0.01) with
token width ``d + k`` (OH) or ``d + ceil(log2 k)`` (BN). For every ``(d, k, embedding)``
it measures, on ``batch`` random tasks of ``n`` points in [0, 1]^d and ``k`` random
centres (paper B, Figure 1 and Table 1: 32 tasks, n = 1024, 10 warm-up rounds, 30 timed
repetitions):

* ``forward_train_ms``: the forward pass in training mode (graph recorded, dropout on)
  plus the smoothed k-means loss of the output centres (NE, tau = 0.1);
* ``backward_ms``: ``loss.backward()``;
* ``forward_eval_ms``: the forward pass in eval mode under ``torch.no_grad()``;
* ``peak_memory_bytes``: the peak of allocated memory over building the model and the
  inputs and running one training step (forward, loss, backward), i.e. the raw peak
  of that step, model and inputs included. On CUDA it is
  ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``, less what was
  allocated before (``memory_method="cuda_max_allocated"``); on the CPU it is the peak
  of the running sum of the allocation and free events that ``torch.profiler`` records
  with ``profile_memory=True`` (``memory_method="torch_profiler"``): a measurement of
  the bytes the CPU allocator handed out, not an estimate.

Times are medians over the timed repetitions. OH and BN of one ``(d, k)`` are measured in
one run, alternating within every repetition (the order flips each round), so their
ratios come from the same conditions on a noisy machine.

Run it with ``skformer bench cost --grid table1 [--reps 5] [--out FILE.json]
[--plot FILE.png]`` or with explicit ``--d ... --k ...`` lists.
"""

from benchmarks.cost.cli import main
from benchmarks.cost.report import CostSummary, format_summary, plot_summary, summarise
from benchmarks.cost.runs import (
    EMBEDDINGS,
    GRIDS,
    PAPER_REPS,
    PAPER_WARMUP,
    CostRecord,
    grid_shapes,
    machine_info,
    measure,
    measure_interleaved,
    peak_memory,
)

__all__ = [
    "EMBEDDINGS",
    "GRIDS",
    "PAPER_REPS",
    "PAPER_WARMUP",
    "CostRecord",
    "CostSummary",
    "format_summary",
    "grid_shapes",
    "machine_info",
    "main",
    "measure",
    "measure_interleaved",
    "peak_memory",
    "plot_summary",
    "summarise",
]
