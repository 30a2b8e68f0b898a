"""The cost benchmark: records, OH/BN pairing, real memory measurement, CLI, errors.

Tiny sizes only: the times are checked for being positive, never compared.
"""

import dataclasses
import json

import pytest

from benchmarks.cost import (
    CostRecord,
    grid_shapes,
    measure,
    measure_interleaved,
    peak_memory,
    summarise,
)

TINY = dict(batch=2, n=16, warmup=1, reps=2, device="cpu")


def _record(d, k, embedding, t, peak):
    return CostRecord(
        d=d, k=k, embedding=embedding, width=d + (k if embedding == "onehot" else 2),
        device="cpu", batch=2, n=16, warmup=1, reps=2, forward_train_ms=t, backward_ms=2 * t,
        forward_eval_ms=t / 2, peak_memory_bytes=peak, memory_method="torch_profiler",
    )


@pytest.mark.parametrize("embedding, width", [("onehot", 3 + 5), ("binary", 3 + 3)])
def test_measure_fills_every_field(embedding, width):
    rec = measure(3, 5, embedding, **TINY)
    assert {f.name for f in dataclasses.fields(CostRecord)} == set(dataclasses.asdict(rec))
    assert (rec.d, rec.k, rec.embedding, rec.width) == (3, 5, embedding, width)
    assert (rec.batch, rec.n, rec.warmup, rec.reps, rec.device) == (2, 16, 1, 2, "cpu")
    assert rec.forward_train_ms > 0 and rec.backward_ms > 0 and rec.forward_eval_ms > 0
    assert rec.peak_memory_bytes > 0 and rec.memory_method == "torch_profiler"


def test_interleaved_gives_one_record_per_embedding_in_order():
    bn, oh = measure_interleaved(2, 6, ("binary", "onehot"), **TINY)
    assert (bn.embedding, oh.embedding) == ("binary", "onehot")
    assert (bn.width, oh.width) == (2 + 3, 2 + 6)


def test_peak_memory_is_measured():
    # The training step keeps several (b, n, n) attention tensors: the peak grows with n,
    # with the batch, and is larger for the wider one-hot tokens.
    small, method = peak_memory(4, 6, "binary", batch=2, n=16)
    large, _ = peak_memory(4, 6, "binary", batch=2, n=64)
    assert method == "torch_profiler"
    assert large > 4 * small > 0
    assert peak_memory(4, 6, "binary", batch=4, n=64)[0] > large
    assert peak_memory(4, 6, "onehot", batch=2, n=64)[0] > large
    # Deterministic on the CPU: the same allocations every time.
    assert peak_memory(4, 6, "binary", batch=2, n=16)[0] == small


def test_summarise_pairs_onehot_and_binary():
    records = [
        _record(2, 3, "binary", 1.0, 600), _record(4, 3, "onehot", 3.0, 1000),
        _record(2, 3, "onehot", 2.0, 800), _record(4, 3, "binary", 1.5, 900),
        _record(4, 6, "onehot", 1.0, 100),  # no binary partner: left out
    ]
    first, second = summarise(records)
    assert (first.d, first.k, second.d, second.k) == (2, 3, 4, 3)
    assert first.onehot.embedding == "onehot" and first.binary.embedding == "binary"
    assert first.forward_train_speedup == pytest.approx(2.0)
    assert first.backward_speedup == pytest.approx(2.0)
    assert first.forward_eval_speedup == pytest.approx(2.0)
    assert first.memory_reduction == pytest.approx(0.25)
    assert second.forward_train_speedup == pytest.approx(2.0)
    assert second.memory_reduction == pytest.approx(0.1)
    with pytest.raises(ValueError, match="two binary records for d=2, k=3"):
        summarise([*records, _record(2, 3, "binary", 1.0, 600)])


def test_grids():
    assert grid_shapes("table1") == [(32, 6), (32, 25), (32, 100), (32, 400), (32, 1000)]
    shapes = grid_shapes("figure1")
    assert len(shapes) == 36 and (4, 10) in shapes and (128, 100) in shapes


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: grid_shapes("table2"), "grid must be one of"),
        (lambda: measure(2, 3, "binary", **{**TINY, "device": "tpu"}), "device must be one of"),
        (lambda: measure(2, 3, "ternary", **TINY), "embeddings must be distinct values"),
        (lambda: measure(2, 1, "binary", **TINY), "k must be an integer >= 2"),
        (lambda: measure(2, 3, "binary", **{**TINY, "reps": 0}), "reps must be an integer >= 1"),
        (lambda: measure_interleaved(2, 3, ("binary", "binary"), **TINY), "distinct"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_cli_writes_json(tmp_path, capsys):
    from skformer.cli import main

    out = tmp_path / "cost.json"
    args = ["bench", "cost", "--d", "2", "--k", "3", "4", "--batch", "2", "--n", "16",
            "--warmup", "1", "--reps", "2", "--device", "cpu", "--out", str(out)]
    assert main(args) == 0
    records = json.loads(out.read_text())
    assert [(r["d"], r["k"], r["embedding"]) for r in records] == [
        (2, 3, "onehot"), (2, 3, "binary"), (2, 4, "onehot"), (2, 4, "binary")
    ]
    for r in records:
        assert r["reps"] == 2 and r["peak_memory_bytes"] > 0
        assert r["memory_method"] == "torch_profiler"
        assert {"platform", "torch", "device_name", "threads"} <= set(r["machine"])
    text = capsys.readouterr().out
    assert "2 timed repetitions" in text  # fewer than the paper's 30: said so
    assert "| 2 | 3 | 3 / 2 |" in text and "| 2 | 4 | 4 / 2 |" in text


def test_cli_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from skformer.cli import main

    png = tmp_path / "cost.png"
    args = ["bench", "cost", "--d", "2", "--k", "3", "4", "--batch", "2", "--n", "8",
            "--warmup", "0", "--reps", "1", "--device", "cpu", "--plot", str(png)]
    assert main(args) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_heatmaps(tmp_path):
    pytest.importorskip("matplotlib")
    from benchmarks.cost import plot_summary

    records = [_record(d, k, e, 1.0 + (e == "onehot"), 100 + 50 * (e == "onehot"))
               for d in (2, 3) for k in (3, 4) for e in ("onehot", "binary")]
    png = tmp_path / "grid.png"
    plot_summary(summarise(records[:-1]), str(png))  # one cell missing: left blank
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_summary([], str(png))


@pytest.mark.parametrize(
    "argv",
    [
        ["--grid", "table2"],
        ["--device", "tpu", "--d", "2", "--k", "3"],
        ["--d", "2"],
        ["--grid", "table1", "--d", "2", "--k", "3"],
    ],
)
def test_cli_bad_arguments_exit_2(argv, capsys):
    from skformer.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["bench", "cost", *argv])
    assert exc.value.code == 2
    assert "skformer bench cost: error:" in capsys.readouterr().err


def test_cli_cuda_without_cuda_returns_2(capsys):
    import torch

    from skformer.cli import main

    if torch.cuda.is_available():
        pytest.skip("CUDA is available")
    assert main(["bench", "cost", "--d", "2", "--k", "3", "--device", "cuda"]) == 2
    assert "CUDA is not available" in capsys.readouterr().err
