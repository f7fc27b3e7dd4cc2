"""gateway/base/files.py: the one durable write. The mode from the first byte, the old content or
the new and never a mix (a real SIGKILL loop), no temp file left behind, and the fsync order.

A power cut cannot be simulated here, so the fsyncs that make a write survive one are checked
by recording the calls (os.fsync monkeypatched): the file's data before the rename, the
directory after it."""

from __future__ import annotations

import errno
import os
import random
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.base.files import ORPHAN_AGE_S, fsync_dir, write_durable

ROOT = Path(__file__).resolve().parents[3]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _others(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p != path)


def test_new_file_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    old = os.umask(0)  # a permissive umask must not widen the file
    try:
        write_durable(path, "{}")
    finally:
        os.umask(old)
    assert _mode(path) == 0o600 and path.read_text() == "{}"


def test_mode_is_exact_when_a_reader_needs_it(tmp_path: Path) -> None:
    path = tmp_path / "acl"
    old = os.umask(0o077)  # a strict umask must not narrow what the caller asked for
    try:
        write_durable(path, "x", mode=0o640)
    finally:
        os.umask(old)
    assert _mode(path) == 0o640


def test_an_existing_wider_file_becomes_0600(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("old")
    path.chmod(0o644)
    write_durable(path, "new")
    assert _mode(path) == 0o600 and path.read_text() == "new"


def test_temp_file_is_private_exclusive_and_beside_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "api_token"
    path.write_text("old")
    opened: list[tuple[str, int, int]] = []
    real_open, real_replace = os.open, os.replace

    def spy_open(p: str | os.PathLike[str], flags: int, mode: int = 0o777) -> int:
        opened.append((os.fspath(p), flags, mode))
        return real_open(p, flags, mode)

    def spy_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        # Just before the rename: the temp file is whole, 0600, and the target untouched.
        assert Path(src).read_text() == "new" and _mode(Path(src)) == 0o600
        assert Path(dst).read_text() == "old"
        real_replace(src, dst)

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(os, "replace", spy_replace)
    write_durable(path, "new")
    tmp, flags, mode = opened[0]
    assert Path(tmp).parent == tmp_path and Path(tmp).name.startswith(".api_token.")
    assert flags & os.O_CREAT and flags & os.O_EXCL and flags & os.O_NOFOLLOW and mode == 0o600
    assert path.read_text() == "new" and _others(path) == []


def test_text_is_utf8_and_bytes_are_kept_as_given(tmp_path: Path) -> None:
    path = tmp_path / "f"
    write_durable(path, "Zoë ✓\n")
    assert path.read_bytes() == "Zoë ✓\n".encode()
    blob = bytes(range(256)) * 4096  # 1 MiB: more than one os.write may take
    write_durable(path, blob)
    assert path.read_bytes() == blob and _others(path) == []


def test_owner_is_set_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int, int]] = []
    real_fchown = os.fchown

    def spy(fd: int, uid: int, gid: int) -> None:
        calls.append((fd, uid, gid))
        real_fchown(fd, uid, gid)

    monkeypatch.setattr(os, "fchown", spy)
    me = (os.getuid(), os.getgid())
    write_durable(tmp_path / "passwd", "u:h\n", owner=me)
    assert [c[1:] for c in calls] == [me]
    st = (tmp_path / "passwd").stat()
    assert (st.st_uid, st.st_gid) == me


def test_fsyncs_the_file_before_the_rename_and_the_dir_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def spy_fsync(fd: int) -> None:
        events.append("fsync dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file")
        real_fsync(fd)

    def spy_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        events.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", spy_fsync)
    monkeypatch.setattr(os, "replace", spy_replace)
    write_durable(tmp_path / "f", b"data")
    assert events == ["fsync file", "replace", "fsync dir"]


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOTSUP, errno.EACCES])
def test_dir_fsync_is_best_effort_where_unsupported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    def unsupported(fd: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", unsupported)
    fsync_dir(tmp_path)  # no error: the platform cannot do better


def test_a_real_dir_fsync_error_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def eio(fd: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fsync", eio)
    with pytest.raises(OSError) as caught:
        fsync_dir(tmp_path)
    assert caught.value.errno == errno.EIO


def _fail_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    def eio(fd: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fsync", eio)


def _fail_replace(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(src: object, dst: object) -> None:
        raise OSError(errno.EXDEV, "cannot rename")

    monkeypatch.setattr(os, "replace", broken)


def _fail_write(monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    calls: list[int] = []

    def full(fd: int, data: bytes) -> int:
        calls.append(fd)
        if len(calls) > 1:  # the disk fills after the first chunk: a partial temp file
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(memoryview(data)[:10]))

    monkeypatch.setattr(os, "write", full)


@pytest.mark.parametrize("fail", [_fail_fsync, _fail_replace, _fail_write])
def test_a_failed_write_leaves_the_old_file_and_no_temp(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fail: Callable[[pytest.MonkeyPatch], None],
) -> None:
    path = tmp_path / "monitor_state.json"
    path.write_text('{"v": 1}')
    fail(monkeypatch)
    with pytest.raises(OSError):
        write_durable(path, '{"v": 2, "pad": "' + "x" * 100 + '"}')
    monkeypatch.undo()
    assert path.read_text() == '{"v": 1}' and _others(path) == []


def test_a_data_type_error_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("old")
    with pytest.raises(TypeError):
        write_durable(path, 12345)  # type: ignore[arg-type]
    assert path.read_text() == "old" and _others(path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_raises_and_leaves_nothing(tmp_path: Path) -> None:
    d = tmp_path / "ro"
    d.mkdir()
    (d / "f").write_text("old")
    d.chmod(0o500)
    try:
        with pytest.raises(PermissionError):
            write_durable(d / "f", "new")
        assert (d / "f").read_text() == "old" and _others(d / "f") == []
    finally:
        d.chmod(0o700)


def test_orphans_of_killed_writers_are_removed_once_old(tmp_path: Path) -> None:
    path = tmp_path / "head.offset"
    old = tmp_path / ".head.offset.0123456789ab.tmp"  # a writer killed an hour ago
    young = tmp_path / ".head.offset.ba9876543210.tmp"  # maybe a live writer's
    other = tmp_path / ".other.0123456789ab.tmp"  # another file's: not ours to judge
    for p in (old, young, other):
        p.write_text("partial")
    then = time.time() - ORPHAN_AGE_S - 60
    os.utime(old, (then, then))
    os.utime(other, (then, then))
    write_durable(path, "1 0")
    assert not old.exists() and young.exists() and other.exists()


# The writer: rewrites one file with alternating large versions as fast as it can. Each
# version is "<n>\n" + n bytes of one letter, so a torn file shows as a length mismatch.
_WRITER = """
import sys
from pathlib import Path
from gateway.base.files import write_durable
path = Path(sys.argv[1])
i = int(sys.argv[2])
while True:
    i += 1
    size = 3_000_000 if i % 2 else 1_000_000
    write_durable(path, f"{i} {size}\\n".encode() + bytes([97 + i % 26]) * size)
    if i == int(sys.argv[2]) + 1:
        print("ready", flush=True)
"""


def _check_whole(path: Path) -> int:
    blob = path.read_bytes()
    head, _, body = blob.partition(b"\n")
    i, size = (int(x) for x in head.split())
    assert len(body) == size and body == bytes([97 + i % 26]) * size, "torn file"
    assert size == (3_000_000 if i % 2 else 1_000_000)
    return i


def test_sigkill_mid_rewrite_always_leaves_one_whole_version(tmp_path: Path) -> None:
    path = tmp_path / "alerts.bin"
    write_durable(path, b"0 1000000\n" + b"a" * 1_000_000)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rng = random.Random()
    seen = [0]
    for _ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(seen[-1])],
            stdout=subprocess.PIPE,
            env=env,
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
            time.sleep(rng.uniform(0.0, 0.3))  # a random moment within a write
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=10)
            if proc.stdout is not None:
                proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL
        i = _check_whole(path)
        assert i > seen[-1]  # the writer got through at least one new version
        assert _mode(path) == 0o600
        seen.append(i)
        # A killed writer may leave its temp file (removed by a later write once old);
        # never anything else.
        assert all(n.startswith(".alerts.bin.") and n.endswith(".tmp") for n in _others(path))
    assert len(set(seen)) == len(seen)
