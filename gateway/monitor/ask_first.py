"""Single readings that must be asked about before they are confirmed, and the withdrawal of
those questions when the next readings refute them (docs/clinical.md §3 and §2b).

* A possible-but-implausible value (a pulse of 0 or 22, SpO2 40) is asked about at once: it
  cannot be told from an arrest. While the wearer walks, one such reading is likelier a loose
  strap swinging: it is held until the next reading of that vital from that device confirms
  it (then asked) or reads it plausibly (then dropped). Asked once per device and vital,
  until the device reads the vital plausibly again; that plausible reading **withdraws** a
  question still waiting for an answer, and nobody is told.
* A single wrist reading in the intervention range (SpO2 80 at rest) is asked about at once,
  before the confirmation window has agreed. The next reading refutes it (withdrawn, nobody
  told) or the window confirms it (the alert opens and joins the question). Silence is not a
  refutation: with no newer reading of that vital for `silence_s`, the monitor opens the alert
  from the single value. Asleep or walking, the reading is held for the window instead
  (nocturnal dips and motion artefacts are the likelier cause).
* Impossible values are only counted; jump, frozen and inconsistent flags are recorded at most
  every few minutes per device, never asked about.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gateway.contract.events import ImplausiblePayload
from gateway.contract.topics import NUMERIC_VITALS, EventType
from gateway.contract.values import Event, Reading
from gateway.monitor.context import Context
from gateway.monitor.plausibility import Flag
from gateway.monitor.ranges import VitalRange, is_intervention
from gateway.monitor.response import unconfirmed_value
from gateway.monitor.sustain import FAST_INTERVAL_S

IMPLAUSIBLE_COOLDOWN_S = 300.0


def question_window(interval: float, confirm_s: float) -> float | None:
    """How long a single-reading question waits for its answer: past the silence of a slow
    device (its next reading may refute the question first); a fast stream's next readings
    come within the escalation window anyway (None: that window)."""
    return silence_s(interval, confirm_s) + 10.0 if interval > FAST_INTERVAL_S else None


def silence_s(interval: float, confirm_s: float) -> float:
    """No newer reading for this long after a single suspicious one is silence, not a
    reading still to come: the confirm window, or two and a half intervals of a slow device (one
    dropped reading is not silence)."""
    return max(confirm_s, 2.5 * interval + 10.0)


@dataclass(slots=True)
class Suspect:
    """A single wrist reading in the intervention range, asked about or held."""

    person: str
    device: str
    vital: str
    value: float
    ts: float  # the reading's time
    seen: float  # wall time of the newest reading of this vital from this device
    silence_s: float
    asked: bool
    asked_at: float = 0.0  # wall time it was asked (0: held, not asked)


class Questions:
    def __init__(self, counters: Counter[str], *, confirm_s: float = 30.0) -> None:
        self.counters = counters
        self.confirm_s = confirm_s
        # (person, device, vital) asked about since its last plausible value: ask once.
        self.unconfirmed: set[tuple[str, str, str]] = set()
        # Implausible values held while walking until the next reading: key -> (value, wall, s).
        self.held: dict[tuple[str, str, str], tuple[float, float, float]] = {}
        self.suspects: dict[tuple[str, str, str], Suspect] = {}
        self._sent: dict[tuple[str, ...], float] = {}
        self._how: dict[tuple[str, str, str], str] = {}  # what no answer becomes, per question
        self.dirty = False

    @property
    def _asked_persons(self) -> set[str]:
        return {k[0] for k in (*self.unconfirmed, *self.held)}

    # --- implausible values -----------------------------------------------------------------
    def events(
        self,
        r: Reading,
        flags: Sequence[Flag],
        now: float,
        *,
        retro: bool,
        moving: bool,
        interval: float = 60.0,
    ) -> list[Event]:
        out: list[Event] = []
        if not flags and r.person not in self._asked_persons:
            return out  # the hot path: nothing flagged, nothing to re-arm
        at = r.ts if retro else now
        plausible = {v for v in NUMERIC_VITALS if getattr(r, v) is not None}
        window = question_window(interval, self.confirm_s)
        for f in flags:
            if f.kind in ("impossible", "out_of_plausible"):
                plausible.discard(f.vital)
            if f.kind == "impossible":
                self.counters[f"impossible_{f.vital}"] += 1  # discarded, never asked about
                continue
            seen = ImplausiblePayload(
                device=r.device, vital=f.vital, kind=f.kind, value=f.value, detail=f.detail,
                reading_ts=r.ts, retrospective=retro, ask=False, response=None,
            )  # fmt: skip
            key = (r.person, r.device, f.vital)
            k = (r.device, f.vital, f.kind)
            resp = unconfirmed_value(moving=moving, retrospective=retro)
            upgrade = (
                key in self.unconfirmed
                and self._how.get(key) == "contacts"
                and resp.on_no_answer == "hard_sos"
            )
            if f.kind == "out_of_plausible" and not retro:
                if moving and key not in self.unconfirmed and key not in self.held:
                    # One swinging-strap reading while walking: held for the next one.
                    self.held[key] = (f.value, now, silence_s(interval, self.confirm_s))
                    self.dirty = True
                elif key not in self.unconfirmed or upgrade:
                    # Unanswered it is a hard SOS (response.unconfirmed_value), or the
                    # contacts while the wearer still walks. Asked while walking and now
                    # still, it is asked again as a hard SOS. A single reading waits long
                    # enough for the next one to refute it; a confirmed one does not.
                    held = self.held.pop(key, None)
                    confirmed = held is not None or upgrade
                    self.unconfirmed.add(key)
                    self._how[key] = resp.on_no_answer
                    self.dirty = True
                    # Held while walking: the countdown runs from the first reading.
                    asked = replace(seen, ask=resp.ask, response=resp,
                                    window_s=None if confirmed else window,
                                    since=held[1] if held is not None else None)  # fmt: skip
                    self._sent[k] = now
                    out.append(Event(EventType.IMPLAUSIBLE_READING, r.person, at, asked.to_data()))
                    continue
            # Recorded at most every few minutes per device and kind (late data by its own
            # time: a synced day with the watch off is a handful of events, not 1,440).
            clock, kk = (r.ts, (*k, "late")) if retro else (now, k)
            if abs(clock - self._sent.get(kk, -1e18)) >= IMPLAUSIBLE_COOLDOWN_S:
                self._sent[kk] = clock
                out.append(Event(EventType.IMPLAUSIBLE_READING, r.person, at, seen.to_data()))
        if not retro:
            for v in plausible:
                key = (r.person, r.device, v)
                if self.held.pop(key, None) is not None:
                    self.dirty = True
                if key in self.unconfirmed:
                    # The device reads it plausibly again: the question, if still waiting,
                    # is withdrawn and nobody is told (an answered one is long done).
                    self.unconfirmed.discard(key)
                    self._how.pop(key, None)
                    self.dirty = True
                    out.append(_withdrawn(r.person, r.device, v, now, "implausible"))
        return out

    # --- single intervention-range wrist readings -------------------------------------------
    def suspect(
        self,
        r: Reading,
        raw: Mapping[str, float],
        alarm: Mapping[str, float],
        ranges: Mapping[str, VitalRange],
        ctx: Context,
        now: float,
        interval: float,
    ) -> list[Event]:
        """`raw`: this reading's wrist values (accepted or jumped); `alarm`: what the
        confirmation window agrees on so far."""
        out: list[Event] = []
        for v, x in raw.items():
            rng = ranges.get(v)
            if rng is None:
                continue
            key = (r.person, r.device, v)
            s = self.suspects.get(key)
            confirmed = v in alarm and is_intervention(alarm[v], rng)
            if not is_intervention(x, rng):
                if s is not None:
                    del self.suspects[key]  # refuted by the next reading
                    self.dirty = True
                    if s.asked:
                        out.append(_withdrawn(r.person, r.device, v, now, "intervention"))
                continue
            if confirmed:
                self.suspects.pop(key, None)  # the window agrees: the alert takes it from here
                continue
            if s is not None:
                s.seen, s.value = now, x
                if not s.asked and not ctx.asleep:
                    # Walking, the next reading confirmed it: ask now.
                    s.asked, s.asked_at = True, now
                    out.append(self._ask(r, v, x, now, interval))
                continue
            wait = silence_s(interval, self.confirm_s)
            held = ctx.moving or ctx.asleep
            self.suspects[key] = Suspect(r.person, r.device, v, x, r.ts, now, wait, not held,
                                         0.0 if held else now)  # fmt: skip
            self.dirty = True
            if not held:
                out.append(self._ask(r, v, x, now, interval))
        return out

    def _ask(self, r: Reading, vital: str, value: float, now: float, interval: float) -> Event:
        resp = unconfirmed_value(moving=False, retrospective=False)
        payload = ImplausiblePayload(
            device=r.device, vital=vital, kind="intervention", value=value,
            detail="one reading in the intervention range, not yet confirmed",
            reading_ts=r.ts, retrospective=False, ask=True, response=resp,
            window_s=question_window(interval, self.confirm_s),
        )  # fmt: skip
        return Event(EventType.UNCONFIRMED_READING, r.person, now, payload.to_data())

    def confirmed(self, person: str, vital: str) -> None:
        """An alert opened on this vital: its single-reading question is covered."""
        for key in [k for k in self.suspects if k[0] == person and k[2] == vital]:
            del self.suspects[key]
            self.dirty = True

    def due(self, now: float) -> list[Suspect]:
        """Asked suspects neither refuted nor confirmed by the window within their wait:
        opened as alerts on the single value (silence, or readings that stay in the range
        without the window agreeing yet, are not a refutation). Held ones are dropped when
        their device falls silent: the reading that would confirm them never came."""
        out = []
        for key, s in list(self.suspects.items()):
            if s.asked:
                if now - s.asked_at < s.silence_s:
                    continue
            elif now - s.seen < s.silence_s:
                continue
            del self.suspects[key]
            self.dirty = True
            if s.asked:
                out.append(s)
        return out

    def held_silent(self, now: float) -> list[Event]:
        """Implausible values held while walking whose next reading never came: a vanished
        pulse and then nothing more is asked about after all (contacts if unanswered)."""
        out = []
        for key, (value, seen, wait) in list(self.held.items()):
            if now - seen < wait:
                continue
            del self.held[key]
            person, device, vital = key
            resp = unconfirmed_value(moving=True, retrospective=False)
            asked = ImplausiblePayload(
                device=device, vital=vital, kind="out_of_plausible", value=value,
                detail="held while walking; the device then fell silent", reading_ts=None,
                retrospective=False, ask=True, response=resp,
            )  # fmt: skip
            self.unconfirmed.add(key)
            self._how[key] = resp.on_no_answer
            self.dirty = True
            out.append(Event(EventType.IMPLAUSIBLE_READING, person, now, asked.to_data()))
        return out

    def next_due(self) -> float | None:
        """The earliest wall time a held or asked single reading meets its silence."""
        times = [(s.asked_at if s.asked else s.seen) + s.silence_s for s in self.suspects.values()]
        times += [seen + wait for _, seen, wait in self.held.values()]
        return min(times, default=None)

    # --- persistence ------------------------------------------------------------------------
    def snapshot(self) -> list[list[str]]:
        return [[*k, self._how.get(k, "hard_sos")] for k in sorted(self.unconfirmed)]

    def restore(self, items: Iterable[Iterable[object]]) -> None:
        self.unconfirmed, self._how = set(), {}
        for item in items:
            parts = [str(x) for x in item]
            key = (parts[0], parts[1], parts[2])
            self.unconfirmed.add(key)
            self._how[key] = parts[3] if len(parts) > 3 else "hard_sos"


def _withdrawn(person: str, device: str, vital: str, now: float, why: str) -> Event:
    data = {"device": device, "vital": vital, "reason": f"{why} reading refuted by the next"}
    return Event(EventType.QUESTION_WITHDRAWN, person, now, data)
