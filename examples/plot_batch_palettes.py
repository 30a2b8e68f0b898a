"""
===========================================
Many problems at once: a palette per tile
===========================================

:func:`skformer.batch_k_means` clusters many independent problems in one call. Here each
32 x 32 tile of the two sample photographs bundled with scikit-learn gets a palette of
its own: eight colours, found by k-means on the tile's 1024 pixels (RGB). That is 520
small k-means problems, the kind a loop of :class:`sklearn.cluster.KMeans` pays a fixed
cost for, one problem after another.

Per tile the result is KMeans' from the same initial centres (k-means++ drawn by
skformer, problem by problem), so the two recoloured images look the same; the batch
gets there in a fraction of the time.
"""

# %%
# Tiles as a batch
# ----------------
# The batch is an array of shape (tiles, pixels, 3): problem ``i`` is tile ``i``.
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_sample_image

from skformer import batch_k_means

TILE, COLOURS = 32, 8
images = [load_sample_image(name) for name in ("china.jpg", "flower.jpg")]


def tiles_of(image):
    """(tiles, TILE * TILE, 3) floats in [0, 1], and the tile grid's shape."""
    rows, cols = image.shape[0] // TILE, image.shape[1] // TILE
    cut = image[: rows * TILE, : cols * TILE].astype(np.float32) / 255
    tiles = cut.reshape(rows, TILE, cols, TILE, 3).swapaxes(1, 2)
    return tiles.reshape(rows * cols, TILE * TILE, 3), (rows, cols)


parts = [tiles_of(image) for image in images]
X = np.concatenate([t for t, _ in parts])
print(f"{X.shape[0]} problems of {X.shape[1]} pixels, {COLOURS} colours each")

# %%
# One call against a loop
# -----------------------
# The same number of k-means++ starts (one) per tile in both.
start = time.perf_counter()
centres, labels, inertia, n_iter = batch_k_means(X, COLOURS, random_state=0)
batch_s = time.perf_counter() - start

start = time.perf_counter()
loop = [KMeans(COLOURS, n_init=1, random_state=i).fit(x) for i, x in enumerate(X)]
loop_s = time.perf_counter() - start
loop_inertia = np.array([km.inertia_ for km in loop])

print(f"batch_k_means  {batch_s:6.2f} s, mean inertia {inertia.mean():.4f}")
print(f"KMeans loop    {loop_s:6.2f} s, mean inertia {loop_inertia.mean():.4f}")
print(f"speed-up {loop_s / batch_s:.1f}x; iterations per tile: median {np.median(n_iter):.0f}, "
      f"max {n_iter.max()} (each tile stops on its own)")

# %%
# The recoloured images
# ---------------------
# Every pixel takes its cluster's colour: eight colours per tile.


def recolour(tile_colours, tile_labels, grid):
    rows, cols = grid
    pixels = np.take_along_axis(tile_colours, tile_labels[..., None], axis=1)
    tiles = pixels.reshape(rows, cols, TILE, TILE, 3).swapaxes(1, 2)
    return tiles.reshape(rows * TILE, cols * TILE, 3).clip(0, 1)


fig, axes = plt.subplots(2, 2, figsize=(10, 7))
first = 0
for row, (image, (tiles, grid)) in enumerate(zip(images, parts, strict=True)):
    count = len(tiles)
    ours = recolour(centres[first : first + count], labels[first : first + count], grid)
    axes[row, 0].imshow(image)
    axes[row, 0].set_title("original")
    axes[row, 1].imshow(ours)
    axes[row, 1].set_title(f"{COLOURS} colours per {TILE}x{TILE} tile (batch_k_means)")
    first += count
for ax in axes.ravel():
    ax.axis("off")
plt.tight_layout()
if plt.get_backend().lower() == "agg":  # no display: save the figure instead
    fig.savefig("plot_batch_palettes.png")
else:
    plt.show()
