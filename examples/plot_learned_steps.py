"""
Learned clustering steps against Lloyd steps
============================================

The learned one-layer transformer shipped with skformer for ``d = 8`` and ``k = 10`` is
applied twenty times to random clustering tasks, re-embedding the points and the current
centres at every step; its attention temperatures follow a learned schedule (soft steps
first, sharp ones at the end). Lloyd's algorithm runs twenty steps from the same random
initial centres. The best clustering known (KMeans with k-means++ and ``n_init=10``)
tells how much room Lloyd's algorithm leaves.
"""

# %%
# Thirty-two random tasks of the training distribution (ten normal components in the
# unit cube, 512 points each) from a generator of their own; initial centres drawn
# from the points.
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.cluster import KMeans

import skformer
from skformer.losses import kmeans_cost, lloyd_step
from skformer.tasks import TaskConfig, sample_tasks

d, k, n_steps = 8, 10, 20
gen = torch.Generator().manual_seed(12345)
task = sample_tasks(TaskConfig(n_points=512, n_features=d, n_clusters=k), 32, generator=gen)
x, c0 = task.x, task.centres  # (32, 512, 8), (32, 10, 8)

# %%
# Twenty re-embedded steps of the learned model (loaded from the weights in the
# package, no training), twenty Lloyd steps, and the best clustering known per task.
model = skformer.load_model(d, k, pretrain=False)
with torch.no_grad():
    learned = model.iterate(x, c0, n_steps)  # (32, 21, 10, 8): centres before and after each step
lloyd = [c0]
for _ in range(n_steps):
    lloyd.append(lloyd_step(x, lloyd[-1]))

learned_cost = torch.stack([kmeans_cost(x, learned[:, t]) for t in range(n_steps + 1)],
                           1)  # (32, 21)
lloyd_cost = torch.stack([kmeans_cost(x, c) for c in lloyd], 1)
best = torch.tensor([KMeans(k, n_init=10, random_state=0).fit(xi.double().numpy()).inertia_
                     for xi in x], dtype=learned_cost.dtype)

lloyd_end, learned_end = lloyd_cost[:, -1].sum(), learned_cost[:, -1].sum()
captured = float((lloyd_end - learned_end) / (lloyd_end - best.sum()))
print(f"cost after {n_steps} steps, relative to Lloyd's: {float(learned_end / lloyd_end):.3f}")
print(f"share of Lloyd's headroom captured: {captured:.0%}")

# %%
# Mean cost per step over the best known cost, and the final cost of every task.
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 4))
steps = np.arange(n_steps + 1)
ax.plot(steps, (learned_cost / best[:, None]).mean(0), "-o", ms=3, color="tab:orange",
        label="learned (re-embedded)")
ax.plot(steps, (lloyd_cost / best[:, None]).mean(0), "--s", ms=3, color="k", label="Lloyd")
ax.axhline(1.0, color="0.6", lw=0.8)
ax.set_yscale("log")
ax.set_xlabel("step")
ax.set_ylabel("k-means cost / best known")
ax.legend()
ax2.scatter(lloyd_cost[:, -1] / best, learned_cost[:, -1] / best, s=12)
lims = [1.0, float((lloyd_cost[:, -1] / best).max()) * 1.02]
ax2.plot(lims, lims, "k--", lw=0.8)
ax2.set_xlabel(f"Lloyd after {n_steps} steps / best")
ax2.set_ylabel(f"learned after {n_steps} steps / best")
ax2.set_title("one point per task (below the line: learned better)")
fig.tight_layout()
if plt.get_backend().lower() == "agg":  # no display: save the figure instead
    fig.savefig("plot_learned_steps.png")
else:
    plt.show()
