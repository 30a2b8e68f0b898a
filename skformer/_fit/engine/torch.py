"""The torch backend: :func:`~skformer.nn.exact_step` block by block, on a GPU (and on
the CPU where numba is absent or switched off).

Dimension legend: ``m`` rows of a block, ``k`` clusters, ``d`` features.

Each block is a batch of one problem for the batched, masked, chunked kernel of
:mod:`skformer.nn.kernel` (the fused form of the exact transformer's layer), on the
block's tokens ``[x ; 1]`` so the products carry the centres' norms and the masses; its
sums in the data's dtype, merged across blocks in float64. A run reuses its scratch
buffers from step to step (:class:`~skformer.nn.kernel.Workspace`).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np
import torch

from ...nn.kernel import Workspace, exact_step
from ..sources import Block, Source, sum_parts
from .base import Backend, LloydStats, Stepper, contingency, dense_norms

__all__ = ["TorchBackend", "block_step"]

# The thread's scratch buffers while a run's step is under way (see workspace_scope).
_scratch = threading.local()


@contextmanager
def workspace_scope():
    """Within this block the calling thread reuses its buffers; they are freed on exit."""
    outer = getattr(_scratch, "workspace", None)
    _scratch.workspace = outer if outer is not None else Workspace()
    try:
        yield
    finally:
        if outer is None:
            _scratch.workspace = None


def block_step(block: Block, c: torch.Tensor, *, update: bool = True,
               inertia: bool = False, labels: bool = True):
    """:func:`~skformer.nn.kernel.exact_step` on a block (a batch of one problem), its
    sums in the data's dtype; on the block's tokens ``[x ; 1]`` where it has them."""
    c = c.to(block.x.device, block.x.dtype)
    tokens = update and block.tokens is not None
    return exact_step((block.tokens if tokens else block.x).unsqueeze(0), c.unsqueeze(0),
                      weight=None if block.w is None else block.w.unsqueeze(0),
                      update=update, inertia=inertia, augmented=tokens, labels=labels,
                      workspace=getattr(_scratch, "workspace", None))


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def torch_stats(block: Block, c: np.ndarray) -> LloydStats:
    """A block's contribution to the step from centres ``c`` (k, d)."""
    stats = block_step(block, torch.from_numpy(c), labels=False)
    return LloydStats(_numpy(stats.sums[0].double()), _numpy(stats.mass[0].double()))


def torch_score(block: Block, c: np.ndarray, other: np.ndarray | None):
    """A block's weighted sum of squared distances to the nearest of ``c`` (float64)
    and, with ``other`` centres, the (k * k,) contingency table, by the kernel."""
    stats = block_step(block, torch.from_numpy(c), update=False, inertia=True)
    inertia = float(stats.inertia[0])
    if other is None:
        return inertia, None
    labels2 = block_step(block, torch.from_numpy(other), update=False).labels[0]
    return inertia, contingency(stats.labels[0].cpu(), labels2.cpu(), c.shape[0])


class TorchBackend(Backend):
    """Dense rows on any device, stepped by :func:`~skformer.nn.exact_step` per block."""

    def __init__(self, source: Source, k: int):
        self.source, self.k = source, k

    def stepper(self) -> Stepper:
        def step(c: np.ndarray):
            with workspace_scope():
                return None, self.source.map_reduce(torch_stats, sum_parts, c)

        return step

    def score(self, c, other=None):
        value, table = self.source.map_reduce(torch_score, sum_parts, c, other)
        return float(value), table

    def norms(self) -> float:
        return float(self.source.map_reduce(dense_norms, sum_parts))
