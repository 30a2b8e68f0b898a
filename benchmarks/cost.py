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

from __future__ import annotations

import argparse
import gc
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch

__all__ = [
    "EMBEDDINGS",
    "GRIDS",
    "CostRecord",
    "CostSummary",
    "grid_shapes",
    "machine_info",
    "measure",
    "measure_interleaved",
    "peak_memory",
    "plot_summary",
    "summarise",
]

EMBEDDINGS = ("onehot", "binary")
DEVICES = ("cpu", "cuda", "auto")
GRIDS = {
    "figure1": ((4, 8, 16, 32, 64, 128), (10, 16, 25, 40, 64, 100)),
    "table1": ((32,), (6, 25, 100, 400, 1000)),
}
"""Preset grids: name -> (values of d, values of k) (paper B, Figure 1 and Table 1)."""

PAPER_WARMUP, PAPER_REPS = 10, 30
_LOSS_KIND, _LOSS_TAU = "ne", 0.1


@dataclass(frozen=True)
class CostRecord:
    """Cost of one ``(d, k, embedding)``: median times in milliseconds, peak bytes."""

    d: int
    k: int
    embedding: str
    width: int
    """Token width ``e``: ``d + k`` (onehot) or ``d + ceil(log2 k)`` (binary)."""
    device: str
    batch: int
    n: int
    warmup: int
    reps: int
    """Timed repetitions the medians are taken over (the paper: 30)."""
    forward_train_ms: float
    backward_ms: float
    forward_eval_ms: float
    peak_memory_bytes: int
    memory_method: str
    """``"cuda_max_allocated"`` or ``"torch_profiler"`` (see the module docstring)."""


@dataclass(frozen=True)
class CostSummary:
    """BN against OH at one ``(d, k)``: speedups are OH time / BN time."""

    d: int
    k: int
    onehot: CostRecord
    binary: CostRecord
    forward_train_speedup: float
    backward_speedup: float
    forward_eval_speedup: float
    memory_reduction: float
    """``1 - peak(BN) / peak(OH)``: 0.693 is the paper's 69.3% at k = 1000."""


def grid_shapes(name: str) -> list[tuple[int, int]]:
    """The ``(d, k)`` pairs of a preset grid.

    Parameters
    ----------
    name : {"figure1", "table1"}

    Returns
    -------
    list of (int, int)

    Examples
    --------
    >>> grid_shapes("table1")
    [(32, 6), (32, 25), (32, 100), (32, 400), (32, 1000)]
    """
    if name not in GRIDS:
        raise ValueError(f"grid must be one of {tuple(GRIDS)}, got {name!r}.")
    ds, ks = GRIDS[name]
    return [(d, k) for d in ds for k in ks]


def _resolve_device(device: str) -> torch.device:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}.")
    from skformer._base import resolve_device

    return resolve_device(device)


def _check(d: int, k: int, embeddings: Sequence[str], batch: int, n: int, warmup: int,
           reps: int) -> None:
    for name, value, low in (("d", d, 1), ("k", k, 2), ("batch", batch, 1), ("n", n, 1),
                             ("warmup", warmup, 0), ("reps", reps, 1)):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
    bad = [e for e in embeddings if e not in EMBEDDINGS]
    if bad or not embeddings or len(set(embeddings)) != len(embeddings):
        raise ValueError(
            f"embeddings must be distinct values of {EMBEDDINGS}, got {tuple(embeddings)!r}."
        )


def _build(d, k, embedding, batch, n, device, seed):
    """Model, points, centres and dropout generator, all drawn from ``seed``.

    The points (b, n, d) and centres (b, k, d) are uniform in [0, 1]^d and the same for
    every embedding. The parameters are redrawn from the seeded generator with PyTorch's
    default ``nn.Linear`` distribution, U(-1/sqrt(e), 1/sqrt(e)), so nothing depends on
    the global random state.
    """
    from skformer.nn.learned import LearnedKMeansModel

    gen = torch.Generator().manual_seed(seed)
    x = torch.rand((batch, n, d), generator=gen)
    c = torch.rand((batch, k, d), generator=gen)
    model = LearnedKMeansModel(
        d, k, embedding=embedding, gamma=1.0, activation="softmax", bias=True, dropout=0.01
    )
    width = model.layer.embed_dim
    bound = 1.0 / math.sqrt(width)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.rand(p.shape, generator=gen) * (2 * bound) - bound)
    dropout_gen = torch.Generator(device=device).manual_seed(seed + 1)
    return model.to(device), x.to(device), c.to(device), dropout_gen


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _training_step(model, x, c, generator) -> torch.Tensor:
    from skformer.losses import smoothed_kmeans_loss

    model.train()
    out = model(x, c, generator=generator)
    return smoothed_kmeans_loss(x, out, tau=_LOSS_TAU, kind=_LOSS_KIND)


def _timed_round(model, x, c, generator, device) -> tuple[float, float, float]:
    """One training forward (with loss), its backward and one eval forward, in ms."""
    model.zero_grad(set_to_none=True)
    _sync(device)
    t0 = time.perf_counter()
    loss = _training_step(model, x, c, generator)
    _sync(device)
    t1 = time.perf_counter()
    loss.backward()
    _sync(device)
    t2 = time.perf_counter()
    model.eval()
    with torch.no_grad():
        model(x, c)
    _sync(device)
    t3 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3


def peak_memory(d: int, k: int, embedding: str, *, batch: int = 32, n: int = 1024,
                device: str = "cpu", seed: int = 0) -> tuple[int, str]:
    """Peak bytes allocated to build the model and inputs and run one training step.

    Parameters
    ----------
    d, k : int
    embedding : {"onehot", "binary"}
    batch, n : int
    device : {"cpu", "cuda", "auto"}, default="cpu"
    seed : int, default=0

    Returns
    -------
    peak : int
        Bytes, model parameters, inputs, activations, saved tensors and gradients included.
    method : str
        ``"cuda_max_allocated"`` or ``"torch_profiler"``.

    Notes
    -----
    CPU: ``torch.profiler.profile(activities=[ProfilerActivity.CPU], profile_memory=True)``
    records one ``[memory]`` event per allocation (positive bytes) and per free (negative
    bytes) of the CPU allocator; the peak is the maximum of their running sum in time
    order. Memory that does not go through PyTorch's allocator (oneDNN scratch buffers,
    the interpreter) is not counted, as ``max_memory_allocated`` does not count it on CUDA.
    """
    dev = _resolve_device(device)
    _check(d, k, (embedding,), batch, n, 0, 1)
    gc.collect()
    if dev.type == "cuda":
        _sync(dev)
        base = torch.cuda.memory_allocated(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        _memory_step(d, k, embedding, batch, n, dev, seed)
        _sync(dev)
        return int(torch.cuda.max_memory_allocated(dev) - base), "cuda_max_allocated"

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        _memory_step(d, k, embedding, batch, n, dev, seed)
    from torch.autograd import DeviceType

    events = [
        (e.start_ns(), e.nbytes())
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type() == DeviceType.CPU
    ]
    if not events:
        raise RuntimeError("torch.profiler recorded no CPU memory events.")
    total = peak = 0
    for _, nbytes in sorted(events, key=lambda ev: ev[0]):
        total += nbytes
        peak = max(peak, total)
    return int(peak), "torch_profiler"


def _memory_step(d, k, embedding, batch, n, device, seed) -> None:
    model, x, c, gen = _build(d, k, embedding, batch, n, device, seed)
    _training_step(model, x, c, gen).backward()


def measure_interleaved(
    d: int,
    k: int,
    embeddings: Sequence[str] = EMBEDDINGS,
    *,
    batch: int = 32,
    n: int = 1024,
    warmup: int = PAPER_WARMUP,
    reps: int = PAPER_REPS,
    device: str = "cpu",
    seed: int = 0,
) -> list[CostRecord]:
    """Measure several embeddings of one ``(d, k)``, alternating them every round.

    Round ``r`` runs one training forward, backward and eval forward of each embedding,
    in the given order for even ``r`` and reversed for odd ``r``; the first ``warmup``
    rounds are discarded. Then the peak memory of each embedding is measured alone.

    Parameters
    ----------
    d, k : int
        Data dimension and number of clusters (``k >= 2``).
    embeddings : sequence of {"onehot", "binary"}, default=("onehot", "binary")
    batch : int, default=32
        Tasks per batch.
    n : int, default=1024
        Points per task.
    warmup : int, default=10
    reps : int, default=30
    device : {"cpu", "cuda", "auto"}, default="cpu"
    seed : int, default=0
        Seed of the points, centres, parameters and dropout masks.

    Returns
    -------
    list of CostRecord
        One per embedding, in the order given.

    Examples
    --------
    >>> oh, bn = measure_interleaved(2, 3, batch=2, n=8, warmup=0, reps=1)
    >>> (oh.width, bn.width), bn.memory_method
    ((5, 4), 'torch_profiler')
    """
    dev = _resolve_device(device)
    _check(d, k, embeddings, batch, n, warmup, reps)
    built = {e: _build(d, k, e, batch, n, dev, seed) for e in embeddings}
    times: dict[str, list[tuple[float, float, float]]] = {e: [] for e in embeddings}
    for rnd in range(warmup + reps):
        for e in embeddings if rnd % 2 == 0 else reversed(embeddings):
            result = _timed_round(*built[e], dev)
            if rnd >= warmup:
                times[e].append(result)
    widths = {e: built[e][0].layer.embed_dim for e in embeddings}
    del built
    records = []
    for e in embeddings:
        forward_train, backward, forward_eval = (
            statistics.median(t) for t in zip(*times[e], strict=True)
        )
        peak, method = peak_memory(d, k, e, batch=batch, n=n, device=dev.type, seed=seed)
        records.append(
            CostRecord(
                d=d, k=k, embedding=e, width=widths[e], device=dev.type, batch=batch, n=n,
                warmup=warmup, reps=reps, forward_train_ms=forward_train,
                backward_ms=backward, forward_eval_ms=forward_eval,
                peak_memory_bytes=peak, memory_method=method,
            )
        )
    return records


def measure(d: int, k: int, embedding: str, *, batch: int = 32, n: int = 1024,
            warmup: int = PAPER_WARMUP, reps: int = PAPER_REPS, device: str = "cpu",
            seed: int = 0) -> CostRecord:
    """Measure one ``(d, k, embedding)``; see :func:`measure_interleaved`.

    Comparisons between embeddings should use :func:`measure_interleaved`, which takes
    their times in the same run.

    Examples
    --------
    >>> rec = measure(2, 3, "binary", batch=2, n=8, warmup=0, reps=1)
    >>> rec.width, rec.forward_train_ms > 0, rec.peak_memory_bytes > 0
    (4, True, True)
    """
    (record,) = measure_interleaved(d, k, (embedding,), batch=batch, n=n, warmup=warmup,
                                    reps=reps, device=device, seed=seed)
    return record


def summarise(records: Sequence[CostRecord]) -> list[CostSummary]:
    """Pair OH and BN records of each ``(d, k)``: BN's speedups and memory reduction.

    Records of a ``(d, k)`` without both embeddings are left out.

    Parameters
    ----------
    records : sequence of CostRecord

    Returns
    -------
    list of CostSummary
        Sorted by ``(d, k)``.

    Notes
    -----
    ``speedup = t(OH) / t(BN)`` (above 1: BN is faster) for the training forward, the
    backward and the eval forward; ``memory_reduction = 1 - peak(BN) / peak(OH)``.
    """
    pairs: dict[tuple[int, int], dict[str, CostRecord]] = {}
    for r in records:
        slot = pairs.setdefault((r.d, r.k), {})
        if r.embedding in slot:
            raise ValueError(f"two {r.embedding} records for d={r.d}, k={r.k}.")
        slot[r.embedding] = r
    out = []
    for (d, k), slot in sorted(pairs.items()):
        if set(slot) != set(EMBEDDINGS):
            continue
        oh, bn = slot["onehot"], slot["binary"]
        out.append(
            CostSummary(
                d=d, k=k, onehot=oh, binary=bn,
                forward_train_speedup=oh.forward_train_ms / bn.forward_train_ms,
                backward_speedup=oh.backward_ms / bn.backward_ms,
                forward_eval_speedup=oh.forward_eval_ms / bn.forward_eval_ms,
                memory_reduction=1.0 - bn.peak_memory_bytes / oh.peak_memory_bytes,
            )
        )
    return out


def machine_info(device: str = "cpu") -> dict:
    """Platform, torch version, device name and thread count, for the JSON output."""
    dev = _resolve_device(device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else _cpu_name()
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": dev.type,
        "device_name": name,
        "threads": torch.get_num_threads(),
    }


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


_PLOT_METRICS = (
    ("forward_train_speedup", "forward (train) speedup, OH / BN"),
    ("backward_speedup", "backward speedup, OH / BN"),
    ("forward_eval_speedup", "forward (eval) speedup, OH / BN"),
    ("memory_reduction", "peak memory reduction (%), 1 - BN / OH"),
)


def plot_summary(summaries: Sequence[CostSummary], path: str, title: str = "") -> None:
    """Plot BN against OH and save the figure to ``path``.

    With several ``d`` and several ``k`` (the Figure 1 grid): four heatmaps over
    ``(d, k)`` (the three speedups and the memory reduction). Otherwise lines against
    ``k`` (one ``d``) or against ``d`` (one ``k``): the speedups, and the memory
    reduction on a second panel.
    """
    try:
        from matplotlib.colors import TwoSlopeNorm
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plotting requires matplotlib. Install with: pip install skformer[plot]"
        ) from exc
    if not summaries:
        raise ValueError("nothing to plot: no (d, k) has both onehot and binary records.")
    ds = sorted({s.d for s in summaries})
    ks = sorted({s.k for s in summaries})
    by_shape = {(s.d, s.k): s for s in summaries}
    if len(ds) > 1 and len(ks) > 1:
        fig = Figure(figsize=(11, 9), layout="constrained")
        axes = fig.subplots(2, 2).ravel()
        for ax, (field, label) in zip(axes, _PLOT_METRICS, strict=True):
            percent = field == "memory_reduction"
            scale, centre = (100.0, 0.0) if percent else (1.0, 1.0)
            grid = [[scale * getattr(by_shape[d, k], field) if (d, k) in by_shape else math.nan
                     for k in ks] for d in ds]
            values = [v for row in grid for v in row if not math.isnan(v)]
            norm = TwoSlopeNorm(centre, min(min(values), centre - 1e-3),
                                max(max(values), centre + 1e-3))
            image = ax.imshow(grid, cmap="RdYlGn", norm=norm, origin="lower", aspect="auto")
            for i, row in enumerate(grid):
                for j, v in enumerate(row):
                    if not math.isnan(v):
                        text = f"{v:.1f}%" if percent else f"{v:.2f}x"
                        ax.text(j, i, text, ha="center", va="center", fontsize=8)
            ax.set_xticks(range(len(ks)), [str(k) for k in ks])
            ax.set_yticks(range(len(ds)), [str(d) for d in ds])
            ax.set_xlabel("k")
            ax.set_ylabel("d")
            ax.set_title(label)
            fig.colorbar(image, ax=ax)
    else:
        along_k = len(ds) == 1
        xs = ks if along_k else ds
        rows = [by_shape[(ds[0], x) if along_k else (x, ks[0])] for x in xs]
        fig = Figure(figsize=(10, 4), layout="constrained")
        left, right = fig.subplots(1, 2)
        for field, label in _PLOT_METRICS[:3]:
            left.plot(xs, [getattr(r, field) for r in rows], marker="o", label=label)
        left.axhline(1.0, color="grey", lw=0.8, ls="--")
        left.set_ylabel("speedup of BN (OH time / BN time)")
        left.legend(fontsize=8)
        right.plot(xs, [100 * r.memory_reduction for r in rows], marker="o", color="C3")
        right.axhline(0.0, color="grey", lw=0.8, ls="--")
        right.set_ylabel("peak memory reduction of BN (%)")
        fixed = f"d = {ds[0]}" if along_k else f"k = {ks[0]}"
        for ax in (left, right):
            ax.set_xscale("log")
            ax.set_xticks(xs, [str(x) for x in xs])
            ax.minorticks_off()
            ax.set_xlabel("k" if along_k else "d")
            ax.set_title(fixed)
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=120)


def _cell(oh: float, bn: float, ratio: str) -> str:
    return f"{oh:.2f} / {bn:.2f} [{ratio}]"


def format_summary(summaries: Sequence[CostSummary]) -> str:
    """A markdown table of :func:`summarise`'s output, laid out as the paper's Table 1."""
    lines = [
        "| d | k | e-d OH / BN | forward train ms OH / BN [speedup] | backward ms OH / BN "
        "[speedup] | forward eval ms OH / BN [speedup] | peak memory MiB OH / BN [reduction] |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        oh, bn = s.onehot, s.binary
        lines.append(
            f"| {s.d} | {s.k} | {oh.width - s.d} / {bn.width - s.d} | "
            f"{_cell(oh.forward_train_ms, bn.forward_train_ms, f'{s.forward_train_speedup:.2f}x')}"
            f" | {_cell(oh.backward_ms, bn.backward_ms, f'{s.backward_speedup:.2f}x')} | "
            f"{_cell(oh.forward_eval_ms, bn.forward_eval_ms, f'{s.forward_eval_speedup:.2f}x')}"
            f" | {_cell(oh.peak_memory_bytes / 2**20, bn.peak_memory_bytes / 2**20, f'{100 * s.memory_reduction:.1f}%')} |"  # noqa: E501
        )
    return "\n".join(lines)


def _format_record(r: CostRecord) -> str:
    return (f"| {r.d} | {r.k} | {r.embedding} | {r.width} | {r.forward_train_ms:.2f} | "
            f"{r.backward_ms:.2f} | {r.forward_eval_ms:.2f} | "
            f"{r.peak_memory_bytes / 2**20:.2f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="skformer bench cost", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--grid", choices=sorted(GRIDS),
                        help="preset (d, k) grid: figure1 (6 x 6) or table1 (d = 32)")
    parser.add_argument("--d", type=int, nargs="+", help="values of d (with --k)")
    parser.add_argument("--k", type=int, nargs="+", help="values of k (with --d)")
    parser.add_argument("--embeddings", nargs="+", choices=EMBEDDINGS, default=list(EMBEDDINGS))
    parser.add_argument("--batch", type=int, default=32, help="tasks per batch (default: 32)")
    parser.add_argument("--n", type=int, default=1024, help="points per task (default: 1024)")
    parser.add_argument("--warmup", type=int, default=PAPER_WARMUP,
                        help=f"warm-up rounds (default: {PAPER_WARMUP})")
    parser.add_argument("--reps", type=int, default=PAPER_REPS,
                        help=f"timed repetitions (default: {PAPER_REPS})")
    parser.add_argument("--device", choices=DEVICES, default="auto",
                        help="device (default: auto = cuda if available)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the records as JSON to this file")
    parser.add_argument("--plot", help="save a figure of BN against OH to this file")
    args = parser.parse_args(argv)
    if args.grid is not None and (args.d or args.k):
        parser.error("give either --grid or --d and --k, not both")
    if args.grid is None and not (args.d and args.k):
        parser.error("give --grid {figure1,table1} or both --d and --k")
    shapes = grid_shapes(args.grid) if args.grid else [(d, k) for d in args.d for k in args.k]

    try:
        machine = machine_info(args.device)
    except ValueError as exc:
        print(f"skformer bench cost: error: {exc}", file=sys.stderr)
        return 2
    print(f"# {machine['device_name']} ({machine['device']}), torch {machine['torch']}, "
          f"{machine['threads']} threads; batch {args.batch}, n {args.n}; medians of "
          f"{args.reps} timed reps after {args.warmup} warm-up rounds; peak memory: "
          f"{'cuda_max_allocated' if machine['device'] == 'cuda' else 'torch_profiler'}")
    if args.reps < PAPER_REPS or args.warmup < PAPER_WARMUP:
        print(f"# note: {args.reps} timed repetitions and {args.warmup} warm-up rounds, "
              f"fewer than the paper's {PAPER_REPS} and {PAPER_WARMUP}")
    paired = set(args.embeddings) == set(EMBEDDINGS)
    if paired:
        print("\n".join(format_summary([]).splitlines()[:2]), flush=True)
    else:
        print("| d | k | embedding | e | forward train ms | backward ms | forward eval ms | "
              "peak memory MiB |\n|---|---|---|---|---|---|---|---|", flush=True)
    records: list[CostRecord] = []
    for d, k in shapes:
        try:
            new = measure_interleaved(d, k, args.embeddings, batch=args.batch, n=args.n,
                                      warmup=args.warmup, reps=args.reps,
                                      device=machine["device"], seed=args.seed)
        except ValueError as exc:
            print(f"skformer bench cost: error: {exc}", file=sys.stderr)
            return 2
        records.extend(new)
        if paired:
            print(format_summary(summarise(new)).splitlines()[-1], flush=True)
        else:
            for r in new:
                print(_format_record(r), flush=True)
        if args.out:  # rewritten after every shape, so a long sweep keeps what it measured
            with open(args.out, "w") as f:
                json.dump([{**asdict(r), "machine": machine} for r in records], f, indent=1)
    if args.plot:
        summaries = summarise(records)
        if not summaries:
            print("skformer bench cost: error: --plot needs both embeddings", file=sys.stderr)
            return 2
        title = (f"BN against OH: batch {args.batch}, n {args.n}, median of {args.reps} reps, "
                 f"{machine['device_name']} ({machine['device']}, {machine['threads']} threads)")
        plot_summary(summaries, args.plot, title=title)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
