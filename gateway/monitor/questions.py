"""Plausibility flags -> events. A possible-but-implausible value (a pulse of 0 from a watch
that was reading one) is asked about once, until the device reads that vital plausibly
again; impossible values are only counted; other flags (jump, frozen, inconsistent) are
recorded at most every few minutes per device."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

from gateway.contract import NUMERIC_VITALS, EventType
from gateway.event_payloads import ImplausiblePayload
from gateway.model import Event, Reading
from gateway.monitor.plausibility import Flag
from gateway.monitor.response import unconfirmed_value

IMPLAUSIBLE_COOLDOWN_S = 300.0


class Questions:
    def __init__(self, counters: Counter[str]) -> None:
        self.counters = counters
        # (person, device, vital) asked about since its last plausible value: ask once.
        self.unconfirmed: set[tuple[str, str, str]] = set()
        self._sent: dict[tuple[str, ...], float] = {}
        self._how: dict[tuple[str, str, str], str] = {}  # what no answer becomes, per question
        self.dirty = False

    @property
    def _asked_persons(self) -> set[str]:
        return {k[0] for k in self.unconfirmed}

    def events(
        self, r: Reading, flags: Sequence[Flag], now: float, *, retro: bool, moving: bool
    ) -> list[Event]:
        out: list[Event] = []
        if not flags and r.person not in self._asked_persons:
            return out  # the hot path: nothing flagged, nothing to re-arm
        at = r.ts if retro else now
        plausible = {v for v in NUMERIC_VITALS if getattr(r, v) is not None}
        for f in flags:
            if f.kind in ("impossible", "out_of_plausible"):
                plausible.discard(f.vital)
            if f.kind == "impossible":
                self.counters[f"impossible_{f.vital}"] += 1  # discarded, never asked about
                continue
            seen = ImplausiblePayload(
                device=r.device,
                vital=f.vital,
                kind=f.kind,
                value=f.value,
                detail=f.detail,
                reading_ts=r.ts,
                retrospective=retro,
                ask=False,
                response=None,
            )
            key = (r.person, r.device, f.vital)
            k = (r.device, f.vital, f.kind)
            resp = unconfirmed_value(moving=moving, retrospective=retro)
            upgrade = (
                key in self.unconfirmed
                and self._how.get(key) == "contacts"
                and resp.on_no_answer == "hard_sos"
            )
            if (
                f.kind == "out_of_plausible"
                and not retro
                and (key not in self.unconfirmed or upgrade)
            ):
                # Unanswered it is a hard SOS (response.unconfirmed_value). Asked while the
                # wearer seemed to walk and now still, it is asked again as a hard SOS.
                self.unconfirmed.add(key)
                self._how[key] = resp.on_no_answer
                self.dirty = True
                asked = replace(seen, ask=resp.ask, response=resp).to_data()
                self._sent[k] = now
                out.append(Event(EventType.IMPLAUSIBLE_READING, r.person, at, asked))
                continue
            # Recorded at most every few minutes per device and kind (late data by its own
            # time: a synced day with the watch off is a handful of events, not 1,440).
            clock, kk = (r.ts, (*k, "late")) if retro else (now, k)
            if abs(clock - self._sent.get(kk, -1e18)) >= IMPLAUSIBLE_COOLDOWN_S:
                self._sent[kk] = clock
                out.append(Event(EventType.IMPLAUSIBLE_READING, r.person, at, seen.to_data()))
        if not retro:
            for v in plausible:
                if (r.person, r.device, v) in self.unconfirmed:
                    self.unconfirmed.discard((r.person, r.device, v))
                    self._how.pop((r.person, r.device, v), None)
                    self.dirty = True
        return out

    def snapshot(self) -> list[list[str]]:
        return [[*k, self._how.get(k, "hard_sos")] for k in sorted(self.unconfirmed)]

    def restore(self, items: Iterable[Iterable[object]]) -> None:
        self.unconfirmed, self._how = set(), {}
        for item in items:
            parts = [str(x) for x in item]
            key = (parts[0], parts[1], parts[2])
            self.unconfirmed.add(key)
            self._how[key] = parts[3] if len(parts) > 3 else "hard_sos"
