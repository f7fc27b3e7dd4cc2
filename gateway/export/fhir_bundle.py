"""The export as a stream: a FHIR Bundle (type `collection`) yielded as JSON bytes, a page
of readings at a time.

Memory is bounded by a page (source.CHUNK_ROWS readings and their resources), not by the
period: readings are read by keyset pages, each page's entries are encoded and yielded, and
only small state is carried across (the last Observation of each vital for Communication.about,
the last NEWS2 written, the window being summed). Texts are few and are held whole."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from gateway.contract.vitals import BY_NAME
from gateway.export import codes
from gateway.export import fhir_resources as fr
from gateway.export.downsample import Window, window_start
from gateway.export.fast import Templates, encode
from gateway.export.source import (
    WINDOW_S,
    ExportRequest,
    ExportSource,
    messages,
    reading_pages,
)
from gateway.monitor.news2 import News2Result, score_news2

# A text is about the Observations of the quarter-hour before it (or of its summary window).
ABOUT_S = 900.0
# NEWS2 is written when its level changes, when its total changes 15 minutes after the last
# one written, and at least hourly.
NEWS2_CHANGE_S = 900.0
NEWS2_EVERY_S = 3600.0
_encode = encode


class _Writer:
    """Entries as JSON text, comma-separated, gathered into one piece per page."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.count = 0

    def add(self, full_url: str, resource: Mapping[str, Any]) -> None:
        self.add_json(full_url, _encode(resource))

    def add_json(self, full_url: str, resource: str) -> None:
        self.parts.append(
            f'{"," if self.count else ""}{{"fullUrl":"{full_url}","resource":{resource}}}'
        )
        self.count += 1

    def take(self) -> bytes:
        out = "".join(self.parts).encode()
        self.parts.clear()
        return out


class _State:
    """What carries from one reading to the next."""

    def __init__(self, source: ExportSource, req: ExportRequest) -> None:
        day = datetime.fromtimestamp(req.since, UTC).date()
        self.req = req
        self.subject = fr.Subject.of(req.person, day)
        self.out = _Writer()
        self.last: dict[str, tuple[float, str]] = {}  # vital -> (time, fullUrl)
        self.texts = messages(source.texts, req)
        self.next_text = 0
        self.news2_last: tuple[str, int] | None = None
        self.news2_at = float("-inf")
        self.templates = Templates(self.subject)
        self._scores: dict[tuple[Any, ...], News2Result] = {}

    def device_ref(self, device_id: str) -> fr.DeviceInfo:
        info, new = self.subject.device(device_id)
        if new:
            self.out.add(*fr.device(self.subject, device_id))
        return info

    def texts_before(self, ts: float, lookback: float) -> None:
        """Write the texts created before `ts`, about the Observations just before them."""
        while self.next_text < len(self.texts) and self.texts[self.next_text]["created_at"] < ts:
            row = self.texts[self.next_text]
            self.next_text += 1
            at = float(row["created_at"])
            about = [ref for t, ref in self.last.values() if at - lookback <= t <= at]
            self.out.add(*fr.communication(self.subject, row, about, self.req.scrub))

    def news2(
        self,
        at: float,
        effective: Mapping[str, Any],
        values: Mapping[str, float],
        refs: list[str],
        on_o2: Any,
        consciousness: Any,
        uid: str,
    ) -> None:
        if not self.subject.news2_applies or not values:
            return
        inputs = (
            values.get("respiratory_rate"),
            values.get("spo2"),
            None if on_o2 is None else bool(on_o2),
            values.get("systolic_bp"),
            values.get("heart_rate"),
            consciousness if consciousness in ("A", "C", "V", "P", "U") else None,
            values.get("temperature_c"),
        )
        result = self._scores.get(inputs)
        if result is None:
            result = score_news2(
                respiratory_rate=inputs[0],
                spo2=inputs[1],
                on_supplemental_o2=inputs[2],
                systolic_bp=inputs[3],
                heart_rate=inputs[4],
                consciousness=inputs[5],
                temperature_c=inputs[6],
                spo2_scale=self.subject.spo2_scale,
            )
            if len(self._scores) >= 65_536:
                self._scores.clear()
            self._scores[inputs] = result
        # A new level (clinical risk) at once; another total after NEWS2_CHANGE_S; the same
        # score again after NEWS2_EVERY_S. A watch's 5-second readings would otherwise give a
        # GP a NEWS2 every 5 seconds, flickering by a point.
        last, since = self.news2_last, at - self.news2_at
        same_level = last is not None and result.level == last[0]
        if same_level and since < NEWS2_EVERY_S:
            assert last is not None
            if result.total == last[1] or since < NEWS2_CHANGE_S:
                return
        self.news2_last, self.news2_at = (result.level, result.total), at
        self.out.add_json("urn:uuid:" + uid, self.templates.news2(uid, effective, result, refs))


def stream(source: ExportSource, req: ExportRequest, *, now: float) -> Iterator[bytes]:
    """The Bundle, as JSON bytes, page by page. `now`: the Bundle's timestamp."""
    st = _State(source, req)
    bundle_id = codes.uid(f"bundle/{req.person.id}/{req.since}/{req.until}/{req.downsample}")
    yield (
        f'{{"resourceType":"Bundle","id":"{bundle_id}","meta":{{"lastUpdated":"{codes.iso(now)}"}},'
        f'"type":"collection","timestamp":"{codes.iso(now)}","entry":['
    ).encode()
    st.out.add(*fr.patient(st.subject, include_name=req.include_name))
    for d in req.person.devices:
        st.out.add(*fr.device(st.subject, d.id))
    if req.downsample == "none":
        for page in reading_pages(source.readings, req):
            for row in page:
                st.texts_before(row["ts"], ABOUT_S)
                _reading(st, row)
            yield st.out.take()
    else:
        size = WINDOW_S[req.downsample]
        window: Window | None = None
        for page in reading_pages(source.readings, req):
            for row in page:
                ts = row["ts"]
                if window is None or ts >= window.end:
                    if window is not None:
                        _summary(st, window)
                    window = Window(window_start(ts, size), size)
                    st.texts_before(window.start, max(ABOUT_S, size))
                _add(window, row)
            yield st.out.take()
        if window is not None:
            _summary(st, window)
    st.texts_before(float("inf"), ABOUT_S if req.downsample == "none" else WINDOW_S[req.downsample])
    yield st.out.take() + b"]}"


def _reading(st: _State, row: Any) -> None:
    sub = st.subject
    info = st.device_ref(row["device"])
    ts = row["ts"]
    effective = {"effectiveDateTime": codes.iso(ts)}
    base = f"{sub.person.id}/{row['device']}/{ts!r}/{row['seq']}/"
    scored: dict[str, float] = {}
    refs: list[str] = []
    when = effective["effectiveDateTime"]
    for vital in fr.SCALARS:
        value = row[vital]
        if value is None:
            continue
        key = fr.vital_key(vital, info)
        cls = fr.range_class(sub, vital, key, info, value)
        uid = codes.uid(base + vital)
        ref = "urn:uuid:" + uid
        st.out.add_json(ref, st.templates.vital(uid, key, when, info.ref, value, cls))
        st.last[key] = (ts, ref)
        if cls != "implausible" and key != "skin_temperature":
            scored[vital] = value
            refs.append(ref)
    systolic, diastolic = row["systolic_bp"], row["diastolic_bp"]
    if systolic is not None or diastolic is not None:
        uid = codes.uid(base + "bp")
        values = {"systolic_bp": systolic, "diastolic_bp": diastolic}
        st.out.add("urn:uuid:" + uid, fr.bp_panel(sub, uid, effective, info, values))
        st.last["bp"] = (ts, "urn:uuid:" + uid)
        if systolic is not None and fr.range_class(sub, "systolic_bp", "", info, systolic) != (
            "implausible"
        ):
            scored["systolic_bp"] = systolic
            refs.append("urn:uuid:" + uid)
    st.news2(
        ts,
        effective,
        scored,
        refs,
        row["on_supplemental_o2"],
        row["consciousness"],
        codes.uid(base + "news2"),
    )


def _add(window: Window, row: Any) -> None:
    """A reading into its window; a value no human can have stays out of the summary."""
    device = row["device"]
    for vital in _SUMMED:
        value = row[vital]
        if value is not None:
            lo, hi = _POSSIBLE[vital]
            if lo <= value <= hi:
                window.add(device, vital, value)
    window.note(row["on_supplemental_o2"], row["consciousness"])


def _summary(st: _State, w: Window) -> None:
    """One window: a summary Observation per device and vital (BP as one panel of means)."""
    sub = st.subject
    effective = {"effectivePeriod": {"start": codes.iso(w.start), "end": codes.iso(w.end)}}
    scored: dict[str, float] = {}
    refs: list[str] = []
    bp: dict[str, dict[str, float | None]] = {}
    for (device, vital), stat in w.stats.items():
        info = st.device_ref(device)
        if vital in ("systolic_bp", "diastolic_bp"):
            bp.setdefault(device, {})[vital] = stat.mean
            continue
        key = fr.vital_key(vital, info)
        worst = _worst(
            fr.range_class(sub, vital, key, info, stat.low),
            fr.range_class(sub, vital, key, info, stat.high),
        )
        uid = codes.uid(f"{sub.person.id}/{device}/{w.start!r}/{w.size!r}/{vital}")
        res = fr.observation(sub, uid, key, effective, info.ref)
        unit = codes.VITAL_CODES[key].unit
        fr.set_value(res, stat.mean, unit, "normal" if worst == "implausible" else worst)
        fr.statistics(res, stat.low, stat.high, stat.n, unit)
        ref = "urn:uuid:" + uid
        st.out.add(ref, res)
        st.last[key] = (w.start, ref)
        if key != "skin_temperature" and worst != "implausible" and vital not in scored:
            scored[vital] = stat.mean
            refs.append(ref)
    for device, values in bp.items():
        info = st.device_ref(device)
        uid = codes.uid(f"{sub.person.id}/{device}/{w.start!r}/{w.size!r}/bp")
        ref = "urn:uuid:" + uid
        st.out.add(ref, fr.bp_panel(sub, uid, effective, info, values))
        st.last["bp"] = (w.start, ref)
        systolic = values.get("systolic_bp")
        if systolic is not None and "systolic_bp" not in scored:
            scored["systolic_bp"] = systolic
            refs.append(ref)
    uid = codes.uid(f"{sub.person.id}/{w.start!r}/{w.size!r}/news2")
    st.news2(w.start, effective, scored, refs, w.on_o2, w.consciousness, uid)


_SUMMED = (*fr.SCALARS, "systolic_bp", "diastolic_bp")
_POSSIBLE = {v: BY_NAME[v].possible or (float("-inf"), float("inf")) for v in _SUMMED}
_SEVERITY = ("normal", "low", "high", "critical_low", "critical_high", "implausible")


def _worst(a: str, b: str) -> str:
    return a if _SEVERITY.index(a) >= _SEVERITY.index(b) else b
