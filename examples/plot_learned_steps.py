"""
Learned clustering steps against Lloyd steps
============================================

A learned one-layer transformer, shipped with skformer for ``d = 2`` and ``k = 5``, is
applied ten times to a random clustering task, re-embedding the points and the current
centres at every step. Lloyd's algorithm runs ten steps from the same initial centres.
"""

# %%
# A random task from the training distribution: five normal components in the unit
# square, 512 points, five initial centres drawn from the points.
import matplotlib.pyplot as plt
import torch

import skformer
from skformer.losses import kmeans_cost, lloyd_step
from skformer.tasks import TaskConfig, sample_tasks

gen = torch.Generator().manual_seed(3)
task = sample_tasks(TaskConfig(n_points=512, n_features=2, n_clusters=5), 1, generator=gen)
x, c0 = task.x, task.centres  # (1, 512, 2), (1, 5, 2)

# %%
# Ten re-embedded steps of the learned model (loaded from the weights in the package,
# no training) and ten Lloyd steps.
model = skformer.load_model(2, 5, pretrain=False)
with torch.no_grad():
    learned = model.iterate(x, c0, 10)[0]  # (11, 5, 2): the centres before and after each step
lloyd = [c0]
for _ in range(10):
    lloyd.append(lloyd_step(x, lloyd[-1]))

learned_cost = [float(kmeans_cost(x, c[None])) for c in learned]
lloyd_cost = [float(kmeans_cost(x, c)) for c in lloyd]
print(f"k-means cost after 10 steps: learned {learned_cost[-1]:.3f}, Lloyd {lloyd_cost[-1]:.3f}")

# %%
# The centres' paths and the cost per step.
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 4))
ax.scatter(x[0, :, 0], x[0, :, 1], s=4, color="0.75")
for j in range(5):
    ax.plot(learned[:, j, 0], learned[:, j, 1], "-o", ms=3, color="tab:orange",
            label="learned" if j == 0 else None)
    path = torch.stack([c[0, j] for c in lloyd])
    ax.plot(path[:, 0], path[:, 1], "--s", ms=3, color="k", label="Lloyd" if j == 0 else None)
ax.set_title("centres, step by step")
ax.legend()
ax2.plot(learned_cost, "-o", color="tab:orange", label="learned (re-embedded)")
ax2.plot(lloyd_cost, "--s", color="k", label="Lloyd")
ax2.set_xlabel("step")
ax2.set_ylabel("k-means cost")
ax2.legend()
fig.tight_layout()
plt.show()
