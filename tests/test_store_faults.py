"""Fault injection on the model store (what tests/test_store.py does not already cover).

* Every truncation of a model file (each length from 0 to the full size minus one)
  and a one-bit flip in every byte (bit ``pos % 8`` of byte ``pos``: header length, JSON
  header with the skformer metadata, tensor data) are refused by :func:`read_model` with
  :class:`ModelStoreError`.
* The same faults in the *cache*: ``load_model(..., pretrain=False)`` raises
  ModelStoreError and returns nothing; ``load_model(...)`` (``pretrain=True``) warns,
  pretrains again and returns the freshly trained weights, never the broken ones, and
  the cache file is valid again.
* Two processes running :func:`pretrain` for the same shape at the same moment (no
  lock: each trains and saves) leave exactly one valid file and no temporary file, and
  both get a model.
* A process killed while it pretrains on demand (during training, or with its
  temporary file written but not yet renamed) leaves nothing under the final name and
  releases the lock; the next ``load_model`` trains and loads.
"""

import hashlib
import os
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import torch

import skformer
from skformer.store import ModelStoreError, load_model, locations, pretraining, read_model
from skformer.training import TrainingConfig

TINY = dict(steps=3, eval_every=3, n_val_tasks=8, n_points=32)
NAME = "d2_k3_binary_l2.safetensors"
REPO = Path(skformer.__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    """Every test gets its own empty cache and no shipped weights (as test_store.py)."""
    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(locations, "shipped_dir", lambda: tmp_path / "no-shipped-weights")
    monkeypatch.setattr(pretraining, "_KEPT", {})  # nor models kept by an earlier test
    return tmp_path / "cache"


def _tiny_config(d, k, embedding, loss):
    return TrainingConfig.fast(d, k, embedding=embedding, loss=loss, **TINY)


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


@pytest.fixture(scope="module")
def good_file(tmp_path_factory) -> bytes:
    """The bytes of a valid model file: what tiny on-demand pretraining writes."""
    path = tmp_path_factory.mktemp("good") / NAME
    pretraining._pretrain(_tiny_config(2, 3, "binary", "l2"), path=path, progress=False,
                          device="cpu")
    return path.read_bytes()


def _layout(data: bytes) -> tuple[int, int]:
    """(start of the JSON header, start of the tensor data)."""
    (size,) = struct.unpack("<Q", data[:8])
    return 8, 8 + size


def _flip(data: bytes, pos: int, mask: int | None = None) -> bytes:
    """``data`` with one bit flipped at ``pos`` (by default bit ``pos % 8``)."""
    out = bytearray(data)
    out[pos] ^= (1 << (pos % 8)) if mask is None else mask
    return bytes(out)


def _metadata_digit(data: bytes) -> int:
    """Position of a digit inside the skformer metadata (the training seconds)."""
    pos = data.index(b"seconds")
    while not data[pos : pos + 1].isdigit():
        pos += 1
    return pos


def _state(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# ---------------------------------------------------------------- read_model sweeps


def test_every_truncation_is_refused(tmp_path, good_file):
    path = tmp_path / NAME
    path.write_bytes(good_file)
    with open(path, "r+b") as f:  # cut in place, longest first (rewriting is slower)
        for length in reversed(range(len(good_file))):
            f.truncate(length)
            f.flush()
            with pytest.raises(ModelStoreError):
                read_model(path)
    assert path.stat().st_size == 0


@pytest.mark.parametrize("region", ["length prefix", "JSON header", "tensor data"])
def test_a_bit_flip_in_every_byte_is_refused(tmp_path, good_file, region):
    header, tensors = _layout(good_file)
    positions = {"length prefix": range(0, header), "JSON header": range(header, tensors),
                 "tensor data": range(tensors, len(good_file))}[region]
    assert len(positions) > 0
    path = tmp_path / NAME
    path.write_bytes(good_file)
    accepted = []
    with open(path, "r+b") as f:  # flip in place (rewriting the file is slower)
        for pos in positions:
            f.seek(pos)
            f.write(_flip(good_file, pos)[pos : pos + 1])
            f.flush()
            try:
                read_model(path)
            except ModelStoreError:
                pass
            else:
                accepted.append(pos)
            f.seek(pos)
            f.write(good_file[pos : pos + 1])
            f.flush()
    assert accepted == [], f"flips accepted at {accepted[:10]} ({len(accepted)} in all)"
    assert path.read_bytes() == good_file and read_model(path)


# ------------------------------------------------------------ the same in the cache


def _faults(data: bytes) -> dict[str, bytes]:
    """The faults injected into a cached file, by name (see FAULTS)."""
    header, tensors = _layout(data)
    return {
        "truncated in the tensor data": data[: (tensors + len(data)) // 2],
        "truncated in the header": data[: (header + tensors) // 2],
        "a bit of the tensor data": _flip(data, tensors + (len(data) - tensors) // 3, 0x01),
        "a digit of the metadata": _flip(data, _metadata_digit(data), 0x01),
        "a byte of the header JSON": _flip(data, header + 1, 0x10),  # '{"' -> '{2'
    }


FAULTS = ["truncated in the tensor data", "truncated in the header",
          "a bit of the tensor data", "a digit of the metadata", "a byte of the header JSON"]


@pytest.mark.parametrize("fault", FAULTS)
def test_broken_cache_file_without_pretraining_is_an_error(
    _cache, good_file, tiny_on_demand, fault
):
    _cache.mkdir()
    path = _cache / NAME
    path.write_bytes(_faults(good_file)[fault])
    with pytest.raises(ModelStoreError):
        load_model(2, 3, pretrain=False)
    assert tiny_on_demand == []
    assert path.read_bytes() == _faults(good_file)[fault]  # left for the user to see


@pytest.mark.parametrize("fault", FAULTS)
def test_broken_cache_file_is_pretrained_again(_cache, good_file, tiny_on_demand, fault):
    _cache.mkdir()
    path = _cache / NAME
    broken = _faults(good_file)[fault]
    path.write_bytes(broken)
    good = _state(_read_bytes(good_file, _cache.parent))
    with pytest.warns(UserWarning, match="Pretraining it again"):
        model = load_model(2, 3)
    assert len(tiny_on_demand) == 1
    # The weights returned are the fresh (deterministic) training run, not the broken file.
    assert _same(_state(model), good)
    assert path.read_bytes() != broken
    assert _same(_state(read_model(path).model), good)
    assert sorted(p.name for p in _cache.iterdir()) == [NAME, NAME + ".lock"]


def _read_bytes(data: bytes, folder: Path):
    path = folder / "copy.safetensors"
    path.write_bytes(data)
    return read_model(path).model


# ------------------------------------------------------------- several processes


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ, SKFORMER_CACHE_DIR=str(cache), OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def _python(code: str, cache: Path, *args) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        env=_env(cache), cwd=cache.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the child ended first: {proc.communicate()}")
        if time.monotonic() > end:
            raise AssertionError(f"{path.name} did not appear in {timeout} s")
        time.sleep(0.02)


RACER = """
    import hashlib, pathlib, sys, time
    import torch
    from skformer import store
    go = pathlib.Path(sys.argv[1])
    pathlib.Path(sys.argv[2]).touch()  # imported: ready
    while not go.exists():
        time.sleep(0.005)
    model = store.pretrain(2, 3, steps=3, eval_every=3, n_val_tasks=8, n_points=32)
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode() + t.detach().cpu().numpy().tobytes())
    x = torch.rand(1, 16, 2, generator=torch.Generator().manual_seed(0))
    print(h.hexdigest(), bool(torch.isfinite(model.step(x, x[:, :3])).all()))
"""


def test_two_processes_pretraining_at_once_leave_one_valid_file(_cache, tmp_path):
    go = tmp_path / "go"
    ready = [tmp_path / f"ready{i}" for i in range(2)]
    procs = [_python(RACER, _cache, go, r) for r in ready]
    try:
        for r, p in zip(ready, procs, strict=True):
            _wait_for(r, p)
        go.touch()  # both start training at once, and save at about the same time
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0], outs
    digests = {out.split()[0] for out, _ in outs}
    assert all(out.split()[1] == "True" for out, _ in outs)
    assert sorted(p.name for p in _cache.iterdir()) == [NAME]  # no temporary file left
    stored = read_model(_cache / NAME).model
    h = hashlib.sha256()
    for name, t in sorted(stored.state_dict().items()):
        h.update(name.encode() + t.detach().cpu().numpy().tobytes())
    assert digests == {h.hexdigest()}  # same seed: both trained these weights


KILLED = """
    import os, pathlib, sys, time
    from skformer import store
    from skformer.store import locations, pretraining
    from skformer.training import TrainingConfig
    marker, where = pathlib.Path(sys.argv[1]), sys.argv[2]
    locations.shipped_dir = lambda: marker.parent / "no-shipped-weights"
    real_train, real_replace = pretraining.train, os.replace
    if where == "training":  # a run that trains until killed
        def config(d, k, embedding, loss):
            return TrainingConfig.fast(d, k, embedding=embedding, loss=loss, steps=10**6,
                                       eval_every=10**6, n_val_tasks=8, n_points=32)
        def train(config, **kwargs):
            marker.touch()
            return real_train(config, **kwargs)
        pretraining.train = train
    else:  # a tiny run whose temporary file is written, then never renamed
        def config(d, k, embedding, loss):
            return TrainingConfig.fast(d, k, embedding=embedding, loss=loss, steps=3,
                                       eval_every=3, n_val_tasks=8, n_points=32)
        def replace(src, dst):
            marker.touch()
            time.sleep(600)
            real_replace(src, dst)
        os.replace = replace
    pretraining._on_demand_config = config
    store.load_model(2, 3)
"""


@pytest.mark.parametrize("where", ["training", "writing"])
def test_killed_pretraining_leaves_no_partial_file(_cache, tmp_path, tiny_on_demand, where):
    fcntl = pytest.importorskip("fcntl")
    marker = tmp_path / "marker"
    proc = _python(KILLED, _cache, marker, where)
    try:
        _wait_for(marker, proc)
        time.sleep(0.3)  # well inside the training run, or the sleep before the rename
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    left = sorted(p.name for p in _cache.iterdir())
    assert NAME not in left
    temporaries = [n for n in left if n.endswith(".tmp")]
    # A killed process cannot remove its temporary file; it is never read.
    assert len(temporaries) == (1 if where == "writing" else 0), left
    assert all(n.startswith(f".{NAME}.") for n in temporaries)
    with open(_cache / (NAME + ".lock"), "a+b") as f:  # the kernel released the lock
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    with pytest.raises(LookupError):
        load_model(2, 3, pretrain=False)  # the temporary file is not a model

    model = load_model(2, 3)  # recovers: trains and loads
    assert len(tiny_on_demand) == 1 and not model.training
    assert _same(_state(read_model(_cache / NAME).model), _state(model))


def test_transformer_kmeans_retrains_a_broken_cache_file(_cache, good_file, tiny_on_demand):
    """The estimator meets a broken cached model as load_model does: a warning, one new
    training run, a fit."""
    import numpy as np

    from skformer import TransformerKMeans

    _cache.mkdir()
    path = _cache / NAME
    broken = _faults(good_file)["truncated in the tensor data"]
    path.write_bytes(broken)
    X = np.random.default_rng(0).normal(size=(60, 2)) + np.repeat(np.eye(3, 2) * 8, 20, 0)
    with pytest.raises(ModelStoreError):
        TransformerKMeans(3, random_state=0, device="cpu", pretrain=False,
                          learned_starts=1).fit(X)
    assert tiny_on_demand == []
    with pytest.warns(UserWarning, match="Pretraining it again"):
        fit = TransformerKMeans(3, random_state=1, device="cpu", learned_starts=1).fit(X)
    assert np.isfinite(fit.inertia_) and len(tiny_on_demand) == 1
    assert path.read_bytes() != broken


# ------------------------------------------------------- a file under another model's name


def _other_model_file(d, k, embedding, folder: Path) -> bytes:
    """The bytes of a valid model file of another shape or embedding."""
    from skformer.nn.learned import LearnedKMeansModel
    from skformer.store import save_model

    path = save_model(folder / "other.safetensors",
                      LearnedKMeansModel.from_exact(d, k, embedding=embedding))
    return path.read_bytes()


MISNAMED = [  # (what the file holds, the name it is under)
    ((2, 7, "binary"), "d2_k3_binary_l2.safetensors"),
    ((2, 3, "binary"), "d2_k3_onehot_l2.safetensors"),
    ((4, 3, "binary"), "d2_k3_binary_l2.safetensors"),
]


@pytest.mark.parametrize(("holds", "name"), MISNAMED)
def test_read_model_refuses_a_file_under_another_models_name(tmp_path, holds, name):
    path = tmp_path / name
    path.write_bytes(_other_model_file(*holds, tmp_path))
    with pytest.raises(ModelStoreError, match=r"holds a model for \(d, k, embedding, loss\)"):
        read_model(path)
    read_model(tmp_path / "other.safetensors")  # a name that promises nothing


@pytest.mark.parametrize(("holds", "name"), MISNAMED)
def test_transformer_kmeans_never_runs_a_misnamed_cache_file(_cache, tiny_on_demand, holds,
                                                              name):
    """The estimator's own read path checks the key as load_model does: an error without
    pretraining, else one warning, one new training run and a fit."""
    import warnings

    import numpy as np

    from skformer import TransformerKMeans

    _cache.mkdir()
    (_cache / name).write_bytes(_other_model_file(*holds, _cache.parent))
    embedding = name.split("_")[2]
    X = np.random.default_rng(0).normal(size=(60, 2)) + np.repeat(np.eye(3, 2) * 8, 20, 0)
    est = dict(random_state=0, device="cpu", learned_starts=1, embedding=embedding)
    with pytest.raises(ModelStoreError, match="holds a model for"):
        TransformerKMeans(3, pretrain=False, **est).fit(X)
    assert tiny_on_demand == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = TransformerKMeans(3, **est).fit(X)
    retrain = [w for w in caught if "Pretraining it again" in str(w.message)]
    assert len(retrain) == 1, [str(w.message) for w in caught]
    assert fit.learned_used_ and np.isfinite(fit.inertia_) and len(tiny_on_demand) == 1
    read_model(_cache / name)  # the cache holds the right model now


# ------------------------------------------------------------- a cache that cannot be written


def _blobs3():
    import numpy as np

    return np.random.default_rng(0).normal(size=(60, 2)) + np.repeat(np.eye(3, 2) * 8, 20, 0)


def _unwritable_caches(tmp_path):
    """Cache folders that cannot be written, even by root: one under a regular file (it
    cannot be created), and /sys (it exists, read-only) where that is so."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    caches = [pytest.param(blocker / "cache", id="cannot-be-created")]
    try:
        with tempfile.TemporaryFile(dir="/sys"):
            pass
    except OSError:
        caches.append(pytest.param(Path("/sys"), id="read-only-folder"))
    return caches


@pytest.fixture(params=["cannot-be-created", "read-only-folder"])
def unwritable_cache(request, tmp_path, monkeypatch):
    caches = {p.id: p.values[0] for p in _unwritable_caches(tmp_path)}
    if request.param not in caches:
        pytest.skip("no read-only folder here")
    monkeypatch.setenv("SKFORMER_CACHE_DIR", str(caches[request.param]))
    return caches[request.param]


def test_unwritable_cache_keeps_the_model_in_memory(unwritable_cache, tiny_on_demand):
    """No PermissionError: one training run, a warning naming SKFORMER_CACHE_DIR, the model
    kept for the process (later fits and load_model neither train nor warn again)."""
    import warnings

    import numpy as np

    from skformer import TransformerKMeans

    X = _blobs3()
    with pytest.warns(UserWarning, match="SKFORMER_CACHE_DIR") as record:
        fit = TransformerKMeans(3, random_state=0, learned_starts=1).fit(X)
    assert len(record) == 1 and "kept in memory" in str(record[0].message)
    assert fit.learned_used_ and np.isfinite(fit.inertia_) and len(tiny_on_demand) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = TransformerKMeans(3, random_state=0, learned_starts=1).fit(X)
        model = load_model(2, 3)
    np.testing.assert_array_equal(again.labels_, fit.labels_)
    assert model.config["n_clusters"] == 3 and len(tiny_on_demand) == 1


def test_unwritable_cache_is_found_before_training(unwritable_cache, tiny_on_demand):
    """An explicit pretrain(save=True) fails before it trains, naming SKFORMER_CACHE_DIR."""
    with pytest.raises(OSError, match="cannot be written.*SKFORMER_CACHE_DIR"):
        pretraining.pretrain(2, 3, steps=3, eval_every=3, n_val_tasks=8, n_points=32)
    assert tiny_on_demand == []
    pretraining.pretrain(2, 3, steps=3, eval_every=3, n_val_tasks=8, n_points=32, save=False)


def test_a_failed_save_after_training_keeps_the_model(tiny_on_demand, monkeypatch):
    """Writable when checked, not when saved (a full disk, a race): a warning, no crash."""
    import numpy as np

    from skformer import TransformerKMeans

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pretraining, "save_model", full_disk)
    with pytest.warns(UserWarning, match="No space left on device.*SKFORMER_CACHE_DIR"):
        fit = TransformerKMeans(3, random_state=0, learned_starts=1).fit(_blobs3())
    assert fit.learned_used_ and np.isfinite(fit.inertia_) and len(tiny_on_demand) == 1
    TransformerKMeans(3, random_state=0, learned_starts=1).fit(_blobs3())
    assert len(tiny_on_demand) == 1


# ------------------------------------------------ what a save may replace (issue 41)


def _shipped_schedule(bits: int = 3):
    from skformer.store import generic

    shipped = Path(skformer.__file__).resolve().parent / "weights"
    return generic.read_schedule(shipped / generic.generic_filename(bits))


def test_a_schedule_is_saved_only_over_a_schedule(tmp_path, monkeypatch):
    from skformer.store import generic

    source = _shipped_schedule()
    data = tmp_path / "data.csv"
    data.write_text("1,2\n")
    fields = dict(bits=3, clusters=(5, 8), features=(2,))
    with pytest.raises(FileExistsError, match=r"data.csv exists and is not a skformer "
                                              r"schedule file: it is kept"):
        generic.save_schedule(data, source.log_effective, **fields)
    assert data.read_text() == "1,2\n"
    path = generic.save_schedule(tmp_path / "s.safetensors", source.log_effective, **fields)
    generic.save_schedule(path, source.log_effective, val_ratio=0.5, **fields)
    assert generic.read_schedule(path).metadata["val_ratio"] == 0.5
    monkeypatch.setattr("skformer.training.generic.train_generic",
                        lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(FileExistsError, match=r"data.csv exists"):  # before training
        generic.pretrain_generic(3, path=data)


# ------------------------------------------------ crafted values with a good hash (issue 41)


def _crafted(path: Path, tensors: dict, metadata: dict) -> Path:
    """A file whose values were edited and whose content hash was computed again: what
    the hash cannot catch."""
    import json

    import safetensors.torch

    from skformer.store.format import _content_hash

    metadata = {key: v for key, v in metadata.items() if key != "content_hash"}
    metadata["content_hash"] = _content_hash(tensors, metadata)
    path.write_bytes(safetensors.torch.save(tensors,
                                            metadata={"skformer": json.dumps(metadata)}))
    return path


@pytest.mark.parametrize("field", ["log_effective", "log_step_size"])
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 1e3])
def test_impossible_schedule_values_are_refused_naming_file_and_field(tmp_path, field,
                                                                        value):
    from skformer.store import generic

    source = _shipped_schedule()
    tensors = {"log_effective": source.log_effective.clone(),
               "log_step_size": source.log_step_size.clone()}
    tensors[field].view(-1)[1] = value
    path = _crafted(tmp_path / "generic_b3.safetensors", tensors, source.metadata)
    with pytest.raises(ModelStoreError, match=rf"generic_b3.safetensors: '{field}' holds "
                       r".* at \[[01](, 1)?\]; a schedule's logarithms must be finite"):
        generic.read_schedule(path)
    with pytest.raises(ModelStoreError, match=rf"'{field}' holds .* not written"):
        generic.save_schedule(tmp_path / "other.safetensors", bits=3, clusters=(5, 8),
                              features=(2,), **tensors)
    assert not (tmp_path / "other.safetensors").exists()


def test_a_fit_with_a_crafted_schedule_names_the_file(_cache, monkeypatch):
    import numpy as np

    from skformer import TransformerKMeans
    from skformer.store import generic

    source = _shipped_schedule()
    tensors = {"log_effective": source.log_effective.clone()}
    tensors["log_effective"][0, 0] = float("inf")
    _cache.mkdir()
    path = _crafted(_cache / "generic_b3.safetensors", tensors, source.metadata)
    generic._read_cached.cache_clear()
    X = np.random.default_rng(0).normal(size=(300, 4))
    with pytest.raises(ModelStoreError, match=rf"{path}: 'log_effective' holds inf at "
                                              r"\[0, 0\]"):
        TransformerKMeans(6, learned_starts=1, random_state=0).fit(X)


def test_a_model_file_with_weights_that_are_not_finite_is_refused(tmp_path, good_file):
    import safetensors.torch

    path = tmp_path / NAME
    path.write_bytes(good_file)
    stored = read_model(path)
    tensors = safetensors.torch.load(good_file)
    name = sorted(tensors)[0]
    tensors[name].view(-1)[0] = float("nan")
    _crafted(path, tensors, stored.metadata)
    with pytest.raises(ModelStoreError, match=rf"{NAME}: the weights '{name}' hold values "
                                              "that are not finite"):
        read_model(path)
