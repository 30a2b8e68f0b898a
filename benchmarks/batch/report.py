"""Tables and figure of ``skformer bench batch``."""

from __future__ import annotations

from .runs import PEERS

__all__ = ["plot", "print_table"]


def _f(value, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def print_table(records: list[dict], header: bool = True) -> None:
    """One markdown row per batch: times (s), speed-up over the faster loop, mean inertia
    over the loop's, and how many times slower each peer is."""
    learned = any("batch_learned_s" in r for r in records)
    if header:
        cols = ["(b, n, d, k)", "ragged", "loop s", "joblib s", "batch s", "speed-up",
                "inertia ratio"]
        if learned:
            cols += ["learned s", "learned speed-up", "learned inertia ratio"]
        for peer in PEERS:
            cols += [f"{peer} s", f"{peer} / batch", f"{peer} inertia ratio"]
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
    for r in records:
        row = [f"({r['b']}, {r['n']}, {r['d']}, {r['k']})", "yes" if r["ragged"] else "no",
               _f(r["loop_s"], ".3f"), _f(r["joblib_s"], ".3f"), _f(r["batch_s"], ".3f"),
               _f(r["batch_speedup"], ".1f") + "x", _f(r["batch_inertia_ratio"], ".4f")]
        if learned:
            row += [_f(r.get("batch_learned_s"), ".3f"),
                    _f(r.get("batch_learned_speedup"), ".1f") + "x",
                    _f(r.get("batch_learned_inertia_ratio"), ".4f")]
        for peer in PEERS:
            row += [_f(r.get(f"{peer}_s"), ".3f"), _f(r.get(f"{peer}_over_batch"), ".1f"),
                    _f(r.get(f"{peer}_inertia_ratio"), ".4f")]
        print("| " + " | ".join(row) + " |", flush=True)


def plot(records: list[dict], path: str) -> None:
    """Bars of batch_k_means' speed-up over the faster KMeans loop, per batch."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("--plot requires matplotlib. Install with: "
                          "pip install matplotlib") from exc
    labels = [f"{r['b']}x{r['n']}x{r['d']}\nk={r['k']}" + ("\nragged" if r["ragged"] else "")
              for r in records]
    fig, ax = plt.subplots(figsize=(1.2 * len(records) + 2, 4))
    ax.bar(range(len(records)), [r["batch_speedup"] for r in records], color="C0")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(records)), labels, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("speed-up over the faster KMeans loop")
    ax.set_title("batch_k_means against a loop of KMeans(n_init=1)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
