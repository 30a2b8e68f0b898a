"""Principal subspaces: learned steps on wide data run in a few principal directions.

Dimension legend: ``b`` problems, ``r`` rows, ``d`` features, ``p`` principal
directions kept (``p < d``), ``k`` clusters.

The k-means cost of any centres is approximately preserved when the data are projected
onto their top ``O(k)`` principal directions (Cohen, Elder, Musco, Musco and Persu,
STOC 2015; Boutsidis, Zouzias, Mahoney and Drineas). Learned steps are run on the
projected rows (their cost grows with the width), and their centres are taken back to
the full space as the means of the rows they assign (:func:`lift`), where exact Lloyd
steps finish.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["Subspace", "lift", "principal_subspace"]


class Subspace(NamedTuple):
    """An affine subspace: rows ``x`` map to ``(x - mean) @ basis``."""

    mean: torch.Tensor
    """Shape (b, d): the rows' weighted mean."""
    basis: torch.Tensor
    """Shape (b, d, p): orthonormal columns, the top ``p`` principal directions."""

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """Rows or centres (b, m, d) in the subspace's coordinates (b, m, p)."""
        return torch.matmul(x - self.mean.unsqueeze(1).to(x.dtype), self.basis.to(x.dtype))

    def embed(self, z: torch.Tensor) -> torch.Tensor:
        """Coordinates (b, m, p) back in the full space (b, m, d): the points of the
        subspace, not the rows they came from."""
        basis = self.basis.to(z.dtype)
        return torch.matmul(z, basis.transpose(-1, -2)) + self.mean.unsqueeze(1).to(z.dtype)


@torch.no_grad()
def principal_subspace(x: torch.Tensor, weight: torch.Tensor | None, width: int) -> Subspace:
    """The top ``width`` weighted principal directions of each problem's rows.

    Computed in float64 from the ``d x d`` covariance when ``d <= r``, else from the
    ``r x r`` Gram matrix (whichever is smaller), by a symmetric eigendecomposition:
    deterministic, no random draws.

    Parameters
    ----------
    x : Tensor of shape (b, r, d)
    weight : Tensor of shape (b, r) or None
        Row weights (0 for padded rows).
    width : int
        Directions kept, ``p`` (at most ``d``).

    Returns
    -------
    Subspace

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> x = torch.randn(1, 300, 2, generator=g) @ torch.tensor([[3.0, 0, 0], [0, 1.0, 0]])
    >>> sub = principal_subspace(x, None, 2)
    >>> sub.basis.shape, round(abs(float(sub.basis[0, 0, 0])), 3)
    (torch.Size([1, 3, 2]), 1.0)
    >>> torch.allclose(sub.embed(sub.project(x)), x, atol=1e-5)   # x lies in the plane
    True
    """
    b, r, d = x.shape
    width = min(int(width), d)
    w = (torch.ones(b, r, dtype=torch.float64, device=x.device) if weight is None
         else weight.to(torch.float64))
    total = w.sum(1, keepdim=True).clamp_min(torch.finfo(torch.float64).tiny)
    xd = x.to(torch.float64)
    mean = (w.unsqueeze(-1) * xd).sum(1) / total
    centred = (xd - mean.unsqueeze(1)) * w.sqrt().unsqueeze(-1)
    if d <= r:
        cov = centred.transpose(-1, -2) @ centred  # (b, d, d)
        _, vectors = torch.linalg.eigh(cov)  # ascending eigenvalues
        basis = vectors[..., -width:].flip(-1)
    else:
        gram = centred @ centred.transpose(-1, -2)  # (b, r, r)
        values, vectors = torch.linalg.eigh(gram)
        top = vectors[..., -width:].flip(-1)  # (b, r, min(p, r))
        sv = values[..., -width:].flip(-1).clamp_min(0).sqrt()
        basis = (centred.transpose(-1, -2) @ top) / sv.clamp_min(1e-300).unsqueeze(1)
        # Directions of zero variance (fewer rows than ``width``, or repeated rows): the
        # rows have no extent along them, so zero columns (every row projects to 0 there)
        # serve as well as any unit vector orthogonal to the others.
        basis = torch.where(sv.unsqueeze(1) > 0, basis, torch.zeros_like(basis))
        basis = torch.nn.functional.pad(basis, (0, width - basis.shape[-1]))
    return Subspace(mean.to(x.dtype) if x.dtype == torch.float64 else mean, basis)


@torch.no_grad()
def lift(x: torch.Tensor, weight: torch.Tensor | None, projected: torch.Tensor,
         centres: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    """Full-space centres from centres found in a subspace: each the weighted mean of
    the rows whose projection is nearest to it.

    Parameters
    ----------
    x : Tensor of shape (b, r, d)
        The rows, full space.
    weight : Tensor of shape (b, r) or None
    projected : Tensor of shape (b, r, p)
        The rows in the subspace.
    centres : Tensor of shape (b, k, p)
        Centres in the subspace.
    fallback : Tensor of shape (b, k, d)
        Full-space centres for clusters that get no row (with weight).

    Returns
    -------
    Tensor of shape (b, k, d), ``x``'s dtype.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[[0.0, 5.0], [1.0, -5.0], [10.0, 1.0]]])
    >>> lift(x, None, x[..., :1], torch.tensor([[[0.5], [9.0]]]), torch.zeros(1, 2, 2))
    tensor([[[ 0.5000,  0.0000],
             [10.0000,  1.0000]]])
    """
    b, r, d = x.shape
    k = centres.shape[1]
    dist = torch.cdist(projected.to(centres.dtype), centres)  # (b, r, k)
    label = dist.argmin(-1)
    w = (torch.ones(b, r, dtype=torch.float64, device=x.device) if weight is None
         else weight.to(torch.float64))
    sums = torch.zeros(b, k, d, dtype=torch.float64, device=x.device)
    sums.scatter_add_(1, label.unsqueeze(-1).expand(-1, -1, d), w.unsqueeze(-1) * x.double())
    mass = torch.zeros(b, k, dtype=torch.float64, device=x.device).scatter_add_(1, label, w)
    out = sums / mass.clamp_min(torch.finfo(torch.float64).tiny).unsqueeze(-1)
    return torch.where((mass > 0).unsqueeze(-1), out, fallback.double()).to(x.dtype)
