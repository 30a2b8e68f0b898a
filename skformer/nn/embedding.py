"""Cluster-index embeddings: one-hot (OH), binary (BN) and none (NA).

Dimension legend: ``b`` batch, ``n`` points, ``k`` clusters, ``d`` features,
``m`` index columns (``k`` for OH, ``ceil(log2 k)`` for BN, 0 for NA).

A point token is ``[x_i ; 0_m]`` (an all-zero scratch block that the layer fills with
the code of the point's cluster). A centre token is ``[c_j ; code(j)]``. The binary
code of centre ``j`` (0-indexed) holds the bits of ``j`` with the least significant bit
first, entries in {0, 1}, so centre 0 carries the all-zero code.
"""

from __future__ import annotations

import torch

__all__ = [
    "EMBEDDINGS",
    "check_step_shapes",
    "decode_index",
    "embed_centres",
    "embed_points",
    "index_codes",
    "index_width",
]

EMBEDDINGS = ("onehot", "binary", "none")


def _check(kind: str, k: int) -> None:
    if kind not in EMBEDDINGS:
        raise ValueError(f"embedding must be one of {EMBEDDINGS}, got {kind!r}.")
    if k < 1:
        raise ValueError(f"n_clusters must be >= 1, got {k}.")


def index_width(kind: str, k: int) -> int:
    """Number of index columns ``m`` an embedding adds to the ``d`` data columns.

    Parameters
    ----------
    kind : {"onehot", "binary", "none"}
    k : int
        Number of clusters.

    Returns
    -------
    int
        ``k`` for one-hot, ``ceil(log2 k)`` for binary, 0 for none.

    Examples
    --------
    >>> index_width("onehot", 1000), index_width("binary", 1000), index_width("none", 1000)
    (1000, 10, 0)
    """
    _check(kind, k)
    if kind == "onehot":
        return k
    if kind == "binary":
        return (k - 1).bit_length()  # == ceil(log2 k), exact for every integer k >= 1
    return 0


def index_codes(
    kind: str,
    k: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The code block of every centre.

    Parameters
    ----------
    kind : {"onehot", "binary", "none"}
    k : int
    dtype, device : torch dtype and device of the result.

    Returns
    -------
    Tensor of shape (k, m)
        Row ``j`` is the code of centre ``j``.

    Examples
    --------
    >>> index_codes("binary", 6, dtype=torch.int64).T   # the paper's B_6, LSB first
    tensor([[0, 1, 0, 1, 0, 1],
            [0, 0, 1, 1, 0, 0],
            [0, 0, 0, 0, 1, 1]])
    """
    m = index_width(kind, k)
    if kind == "onehot":
        return torch.eye(k, dtype=dtype, device=device)
    j = torch.arange(k, device=device).unsqueeze(1)
    bits = torch.arange(m, device=device).unsqueeze(0)
    return ((j >> bits) & 1).to(dtype)


def embed_points(x: torch.Tensor, kind: str, k: int) -> torch.Tensor:
    """Point tokens ``[x ; 0_m]``.

    Parameters
    ----------
    x : Tensor of shape (b, n, d)
    kind : {"onehot", "binary", "none"}
    k : int

    Returns
    -------
    Tensor of shape (b, n, d + m)

    Examples
    --------
    >>> embed_points(torch.ones(1, 2, 3), "binary", 5).shape
    torch.Size([1, 2, 6])
    """
    m = index_width(kind, k)
    return torch.cat([x, x.new_zeros(*x.shape[:-1], m)], dim=-1)


def embed_centres(c: torch.Tensor, kind: str) -> torch.Tensor:
    """Centre tokens ``[c_j ; code(j)]``.

    Parameters
    ----------
    c : Tensor of shape (b, k, d)
    kind : {"onehot", "binary", "none"}

    Returns
    -------
    Tensor of shape (b, k, d + m)

    Examples
    --------
    >>> embed_centres(torch.zeros(1, 3, 2), "onehot")[0]
    tensor([[0., 0., 1., 0., 0.],
            [0., 0., 0., 1., 0.],
            [0., 0., 0., 0., 1.]])
    """
    codes = index_codes(kind, c.shape[-2], dtype=c.dtype, device=c.device)
    return torch.cat([c, codes.expand(*c.shape[:-2], *codes.shape)], dim=-1)


def decode_index(codes: torch.Tensor, kind: str, k: int) -> torch.Tensor:
    """Cluster indices from code blocks (the inverse of :func:`index_codes`).

    Exact for valid codes. A code that is not one (the average of several codes,
    written by the paper's averaging hardmax on a tie) is read by its largest entry
    (one-hot, lowest index first) or bit by bit with threshold 1/2 (binary, clipped
    to ``k - 1``).

    Parameters
    ----------
    codes : Tensor of shape (..., m)
    kind : {"onehot", "binary"}
    k : int

    Returns
    -------
    LongTensor of shape (...)

    Examples
    --------
    >>> decode_index(index_codes("binary", 7), "binary", 7)
    tensor([0, 1, 2, 3, 4, 5, 6])
    """
    m = index_width(kind, k)
    if kind == "none":
        raise ValueError("The 'none' embedding carries no cluster index to decode.")
    if kind == "onehot":
        return codes.argmax(-1)
    powers = 2 ** torch.arange(m, device=codes.device)
    return ((codes >= 0.5).long() * powers).sum(-1).clamp_max(k - 1)


def check_step_shapes(x: torch.Tensor, c: torch.Tensor, d: int, k: int) -> None:
    """Raise a ValueError unless ``x`` is (b, n, d) and ``c`` is (b, k, d)."""
    if x.ndim != 3 or c.ndim != 3 or x.shape[-1] != d or c.shape[-2:] != (k, d):
        raise ValueError(
            f"Expected x of shape (b, n, {d}) and c of shape (b, {k}, {d}), got "
            f"{tuple(x.shape)} and {tuple(c.shape)}."
        )
