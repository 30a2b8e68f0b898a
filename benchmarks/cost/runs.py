"""Measurements of the cost benchmark: time and peak memory of the learned model, OH and BN.

See :mod:`benchmarks.cost` for what is measured and how.
"""

from __future__ import annotations

import gc
import math
import platform
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = [
    "DEVICES",
    "EMBEDDINGS",
    "GRIDS",
    "PAPER_REPS",
    "PAPER_WARMUP",
    "CostRecord",
    "grid_shapes",
    "machine_info",
    "measure",
    "measure_interleaved",
    "peak_memory",
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
    """``"cuda_max_allocated"`` or ``"torch_profiler"`` (see :mod:`benchmarks.cost`)."""


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
