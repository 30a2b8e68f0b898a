"""
=======================================
Ten million points on a small cluster
=======================================

:class:`skformer.TransformerKMeans` fitted on a dask array of 10**7 x 32 float32 points
(1.28 GB) on a LocalCluster of two workers with a memory limit of 1 GiB each: no worker,
and not the client, ever holds the data. The points are blobs generated block by block
from a seed, so every pass over the data regenerates them (as reading them from files
would); nothing of size n is gathered.

Run it with ``python examples/dask_large_fit.py [n_samples]`` (default 10_000_000). It
takes minutes, so it is not part of the documentation's gallery (see the "Dask" page of
the documentation for a measured run).
"""

import sys
import time

import dask
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster
from distributed.diagnostics import MemorySampler

from skformer import TransformerKMeans

N_SAMPLES = int(float(sys.argv[1])) if len(sys.argv) > 1 else 10_000_000
N_FEATURES, N_CLUSTERS, ROWS = 32, 10, 125_000
CENTRES = np.random.default_rng(0).uniform(-10, 10, (N_CLUSTERS, N_FEATURES))


def blob_block(i: int, rows: int) -> np.ndarray:
    """Block ``i`` of the data: ``rows`` points around the blob centres (seeded)."""
    rng = np.random.default_rng([0, i])
    labels = rng.integers(N_CLUSTERS, size=rows)
    noise = rng.standard_normal((rows, N_FEATURES), dtype=np.float32)
    return (CENTRES[labels] + noise).astype(np.float32)


def lazy_blobs(n: int):
    sizes = [ROWS] * (n // ROWS) + ([n % ROWS] if n % ROWS else [])
    blocks = [
        da.from_delayed(dask.delayed(blob_block)(i, m), (m, N_FEATURES), dtype=np.float32)
        for i, m in enumerate(sizes)
    ]
    return da.concatenate(blocks)


def _spilled_bytes(dask_worker) -> float:
    """Bytes a worker has written to disk to stay within its memory limit (so far)."""
    metrics = getattr(dask_worker.data, "cumulative_metrics", {})
    return metrics.get(("disk-write", "bytes"), 0.0)


if __name__ == "__main__":
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="1GiB",
                           dashboard_address=None)
    client = Client(cluster)
    limits = [w["memory_limit"] for w in client.scheduler_info()["workers"].values()]

    X = lazy_blobs(N_SAMPLES)
    print(f"data      {X.shape[0]:,} x {X.shape[1]} float32 = {X.nbytes / 1e9:.2f} GB "
          f"in {X.numblocks[0]} blocks")
    print(f"workers   {len(limits)}, memory limit {limits[0] / 2**30:.2f} GiB each "
          f"({sum(limits) / 1e9:.2f} GB together)")

    est = TransformerKMeans(N_CLUSTERS, random_state=0, device="cpu")
    sampler = MemorySampler()
    start = time.perf_counter()
    with sampler.sample("fit", interval=0.5):
        est.fit(X)
    seconds = time.perf_counter() - start

    steps = est.n_learned_steps_ + est.n_lloyd_steps_
    peak = max(nbytes for _, nbytes in sampler.samples["fit"])
    print(f"fit       {seconds:.1f} s ({est.n_learned_steps_} learned + "
          f"{est.n_lloyd_steps_} Lloyd steps, {seconds / max(steps, 1):.1f} s per step "
          "including the passes before the steps)")
    print(f"inertia   {est.inertia_:.6g} ({est.inertia_ / N_SAMPLES:.4f} per point; "
          f"the blobs' noise alone is about {N_FEATURES})")
    found = np.sort(np.linalg.norm(est.cluster_centers_[:, None] - CENTRES, axis=-1)
                    .min(axis=0))
    print(f"centres   largest distance of a true blob centre to its nearest fitted centre: "
          f"{found[-1]:.3f}")
    spilled = client.run(_spilled_bytes)
    print(f"memory    peak of the two workers' processes together {peak / 1e9:.2f} GB; "
          f"spilled to disk {sum(spilled.values()) / 1e9:.2f} GB")
    print(f"labels    {type(est.labels_).__name__} {est.labels_.dtype}, first ten "
          f"{est.labels_[:10].compute()}")
    client.close()
    cluster.close()
