"""The model store: file format, integrity checks, cache, on-demand pretraining, CLI."""

import json
import logging
import multiprocessing
import os
import struct
from pathlib import Path

import pytest
import safetensors.torch
import torch

import skformer
from skformer import store
from skformer.cli import main
from skformer.nn.learned import LearnedKMeansModel
from skformer.store import (
    ModelStoreError,
    load_model,
    locations,
    pretrain,
    pretraining,
    read_model,
    save_model,
)
from skformer.store import format as store_format
from skformer.training import TrainingConfig

TINY = dict(steps=3, eval_every=3, n_val_tasks=8, n_points=32)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    """Every test gets its own empty cache and no shipped weights."""
    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(locations, "shipped_dir", lambda: tmp_path / "no-shipped-weights")
    monkeypatch.setattr(pretraining, "_KEPT", {})  # nor models kept by an earlier test
    return tmp_path / "cache"


@pytest.fixture
def tiny_on_demand(monkeypatch):
    """On-demand pretraining with a tiny run; counts the calls of ``train``."""
    calls = []
    real_train = pretraining.train

    def counting_train(config, **kwargs):
        calls.append(config)
        return real_train(config, **kwargs)

    monkeypatch.setattr(pretraining, "_on_demand_config", _tiny_config)
    monkeypatch.setattr(pretraining, "train", counting_train)
    return calls


def _tiny_config(d, k, embedding, loss):
    return TrainingConfig.fast(d, k, embedding=embedding, loss=loss, **TINY)


def _model(seed=0):
    model = LearnedKMeansModel(2, 3, embedding="binary")
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    return model


def _tensor_data_offset(data: bytes) -> int:
    (size,) = struct.unpack("<Q", data[:8])
    return 8 + size


# ----------------------------------------------------------------------------- format


def test_save_read_round_trip(tmp_path):
    model = _model()
    cfg = TrainingConfig.fast(2, 3, **TINY)
    path = save_model(tmp_path / "sub" / "m.safetensors", model, training_config=cfg,
                      val_relative=0.93)
    stored = read_model(path)
    assert stored.path == path and not stored.model.training
    expected = model.state_dict()
    got = stored.model.state_dict()
    assert list(got) == list(expected)
    for name in expected:
        assert torch.equal(got[name], expected[name])
        assert got[name].device.type == "cpu"
    x = torch.rand(4, 16, 2, generator=torch.Generator().manual_seed(1))
    model.eval()
    assert torch.equal(stored.model.step(x, x[:, :3]), model.step(x, x[:, :3]))
    meta = stored.metadata
    assert meta["format"] == "skformer-model" and meta["format_version"] == 1
    assert meta["model_config"] == model.config
    assert TrainingConfig.from_dict(meta["training_config"]) == cfg
    assert meta["val_relative"] == 0.93
    assert meta["package_version"] == skformer.__version__
    assert meta["created"] and meta["content_hash"].startswith("sha256:")
    assert list(tmp_path.joinpath("sub").iterdir()) == [path]  # no temporary files left
    if hasattr(os, "fchmod"):
        umask = os.umask(0)
        os.umask(umask)
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_read_model_maps_to_cpu_and_defaults(tmp_path):
    path = save_model(tmp_path / "m.safetensors", _model())
    stored = read_model(path, map_location="cpu")
    assert stored.metadata["training_config"] is None
    assert stored.metadata["val_relative"] is None
    assert all(p.device.type == "cpu" for p in stored.model.parameters())


def test_corrupted_tensor_byte_is_detected(tmp_path):
    path = save_model(tmp_path / "m.safetensors", _model())
    data = bytearray(path.read_bytes())
    data[_tensor_data_offset(bytes(data)) + 5] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ModelStoreError, match="corrupted: content hash mismatch"):
        read_model(path)


def test_edited_metadata_is_detected(tmp_path):
    path = save_model(tmp_path / "m.safetensors", _model(), val_relative=0.9)
    stored = read_model(path)
    meta = dict(stored.metadata, val_relative=0.1)  # a better score than it earned
    tensors = {k: v for k, v in stored.model.state_dict().items()}
    safetensors.torch.save_file(tensors, path, metadata={"skformer": json.dumps(meta)})
    with pytest.raises(ModelStoreError, match="content hash mismatch"):
        read_model(path)


def _write_bad(tmp_path, kind):
    path = tmp_path / "bad.safetensors"
    good = save_model(tmp_path / "good.safetensors", _model()).read_bytes()
    tensors = {"w": torch.ones(2, 2)}
    if kind == "truncated":
        path.write_bytes(good[: len(good) - 10])
    elif kind == "truncated header":
        path.write_bytes(good[:20])
    elif kind == "random":
        path.write_bytes(os.urandom(256))
    elif kind == "tiny":
        path.write_bytes(b"abc")
    elif kind == "no metadata":
        safetensors.torch.save_file(tensors, path)
    elif kind == "other metadata":
        safetensors.torch.save_file(tensors, path, metadata={"format": "pt"})
    elif kind in ("wrong format", "wrong version"):
        meta = json.loads(safetensors.safe_open(tmp_path / "good.safetensors", "pt")
                          .metadata()["skformer"])
        if kind == "wrong format":
            meta["format"] = "something-else"
        else:
            meta["format_version"] = 99
        safetensors.torch.save_file(tensors, path, metadata={"skformer": json.dumps(meta)})
    return path


@pytest.mark.parametrize(
    "kind, match",
    [
        ("truncated", "not a valid safetensors file|truncated"),
        ("truncated header", "truncated"),
        ("random", "not a safetensors file"),
        ("tiny", "not a safetensors file"),
        ("no metadata", "not a skformer model"),
        ("other metadata", "not a skformer model"),
        ("wrong format", "not a skformer model"),
        ("wrong version", "format_version 99"),
    ],
)
def test_bad_files_are_refused(tmp_path, kind, match):
    with pytest.raises(ModelStoreError, match=match):
        read_model(_write_bad(tmp_path, kind))


def test_model_store_error_is_a_value_error():
    assert issubclass(ModelStoreError, ValueError)


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(store_format.os, "fsync", broken_fsync)  # fails after the bytes are written
    with pytest.raises(OSError, match="disk full"):
        save_model(path, _model())
    assert list(tmp_path.iterdir()) == []


def test_failed_rewrite_keeps_the_old_file(tmp_path, monkeypatch):
    path = save_model(tmp_path / "m.safetensors", _model(0), val_relative=0.5)

    def broken_replace(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(store_format.os, "replace", broken_replace)
    with pytest.raises(KeyboardInterrupt):
        save_model(path, _model(1), val_relative=0.7)
    assert list(tmp_path.iterdir()) == [path]
    assert read_model(path).metadata["val_relative"] == 0.5


# ----------------------------------------------------------------------------- locations


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "b"))
    assert store.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("SKFORMER_CACHE_DIR")
    assert store.cache_dir() == tmp_path / "b" / "skformer"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.cache_dir() == tmp_path / "home" / ".cache" / "skformer"


def test_model_filename():
    assert store.model_filename(32, 10, "onehot", "ne") == "d32_k10_onehot_ne.safetensors"


def test_missing_shipped_folder_is_an_empty_index(monkeypatch, tmp_path):
    monkeypatch.setattr(locations, "shipped_dir", lambda: tmp_path / "nowhere")
    assert store.shipped_index() == []


def test_shipped_weights_come_first(monkeypatch, tmp_path, _cache):
    shipped = tmp_path / "weights"
    path = save_model(shipped / "mine.safetensors", _model(0), val_relative=0.8)
    (shipped / "index.json").write_text(json.dumps([store.index_entry(path) | {"loss": "l2"}]))
    save_model(_cache / store.model_filename(2, 3), _model(1))
    monkeypatch.setattr(locations, "shipped_dir", lambda: shipped)
    assert store.find_model(2, 3) == path
    got = load_model(2, 3, pretrain=False)
    assert torch.equal(got.state_dict()["layer.points_to_centres.q_proj.weight"],
                       _model(0).state_dict()["layer.points_to_centres.q_proj.weight"])


# ------------------------------------------------------------------ pretrain / load_model


def test_pretrain_saves_to_the_cache(_cache):
    model = pretrain(2, 3, **TINY)
    assert isinstance(model, LearnedKMeansModel) and not model.training
    stored = read_model(_cache / "d2_k3_binary_l2.safetensors")
    assert stored.metadata["training_config"]["steps"] == 3
    assert isinstance(stored.metadata["val_relative"], float)
    assert stored.metadata["training"]["steps"] == 3
    for name, value in model.state_dict().items():
        assert torch.equal(stored.model.state_dict()[name], value)


@pytest.mark.parametrize("embedding", ["onehot", "none"])
def test_pretrain_without_saving(_cache, embedding):
    model = pretrain(2, 3, embedding=embedding, loss="ne", save=False, **TINY)
    assert model.config["embedding"] == embedding
    assert not _cache.exists()


def test_load_model_pretrains_once_then_reads_the_cache(tiny_on_demand, _cache, caplog):
    with caplog.at_level(logging.INFO, logger="skformer"):
        first = load_model(2, 3)
    assert len(tiny_on_demand) == 1 and "pretraining one on demand" in caplog.text
    assert (_cache / "d2_k3_binary_l2.safetensors").is_file()
    second = load_model(2, 3)
    assert len(tiny_on_demand) == 1
    for model in (first, second):
        assert not model.training
        assert all(p.requires_grad for p in model.parameters())
    for name, value in first.state_dict().items():
        assert torch.equal(second.state_dict()[name], value)


def test_load_model_replaces_a_corrupted_cache_file(tiny_on_demand, _cache):
    _cache.mkdir()
    (_cache / "d2_k3_binary_l2.safetensors").write_bytes(b"garbage" * 10)
    with pytest.raises(ModelStoreError, match="not a safetensors file"):
        load_model(2, 3, pretrain=False)
    with pytest.warns(UserWarning, match="Pretraining it again"):
        load_model(2, 3)
    assert len(tiny_on_demand) == 1
    read_model(_cache / "d2_k3_binary_l2.safetensors")


def test_load_model_without_pretraining_raises_lookup_error(tiny_on_demand):
    with pytest.raises(LookupError, match=r"skformer pretrain --d 5 --k 7"):
        load_model(5, 7, pretrain=False)
    assert tiny_on_demand == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_features=0), "n_features must be an integer >= 1"),
        (dict(n_features=2.5), "n_features must be an integer >= 1"),
        (dict(n_clusters=True), "n_clusters must be an integer >= 1"),
        (dict(embedding="gray"), "embedding must be one of"),
        (dict(loss="l1"), "loss must be one of"),
    ],
)
@pytest.mark.parametrize("func", [load_model, pretrain])
def test_invalid_arguments(func, kwargs, match):
    args = dict(n_features=2, n_clusters=3) | kwargs
    with pytest.raises(ValueError, match=match):
        func(args.pop("n_features"), args.pop("n_clusters"), **args)


def test_invalid_preset():
    with pytest.raises(ValueError, match="preset must be one of"):
        pretrain(2, 3, preset="slow")


def _concurrent_worker(cache, barrier, results):
    """Run in a spawned process: tiny on-demand pretraining, counting training runs."""
    os.environ["SKFORMER_CACHE_DIR"] = cache
    locations.shipped_dir = lambda: Path(cache) / "no-shipped-weights"
    calls = []
    real_train = pretraining.train

    def counting_train(config, **kwargs):
        calls.append(1)
        return real_train(config, **kwargs)

    pretraining._on_demand_config = _tiny_config
    pretraining.train = counting_train
    barrier.wait(timeout=120)
    model = load_model(2, 3)
    x = torch.rand(2, 16, 2, generator=torch.Generator().manual_seed(0))
    out = model.step(x, x[:, :3])
    results.put((len(calls), bool(torch.isfinite(out).all())))


def test_concurrent_pretraining_leaves_one_valid_file(_cache, tiny_on_demand):
    # This process and a spawned one ask for the same missing model at the same moment.
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    child = ctx.Process(target=_concurrent_worker, args=(str(_cache), barrier, queue))
    child.start()
    try:
        barrier.wait(timeout=120)
        model = load_model(2, 3)
        child_calls, child_ok = queue.get(timeout=120)
    finally:
        child.join(timeout=60)
    assert child.exitcode == 0 and child_ok
    assert sorted([len(tiny_on_demand), child_calls]) == [0, 1]  # trained once, read once
    x = torch.rand(2, 16, 2, generator=torch.Generator().manual_seed(0))
    assert torch.isfinite(model.step(x, x[:, :3])).all()
    files = sorted(p.name for p in _cache.iterdir())
    assert files == ["d2_k3_binary_l2.safetensors", "d2_k3_binary_l2.safetensors.lock"]
    read_model(_cache / files[0])


# ------------------------------------------------------------------------------------ CLI


def test_cli_pretrain_to_file(tmp_path, capsys):
    out = tmp_path / "m.safetensors"
    argv = ["pretrain", "--d", "2", "--k", "3", "--steps", "3", "--out", str(out),
            "--no-progress", "--preset", "fast"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert str(out) in text and "relative validation loss" in text
    stored = read_model(out)
    assert stored.metadata["training_config"]["steps"] == 3


def test_cli_pretrain_to_an_unwritable_folder_fails_before_training(tmp_path, capsys,
                                                                       monkeypatch):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(pretraining, "train", lambda *a, **k: pytest.fail("trained"))
    out = tmp_path / "a-file" / "m.safetensors"
    argv = ["pretrain", "--d", "2", "--k", "3", "--steps", "3", "--out", str(out),
            "--no-progress", "--preset", "fast"]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("skformer pretrain: error: ") and "cannot be written" in line


def test_cli_pretrain_grid_to_cache(_cache, capsys, monkeypatch):
    monkeypatch.setattr(pretraining, "train", _tiny_train)
    argv = ["pretrain", "--d", "1", "2", "--k", "2", "--no-progress", "--loss", "ne"]
    assert main(argv) == 0
    names = sorted(p.name for p in _cache.iterdir())
    assert names == ["d1_k2_binary_ne.safetensors", "d2_k2_binary_ne.safetensors"]
    assert capsys.readouterr().out.count("relative validation loss") == 2


def _tiny_train(config, **kwargs):
    from skformer.training import train

    tiny = TINY | ({"schedule_search": 2} if config.schedule_search else {})
    return train(TrainingConfig.from_dict(config.to_dict() | tiny), **kwargs)


def test_cli_pretrain_multistep_reports_the_ten_step_figure(_cache, capsys, monkeypatch):
    monkeypatch.setattr(pretraining, "train", _tiny_train)
    assert main(["pretrain", "--d", "2", "--k", "3", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "after 10 steps" in text and "of Lloyd's cost" in text
    stored = read_model(_cache / "d2_k3_binary_l2.safetensors")
    assert stored.model.schedule == 10 and stored.metadata["training"]["val_multistep"] > 0


@pytest.mark.parametrize(
    "argv",
    [["pretrain", "--k", "3"], ["pretrain", "--d", "0", "--k", "3"],
     ["pretrain", "--d", "2", "--k", "3", "--preset", "slow"]],
)
def test_cli_pretrain_bad_arguments_exit_2(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2


def test_on_demand_steps_shrink_with_the_shape_cost():
    from skformer.store.pretraining import ON_DEMAND, on_demand_config, on_demand_steps

    assert on_demand_steps(64, 16) == ON_DEMAND["steps"]  # the widest full-budget shape
    assert on_demand_steps(128, 20) == 41 < on_demand_steps(100, 20) < ON_DEMAND["steps"]
    assert on_demand_steps(4096, 64) == 25  # never below the floor
    assert on_demand_steps(64, 16, "onehot") < on_demand_steps(64, 16)  # OH is wider
    assert on_demand_config(128, 20).steps == 41


def test_reading_a_model_leaves_the_global_torch_generator_alone(tmp_path):
    # The weights come from the file: no default initialisation is drawn (issue 21).
    path = tmp_path / "d2_k3_binary_l2.safetensors"
    save_model(path, _model())
    before = torch.get_rng_state()
    stored = read_model(path)
    assert torch.equal(torch.get_rng_state(), before)
    assert all(p.device.type == "cpu" for p in stored.model.parameters())
    state = _model().state_dict()
    for name, value in stored.model.state_dict().items():
        torch.testing.assert_close(value, state[name])


def test_pretraining_on_demand_leaves_the_global_torch_generator_alone(tiny_on_demand):
    from skformer import TransformerKMeans

    before = torch.get_rng_state()
    load_model(2, 3)
    assert torch.equal(torch.get_rng_state(), before)
    X = torch.randn(40, 5, generator=torch.Generator().manual_seed(0)).numpy()
    before = torch.get_rng_state()
    TransformerKMeans(3, learned_starts=1, random_state=0).fit(X)  # d=5: on demand
    assert torch.equal(torch.get_rng_state(), before)
    assert len(tiny_on_demand) == 2


# ------------------------------------------------ what a save may replace (issue 41)


def _targets(tmp_path) -> dict:
    """Paths that hold what a save must not replace, and what each holds."""
    data = tmp_path / "data.csv"
    data.write_text("1,2\n3,4\n")
    link = tmp_path / "link.safetensors"
    os.symlink(data, link)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "folder").mkdir()
    return {"data": data, "link": link, "fifo": fifo, "folder": tmp_path / "folder",
            "devnull": Path(os.devnull)}


_KEPT_MESSAGES = {
    "link": r"link.safetensors is a symbolic link: skformer writes its files only to a new",
    "fifo": r"fifo is not a regular file \(a device, a pipe or a socket\)",
    "folder": r"folder is a folder",
    "devnull": r"/dev/null is not a regular file",
}


def _unchanged(targets) -> dict:
    return {"data": targets["data"].read_text(), "link": os.readlink(targets["link"]),
            "fifo": os.path.exists(targets["fifo"]) and not targets["fifo"].is_file(),
            "devnull": Path(os.devnull).is_char_device()}


@pytest.mark.parametrize("target", ["data", *_KEPT_MESSAGES])
def test_save_model_replaces_only_a_model_file(tmp_path, target):
    targets = _targets(tmp_path)
    before = _unchanged(targets)
    message = _KEPT_MESSAGES.get(
        target, r"data.csv exists and is not a skformer model file: it is kept. Pass another "
                r"path, or overwrite=True \(skformer pretrain --overwrite\) to replace it")
    with pytest.raises(FileExistsError, match=message):
        save_model(targets[target], _model())
    if target != "data":  # never, whatever overwrite says
        with pytest.raises(FileExistsError, match=message):
            save_model(targets[target], _model(), overwrite=True)
    assert _unchanged(targets) == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_save_model_replaces_a_model_file_and_overwrite_any_regular_file(tmp_path):
    targets = _targets(tmp_path)
    path = save_model(tmp_path / "m.safetensors", _model(0), val_relative=0.5)
    save_model(path, _model(1), val_relative=0.7)  # a model over a model
    assert read_model(path).metadata["val_relative"] == 0.7
    save_model(targets["data"], _model(1), overwrite=True)
    assert read_model(targets["data"]).metadata["model_config"]["n_features"] == 2
    damaged = bytearray(path.read_bytes())
    damaged[-1] ^= 1  # a damaged tensor: still a model file, replaced
    path.write_bytes(bytes(damaged))
    save_model(path, _model(2), val_relative=0.3)
    assert read_model(path).metadata["val_relative"] == 0.3


def test_a_file_made_while_saving_is_kept(tmp_path, monkeypatch):
    # Checked again just before the rename: a file written there meanwhile is kept.
    path = tmp_path / "m.safetensors"
    real_fsync = store_format.os.fsync

    def fsync_then_someone_writes(fd):
        real_fsync(fd)
        if not path.exists():
            path.write_text("someone else's data\n")

    monkeypatch.setattr(store_format.os, "fsync", fsync_then_someone_writes)
    with pytest.raises(FileExistsError, match=r"m.safetensors exists and is not a skformer"):
        save_model(path, _model())
    assert path.read_text() == "someone else's data\n"
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize("target", ["data", *_KEPT_MESSAGES])
def test_pretrain_refuses_before_training(tmp_path, monkeypatch, target):
    targets = _targets(tmp_path)
    before = _unchanged(targets)
    monkeypatch.setattr(pretraining, "train", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(FileExistsError, match=str(targets[target].name)):
        pretrain(2, 3, preset="fast", path=targets[target])
    assert _unchanged(targets) == before


def test_pretrain_overwrite_replaces_a_regular_file(tmp_path):
    targets = _targets(tmp_path)
    pretrain(2, 3, preset="fast", path=targets["data"], overwrite=True, **TINY)
    assert read_model(targets["data"]).metadata["training_config"]["steps"] == 3
    assert os.readlink(targets["link"]) == str(targets["data"])  # the link is still a link


def test_pretrain_replaces_a_damaged_file_in_the_cache(_cache):
    _cache.mkdir()
    (_cache / "d2_k3_binary_l2.safetensors").write_bytes(b"truncated")
    pretrain(2, 3, preset="fast", **TINY)  # the cache is skformer's own
    read_model(_cache / "d2_k3_binary_l2.safetensors")


@pytest.mark.parametrize("target", ["data", "link", "fifo", "devnull"])
def test_cli_pretrain_out_keeps_what_is_not_a_model(tmp_path, capsys, monkeypatch, target):
    targets = _targets(tmp_path)
    before = _unchanged(targets)
    monkeypatch.setattr(pretraining, "train", lambda *a, **k: pytest.fail("trained"))
    argv = ["pretrain", "--d", "2", "--k", "3", "--out", str(targets[target]),
            "--no-progress"]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"skformer pretrain: error: {targets[target]} ")
    if target != "data":
        assert main([*argv, "--overwrite"]) == 2
    assert _unchanged(targets) == before


def test_cli_pretrain_overwrite(tmp_path, capsys, monkeypatch):
    targets = _targets(tmp_path)
    monkeypatch.setattr(pretraining, "train", _tiny_train)
    argv = ["pretrain", "--d", "2", "--k", "3", "--out", str(targets["data"]),
            "--no-progress", "--overwrite"]
    assert main(argv) == 0
    assert f"d=2 k=3: {targets['data']}" in capsys.readouterr().out
    read_model(targets["data"])


def test_cli_pretrain_grid_needs_a_folder(tmp_path, capsys, monkeypatch):
    targets = _targets(tmp_path)
    monkeypatch.setattr(pretraining, "train", lambda *a, **k: pytest.fail("trained"))
    argv = ["pretrain", "--d", "2", "3", "--k", "3", "--out", str(targets["data"])]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"skformer pretrain: error: --out {targets['data']} is not a folder: a "
                    "grid of shapes is written to one (new or existing)")


# ------------------------------------------------ the shapes pretraining serves (issue 41)


@pytest.mark.parametrize("d", ["1025", "100000", "12345678901234567890"])
def test_cli_pretrain_too_many_features_exit_2(capsys, monkeypatch, d):
    monkeypatch.setattr(pretraining, "train", lambda *a, **k: pytest.fail("trained"))
    assert main(["pretrain", "--d", "2", d, "--k", "3", "--no-progress"]) == 2
    (line,) = capsys.readouterr().err.splitlines()  # one line, no traceback
    assert line.startswith(f"skformer pretrain: error: n_features={d} is more than "
                           "pretraining serves (at most 1024")


def test_the_widest_pretraining_is_checked_not_trained(monkeypatch):
    monkeypatch.setattr(pretraining, "train", lambda *a, **k: pytest.fail("trained"))
    store.check_pretrain(store.MAX_PRETRAIN_FEATURES, 10, save=False)
    with pytest.raises(ValueError, match=r"n_features=1025 is more than pretraining serves"):
        pretrain(store.MAX_PRETRAIN_FEATURES + 1, 10, save=False)
    with pytest.raises(ValueError, match=r"n_points=256 should be >= n_clusters=300"):
        store.check_pretrain(2, 300, save=False)


def test_cli_pretrain_help_states_the_bound():
    from skformer.cli import build_parser

    help_text = " ".join(build_parser()._subparsers._group_actions[0].choices["pretrain"]
                         .format_help().split())
    assert f"at most {store.MAX_PRETRAIN_FEATURES}" in help_text
    assert "any other file there is kept unless --overwrite" in help_text
