"""
==============================
Quick start: TransformerKMeans
==============================

:class:`skformer.TransformerKMeans` is used exactly like :class:`sklearn.cluster.KMeans`.
By default (the fast mode) its fit *is* KMeans' run, every Lloyd step one forward pass of
the exact hard-attention transformer. With ``learned_starts=1`` (the learned mode) a
pretrained one-layer transformer also runs from the same start: each forward pass maps
the current centres to new ones, exact Lloyd steps finish at a local optimum, and the
run of lower inertia (this one or KMeans') is kept.

The learned run changes the result much only where Lloyd's algorithm stops in a poor
local optimum: data with many overlapping clusters, as here. On data whose clusters
Lloyd's algorithm already finds (the bundled data sets of ``skformer demo``: iris, wine,
breast_cancer, digits) it changes the inertia little or not at all; the demo says which
run it kept.
"""

# %%
# Fit and predict
# ---------------
# Ten overlapping clusters in eight dimensions.
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.datasets import make_blobs

from skformer import TransformerKMeans

X, y = make_blobs(n_samples=2000, n_features=8, centers=10, cluster_std=4.0, random_state=1)

est = TransformerKMeans(n_clusters=10, random_state=0)  # the fast mode: KMeans' run
labels = est.fit_predict(X)
print(f"inertia        {est.inertia_:.1f}")
print(f"steps          {est.n_iter_} exact Lloyd steps")
print(f"centres shape  {est.cluster_centers_.shape}")
print("new points ->", est.predict(X[:3] + 0.5))

# %%
# Where the learned mode acts
# ---------------------------
# The same seeds in both modes, so both start from the same k-means++ centres. The
# learned mode never ends higher; here it often ends lower, at a few times the time.
# More k-means++ restarts (``n_init``) also buy a lower inertia with time: KMeans with
# three restarts is the yardstick. Each fit takes milliseconds, so the times are paired
# per seed, after a first fit of each kind (it loads the compiled step and the model);
# ``python -m benchmarks.readme_snippet`` (in the repository) repeats each fit and records
# the figures that the Benchmarks page gives for this data ("From the README").
seeds = range(10)
gains, gains_km3, kept = [], [], []
seconds = {"fast": [], "learned": [], "KMeans(n_init=3)": []}


def timed(name, estimator):
    start = time.perf_counter()
    estimator.fit(X)
    seconds[name].append(time.perf_counter() - start)
    return estimator


TransformerKMeans(n_clusters=10, random_state=0, learned_starts=1).fit(X)  # warm-up
KMeans(n_clusters=10, n_init=3, random_state=0).fit(X)
for seed in seeds:
    fast = timed("fast", TransformerKMeans(n_clusters=10, random_state=seed))
    learned = timed("learned", TransformerKMeans(n_clusters=10, random_state=seed,
                                                 learned_starts=1))
    km3 = timed("KMeans(n_init=3)", KMeans(n_clusters=10, n_init=3, random_state=seed))
    gains.append(100 * (1 - learned.inertia_ / fast.inertia_))
    gains_km3.append(100 * (1 - km3.inertia_ / fast.inertia_))
    kept.append(learned.selected_run_ == "learned")
    print(f"seed {seed}: inertia {fast.inertia_:.0f} (fast) {learned.inertia_:.0f} "
          f"(learned: {learned.n_learned_steps_} learned + {learned.n_lloyd_steps_} Lloyd "
          f"steps, the {learned.selected_run_} run kept) {km3.inertia_:.0f} (KMeans, "
          "3 restarts)")
print(f"learned run kept for {sum(kept)} of {len(kept)} seeds")
for name, gain in (("learned", gains), ("KMeans(n_init=3)", gains_km3)):
    ratio = np.median(np.array(seconds[name]) / np.array(seconds["fast"]))
    print(f"{name:17s} inertia {np.mean(gain):.1f} % below the fast mode's on average, "
          f"time {ratio:.1f}x the fast mode's (median over the seeds)")

# %%
# So the learned mode is not a faster way to a better optimum than more restarts: on
# this data three KMeans restarts cost less time than one learned fit and end lower on
# average (the last two lines above).
#
# What the learned steps do
# -------------------------
# ``finish="none"`` keeps only the learned steps; ``max_iter`` bounds how many. Following
# the centres step by step, on two-dimensional data, shows the transformer moving
# k-means++ starts (the ones KMeans draws with the same seed) towards the clusters.
X2, _ = make_blobs(n_samples=1500, centers=5, cluster_std=1.6, random_state=3)
start, _ = kmeans_plusplus(X2 - X2.mean(0), 5, random_state=np.random.RandomState(0))
paths = [start + X2.mean(0)]
for steps in range(1, 6):
    fit = TransformerKMeans(5, random_state=0, finish="none", learned_starts=1,
                            max_iter=steps, tol=0).fit(X2)
    paths.append(fit.cluster_centers_)
paths = np.stack(paths)  # (steps + 1, k, d)

fig, (ax_r, ax) = plt.subplots(1, 2, figsize=(11, 4.8))
colours = np.where(kept, "tab:green", "tab:gray")
ax_r.bar(list(seeds), gains, color=colours)
ax_r.scatter(list(seeds), np.zeros(len(kept)), c=colours, marker="s", s=40, zorder=3,
             clip_on=False)  # which run was kept, also where the gain is about 0
ax_r.axhline(0, color="k", lw=0.8)
ax_r.set_ylim(0, 1.35 * max(max(gains), 1e-3))
ax_r.set_xticks(list(seeds))
ax_r.set_xlabel("seed (random_state)")
ax_r.set_ylabel("inertia below the fast mode's (%)")
ax_r.set_title("X: 10 overlapping blobs, n = 2,000, d = 8\n"
               "learned_starts=1 against the fast mode, per seed", fontsize=10)
ax_r.legend(handles=[plt.Line2D([], [], color=c, marker="s", ls="") for c in
                     ("tab:green", "tab:gray")],
            labels=["learned run kept", "Lloyd (KMeans') run kept"], loc="upper right")
ax.scatter(*X2.T, c=fit.predict(X2), s=4, cmap="tab10", alpha=0.5)
for j in range(5):
    ax.plot(*paths[:, j].T, "k.-", lw=1)
ax.scatter(*paths[0].T, marker="o", s=60, facecolors="none", edgecolors="k",
           label="k-means++ start")
ax.scatter(*paths[-1].T, marker="x", s=80, c="k", label="after 5 learned steps")
ax.set_xlabel("feature 1")
ax.set_ylabel("feature 2")
ax.set_title("X2 (other data): 5 blobs, n = 1,500, d = 2\n"
             "centres over 0 to 5 learned steps (finish=\"none\")", fontsize=10)
ax.legend(loc="lower right")
plt.tight_layout()
if plt.get_backend().lower() == "agg":  # no display: save the figure instead
    fig.savefig("plot_quickstart.png")
else:
    plt.show()
