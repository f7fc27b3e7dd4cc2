"""A durable, bounded, ordered disk outbox of line-protocol lines (store-and-forward).

Layout: `seg-<gen>.lp` files, oldest gen first, each one newline-separated lines, plus
`head.offset`: "<gen> <bytes>", how much of that (oldest) segment the server has already
taken. The gen is stored with the offset so a crash between deleting a replayed segment and
resetting the offset can never apply an old offset to the next segment. Progress is
saved after every batch the server accepts, so a crash or an outage in the middle of a replay
resends nothing the server already has (InfluxDB would overwrite the same keys anyway; the
offset keeps servers without that property, such as VictoriaMetrics, exact too).

Appends are fsynced: a point that is in the outbox survives a power cut. The size bound is a
hard limit: `append` refuses lines that do not fit and returns how many it took, so the
caller counts the overflow and raises the alarm (the points are still in the local SQLite
store, which the gateway backfills from once the outbox has room).

Thread-safe: the writer thread drains while the event loop's overflow path may append.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path

from gateway.base.files import write_durable

_SEG_RE = re.compile(r"^seg-(\d{12})\.lp$")
SEGMENT_BYTES = 1 << 20  # a segment is replayed in a few batches, never held whole for long


class Outbox:
    def __init__(self, directory: Path, max_bytes: int) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.dir = directory
        self.max_bytes = max_bytes
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._segments: list[int] = sorted(
            int(m.group(1)) for p in self.dir.iterdir() if (m := _SEG_RE.match(p.name))
        )
        for g in self._segments:
            self._repair(g)
        self._sizes = {g: self._path(g).stat().st_size for g in self._segments}
        self._lines = {g: self._count_lines(g) for g in self._segments}
        self._head_offset = self._read_offset()
        self.appended = 0
        self.replayed = 0
        self.refused = 0

    # --- state ---------------------------------------------------------------------------
    def _path(self, gen: int) -> Path:
        return self.dir / f"seg-{gen:012d}.lp"

    def _count_lines(self, gen: int) -> int:
        with open(self._path(gen), "rb") as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 16), b""))

    def _repair(self, gen: int) -> None:
        """Cut a torn last line (a power cut mid-append: never acknowledged), so the next
        append cannot glue a new line onto it."""
        path = self._path(gen)
        with open(path, "rb+") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return
            pos = size
            while pos > 0:
                step = min(4096, pos)
                fh.seek(pos - step)
                chunk = fh.read(step)
                i = chunk.rfind(b"\n")
                if i >= 0:
                    pos = pos - step + i + 1
                    break
                pos -= step
            fh.truncate(pos)
            fh.flush()
            os.fsync(fh.fileno())

    def _read_offset(self) -> int:
        try:
            gen, offset = (self.dir / "head.offset").read_text().split()
            if self._segments and int(gen) == self._segments[0]:
                return max(0, min(int(offset), self._sizes[self._segments[0]]))
        except (OSError, ValueError):
            pass
        return 0

    def _write_offset(self, gen: int, offset: int) -> None:
        # Durable, rename and all: a lost offset resends what the server already took.
        write_durable(self.dir / "head.offset", f"{gen} {offset}")

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return sum(self._sizes.values()) - self._head_offset

    @property
    def points(self) -> int:
        """Lines waiting (the head segment's taken part is subtracted approximately by size)."""
        with self._lock:
            total = sum(self._lines.values())
            if self._segments and self._head_offset:
                g = self._segments[0]
                size = self._sizes[g] or 1
                total -= round(self._lines[g] * self._head_offset / size)
            return max(total, 0)

    def empty(self) -> bool:
        with self._lock:
            return not self._segments

    def fill_ratio(self) -> float:
        return self.size_bytes / self.max_bytes

    # --- writing -------------------------------------------------------------------------
    def append(self, lines: Sequence[str]) -> int:
        """Append in order; fsync. Returns how many lines fit under the bound (a prefix)."""
        if not lines:
            return 0
        with self._lock:
            used = sum(self._sizes.values()) - self._head_offset
            room = self.max_bytes - used
            taken: list[bytes] = []
            size = 0
            for ln in lines:
                b = ln.encode() + b"\n"
                if size + len(b) > room:
                    break
                taken.append(b)
                size += len(b)
            if taken:
                self._write(taken)
            self.appended += len(taken)
            self.refused += len(lines) - len(taken)
            return len(taken)

    def _write(self, chunks: list[bytes]) -> None:
        gen = self._segments[-1] if self._segments else 0
        if not self._segments or self._sizes[gen] >= SEGMENT_BYTES or gen == self._draining:
            gen = (self._segments[-1] + 1) if self._segments else 1
            self._segments.append(gen)
            self._sizes[gen] = 0
            self._lines[gen] = 0
        data = b"".join(chunks)
        with open(self._path(gen), "ab") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        self._sizes[gen] += len(data)
        self._lines[gen] += len(chunks)

    _draining: int | None = None

    # --- replay --------------------------------------------------------------------------
    def head(self, max_lines: int) -> tuple[list[str], int] | None:
        """The next batch from the oldest segment: (lines, end offset). None when empty.

        The head segment is sealed while it is replayed (appends open a new one), so the
        bytes read here are never being written."""
        with self._lock:
            if not self._segments:
                return None
            gen = self._segments[0]
            self._draining = gen
            offset = self._head_offset
        lines: list[str] = []
        end = offset
        with open(self._path(gen), "rb") as fh:
            fh.seek(offset)
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break  # a torn last line (power cut mid-append): it was never acknowledged
                end += len(raw)
                text = raw.decode(errors="replace").rstrip("\n")
                if text:
                    lines.append(text)
                if len(lines) >= max_lines:
                    break
        if not lines:
            self._drop_head(gen)
            return self.head(max_lines)
        return lines, end

    def commit(self, end: int, n: int) -> None:
        """The server took the batch that `head` returned, up to byte `end` of the head."""
        with self._lock:
            gen = self._segments[0]
            self.replayed += n
            if end >= self._sizes[gen]:
                self._drop_head_locked(gen)
            else:
                self._head_offset = end
                self._write_offset(gen, end)

    def _drop_head(self, gen: int) -> None:
        with self._lock:
            if self._segments and self._segments[0] == gen:
                self._drop_head_locked(gen)

    def _drop_head_locked(self, gen: int) -> None:
        # Delete first, then move the offset on: a crash in between leaves an offset whose gen
        # no longer exists, which reads as 0 for the new head (see _read_offset).
        with contextlib.suppress(FileNotFoundError):
            self._path(gen).unlink()
        self._segments.pop(0)
        self._sizes.pop(gen, None)
        self._lines.pop(gen, None)
        self._head_offset = 0
        self._draining = None
        self._write_offset(self._segments[0] if self._segments else 0, 0)
