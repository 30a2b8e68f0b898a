"""
==============================================
Token width: binary against one-hot embeddings
==============================================

Each centre token carries a code for its cluster index after its ``d`` coordinates. A one-hot
code needs ``k`` columns, a binary code only ``ceil(log2 k)``. This example plots the token
width ``d_emb`` of both embeddings for ``d = 32`` as the number of clusters grows, and the
share of the layer's weights that the binary embedding keeps (a layer of four attentions holds
``12 * d_emb**2`` weights).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from skformer.nn import index_width

d = 32
ks = np.arange(2, 1025)

width = {
    emb: np.array([d + index_width(emb, int(k)) for k in ks]) for emb in ("onehot", "binary")
}
for k in (10, 32, 100, 1000):
    oh, bn = d + index_width("onehot", k), d + index_width("binary", k)
    print(f"k={k:4d}: one-hot d_emb={oh:4d}, binary d_emb={bn:2d}, "
          f"weights kept by binary: {bn**2 / oh**2:.1%}")

# %%
fig, (ax_w, ax_p) = plt.subplots(1, 2, figsize=(10, 4))
ax_w.plot(ks, width["onehot"], label="one-hot (OH): d + k")
ax_w.plot(ks, width["binary"], label="binary (BN): d + ceil(log2 k)")
ax_w.set_xscale("log", base=2)
ax_w.set_yscale("log", base=2)
ax_w.set_xlabel("number of clusters k")
ax_w.set_ylabel("token width d_emb")
ax_w.set_title(f"Token width, d = {d}")
ax_w.legend()

ax_p.plot(ks, (width["binary"] / width["onehot"]) ** 2)
ax_p.set_xscale("log", base=2)
ax_p.set_ylim(0, 1.05)
ax_p.set_xlabel("number of clusters k")
ax_p.set_ylabel("BN weights / OH weights")
ax_p.set_title("Weights of one layer, binary relative to one-hot")
fig.tight_layout()
if plt.get_backend().lower() == "agg":  # no display: save the figure instead
    fig.savefig("plot_binary_vs_onehot_width.png")
else:
    plt.show()
