"""The disk outbox: order, bound, crash safety, partial progress."""

from __future__ import annotations

from pathlib import Path

from gateway.tsdb import outbox as outbox_mod
from gateway.tsdb.outbox import Outbox


def _drain(ob: Outbox, n: int = 3) -> list[str]:
    out: list[str] = []
    while (batch := ob.head(n)) is not None:
        lines, end = batch
        out.extend(lines)
        ob.commit(end, len(lines))
    return out


def test_order_kept_across_segments(tmp_path: Path, monkeypatch: object) -> None:
    monkeypatch.setattr(outbox_mod, "SEGMENT_BYTES", 64)  # type: ignore[attr-defined]
    ob = Outbox(tmp_path, 1 << 20)
    lines = [f"m v={i}i {i}" for i in range(100)]
    for i in range(0, 100, 7):
        assert ob.append(lines[i : i + 7]) == len(lines[i : i + 7])
    assert ob.points == 100
    assert len(list(tmp_path.glob("seg-*.lp"))) > 3
    assert _drain(ob) == lines
    assert ob.empty() and ob.size_bytes == 0 and not list(tmp_path.glob("seg-*.lp"))


def test_bound_refuses_what_does_not_fit(tmp_path: Path) -> None:
    ob = Outbox(tmp_path, 100)
    taken = ob.append([f"line-{i:03d}" for i in range(20)])  # 9 bytes each
    assert taken == 11 and ob.refused == 9 and ob.size_bytes == 99
    assert ob.fill_ratio() > 0.98
    assert ob.append(["x" * 5]) == 0


def test_restart_resumes_after_partial_progress(tmp_path: Path) -> None:
    ob = Outbox(tmp_path, 1 << 20)
    lines = [f"m v={i}i {i}" for i in range(10)]
    ob.append(lines)
    batch = ob.head(4)
    assert batch is not None
    ob.commit(batch[1], 4)
    # A crash here: a new process must resume with line 4, not resend 0-3.
    again = Outbox(tmp_path, 1 << 20)
    assert _drain(again) == lines[4:]


def test_appends_during_replay_go_behind(tmp_path: Path) -> None:
    ob = Outbox(tmp_path, 1 << 20)
    ob.append(["a 1", "b 2"])
    batch = ob.head(1)
    assert batch is not None and batch[0] == ["a 1"]
    ob.append(["c 3"])  # the head segment is sealed while it is replayed
    ob.commit(batch[1], 1)
    assert _drain(ob) == ["b 2", "c 3"]


def test_torn_last_line_is_ignored(tmp_path: Path) -> None:
    ob = Outbox(tmp_path, 1 << 20)
    ob.append(["a 1", "b 2"])
    seg = next(tmp_path.glob("seg-*.lp"))
    with open(seg, "ab") as fh:
        fh.write(b"c 3")  # power cut mid-append: never acknowledged
    again = Outbox(tmp_path, 1 << 20)
    assert _drain(again) == ["a 1", "b 2"]


def test_torn_line_is_cut_before_new_appends(tmp_path: Path) -> None:
    ob = Outbox(tmp_path, 1 << 20)
    ob.append(["a 1"])
    seg = next(tmp_path.glob("seg-*.lp"))
    with open(seg, "ab") as fh:
        fh.write(b"b=tor")
    again = Outbox(tmp_path, 1 << 20)
    again.append(["c 3"])
    assert _drain(again) == ["a 1", "c 3"]


def test_offset_of_a_deleted_segment_never_applies_to_the_next(tmp_path: Path) -> None:
    ob = Outbox(tmp_path, 1 << 20)
    ob.append(["first 1", "first 2"])
    batch = ob.head(1)
    assert batch is not None
    ob.commit(batch[1], 1)  # offset points into segment 1
    ob.append(["second 3"])  # sealed head: goes to segment 2
    # A crash after segment 1 was deleted but before the offset moved on:
    next(p for p in sorted(tmp_path.glob("seg-*.lp"))).unlink()
    again = Outbox(tmp_path, 1 << 20)
    assert _drain(again) == ["second 3"]
