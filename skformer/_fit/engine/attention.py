"""The literal attention backend: the exact transformer's layer itself, over all the
points (``path="dense"``): the proof that the hard-attention layer is Lloyd's step, not
a fast path (its attention costs ``n**2``; sparse rows are made dense)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from ...nn.model import ExactLloydModel
from ..sources import Source
from .base import Backend, LloydStats, Stepper

__all__ = ["AttentionBackend"]


class AttentionBackend(Backend):
    """Lloyd's step by :class:`~skformer.nn.model.ExactLloydModel`'s literal layer;
    scoring and norms by ``scorer`` (another backend of the same source)."""

    def __init__(self, source: Source, model: ExactLloydModel, scorer: Backend):
        self.source, self.model, self.scorer = source, model, scorer

    def stepper(self) -> Stepper:
        return self._step

    @torch.no_grad()
    def _step(self, c: np.ndarray):
        x, w = self.source.gather(None)
        if sp.issparse(x):
            x = x.toarray()
        device = self.source.device
        x = torch.from_numpy(x).to(device).unsqueeze(0)
        wt = None if w is None else torch.from_numpy(w).to(device, x.dtype).unsqueeze(0)
        step = self.model(x, torch.from_numpy(c).to(device).unsqueeze(0), wt)
        lab = step.labels[0].cpu()
        k = c.shape[0]
        ws = torch.ones(lab.shape[0], dtype=torch.float64) if w is None else torch.from_numpy(w)
        mass = torch.zeros(k, dtype=torch.float64).index_add_(0, lab, ws)
        sums = torch.zeros(k, c.shape[1], dtype=torch.float64).index_add_(
            0, lab, x[0].double().cpu() * ws.unsqueeze(-1))
        return step.centres[0].cpu().numpy(), LloydStats(sums.numpy(), mass.numpy())

    def score(self, c, other=None):
        return self.scorer.score(c, other)

    def norms(self) -> float:
        return self.scorer.norms()

    def costs(self, c):
        return self.scorer.costs(c)
