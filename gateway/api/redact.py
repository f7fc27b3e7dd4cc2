"""PHI redaction for the family and viewer roles: pure functions over JSON-like values.

What goes: phone numbers (keys and text), coordinates (lat/lon keys, "51.50720, -0.12760"
pairs, "lat 51.5 lon -0.12", [lat, lon] lists, maps links) and free text that carries symptoms (what the user said, their answers,
symptom fields, and the planner's reasons, which restate the complaint). What stays: the
shape of the record, tool names, ids, dates, statuses and numbers that are not places, so a
family screen can still show what happened and when. The input is never modified.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "[redacted]"

COORD_KEYS = frozenset(
    {"latitude", "longitude", "lat", "lon", "lng", "location", "coordinates", "coords", "gps"}
)
PHONE_KEYS = frozenset(
    {"phone", "phone_no", "phone_number", "to_phone", "from_phone", "mobile", "msisdn"}
)
# Memory rows: the complaint text and the plan written from it.
MEMORY_TEXT_KEYS = frozenset({"symptoms", "current_symptoms", "next_steps"})
# Trajectory tool parameters and results that hold what the user said or text built from it.
TRAJECTORY_TEXT_KEYS = MEMORY_TEXT_KEYS | {
    "past_complaints",
    "questions",
    "message",
    "text",
    "utterance",
    "reason",
}
# The tool whose observation is the user's own answer, word for word.
USER_INPUT_TOOLS = frozenset({"get_input_from_user"})

_MAPS_URL = re.compile(
    r"(?:https?://(?:[\w-]+\.)*(?:google\.[a-z.]+/maps|maps\.google\.[a-z.]+|goo\.gl/maps"
    r"|maps\.app\.goo\.gl|openstreetmap\.org|osm\.org|maps\.apple\.com|bing\.com/maps"
    r"|waze\.com)|geo:)[^\s)\]>\"']*",
    re.IGNORECASE,
)
# A number is over where the next character is neither a digit nor a letter: a sentence's
# full stop ("Home: 51.50720, -0.12760.", the ladder's and clinician texts) ends it; ".5"
# would continue it. Integer parts have no digit or "." before them (not inside 1780000000.1).
_END = r"(?![\w])(?!\.\d)"
_START = r"(?<![\w.])"
_DEG = r"-?\d{1,3}\.\d{3,}"  # decimal degrees with 3+ places (~100 m or better)
_COORD_PAIR = re.compile(
    rf"{_START}{_DEG}\s*°?\s*[NSns]?\s*[,;/ ]\s*{_DEG}\s*°?\s*[EWew]?{_END}"
    rf"|{_START}\d{{1,3}}(?:\.\d+)?\s*°\s*[NSns]\s*,?\s*\d{{1,3}}(?:\.\d+)?\s*°\s*[EWew]{_END}"
)
# Labelled: "lat 51.5072 lon -0.1276", "latitude=51.5, longitude=-0.12", '"lng": -0.1276'.
# Decimals required: "lat 3" or "how long 10 minutes" are not places ("long" is not a label).
_LABEL = r"(?:lat(?:itude)?|lon(?:gitude)?|lng)"
_LABELLED = re.compile(
    rf"[\"']?\b{_LABEL}[\"']?\s*[:=]?\s*-?\d{{1,3}}\.\d+(?:\s*°\s*[NSEWnsew])?{_END}"
    rf"(?:\s*[,;]?\s*[\"']?\s*{_LABEL}[\"']?\s*[:=]?\s*-?\d{{1,3}}\.\d+(?:\s*°\s*[NSEWnsew])?{_END})?",
    re.IGNORECASE,
)
_PHONE = re.compile(
    r"(?<![\w+/=.-])(?:"
    r"\+\d[\d\s().-]{6,18}\d"  # international / E.164: +44 20 7946 0958, +15005550006
    r"|\(?0\d{1,4}\)?[\s.-]?\d{3,4}[\s.-]?\d{3,4}"  # national with trunk 0: 020 7946 0958
    r"|\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}"  # North American: (555) 123-4567, 555.123.4567
    # E.164 without the "+" (as some providers log it): 447700900123, 15005550006. A
    # leading 1 (NANP) is always 11 digits, so epoch seconds (10) and ms (13) stay.
    r"|[2-9]\d{10,14}|1\d{10}"
    r")(?!\w)(?!\.\d)"
)


def scrub_text(text: str) -> str:
    """A string with maps links, coordinate pairs and phone numbers replaced."""
    text = _MAPS_URL.sub("[location]", text)
    text = _LABELLED.sub("[location]", text)
    text = _COORD_PAIR.sub("[location]", text)
    return _PHONE.sub("[phone]", text)


def _decimals(v: float) -> int:
    text = repr(v)
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def _is_place(value: list[Any] | tuple[Any, ...]) -> bool:
    """[lat, lon] or GeoJSON's [lon, lat] (an altitude may follow) under any key: floats in
    range with 3+ decimals, like the text rule; [38.4, 37.9] or [120, 80] are not places."""
    if not 2 <= len(value) <= 3 or not all(type(v) is float for v in value[:2]):
        return False
    if len(value) == 3 and type(value[2]) not in (int, float):
        return False
    a, b = value[0], value[1]
    in_range = (abs(a) <= 90 and abs(b) <= 180) or (abs(a) <= 180 and abs(b) <= 90)
    return in_range and _decimals(a) >= 3 and _decimals(b) >= 3


def scrub(value: Any, text_keys: frozenset[str] = frozenset()) -> Any:
    """A redacted copy of a JSON-like value: place and phone keys, and `text_keys`, become
    REDACTED wherever they are; every other string is scrubbed of phones and places."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k).lower()
            hidden = key in COORD_KEYS or key in PHONE_KEYS or key in text_keys
            out[k] = REDACTED if hidden and v not in (None, "", [], {}) else scrub(v, text_keys)
        return out
    if isinstance(value, list | tuple):
        if _is_place(value):
            return REDACTED
        return [scrub(v, text_keys) for v in value]
    if isinstance(value, str):
        return scrub_text(value)
    return value


def _state(state: Any, previous_tool: str | None) -> Any:
    if not isinstance(state, Mapping) or "value" not in state:
        return scrub(state, TRAJECTORY_TEXT_KEYS)
    kind = state.get("from")
    value = state["value"]
    if kind == "user":
        value = REDACTED  # what the user said: the complaint itself
    elif kind == "observation" and previous_tool in USER_INPUT_TOOLS:
        value = {k: (REDACTED if k == "result" else scrub(v)) for k, v in dict(value).items()}
    elif kind == "system":
        value = scrub(value)  # who and when: the family know the person
    else:
        value = scrub(value, TRAJECTORY_TEXT_KEYS)
    return {**{k: scrub(v) for k, v in state.items() if k != "value"}, "value": value}


def trajectory_body(body: Any) -> Any:
    """A trajectory ({"interaction_trajectory": [state, ...], ...}) for a non-admin reader."""
    if not isinstance(body, Mapping):
        return scrub(body, TRAJECTORY_TEXT_KEYS)
    out = {k: scrub(v, TRAJECTORY_TEXT_KEYS) for k, v in body.items()}
    states = body.get("interaction_trajectory")
    if isinstance(states, list):
        redacted: list[Any] = []
        tool: str | None = None
        for st in states:
            redacted.append(_state(st, tool))
            if isinstance(st, Mapping) and st.get("from") == "caller":
                v = st.get("value")
                tool = str(v.get("tool")) if isinstance(v, Mapping) else None
        out["interaction_trajectory"] = redacted
    return out


def trajectory_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A stored run (summary columns plus `trajectory`) for a non-admin reader."""
    out: dict[str, Any] = {k: scrub(v) for k, v in record.items() if k != "trajectory"}
    if "trajectory" in record:
        out["trajectory"] = trajectory_body(record["trajectory"])
    return out


def memory(mem: Mapping[str, Any]) -> dict[str, Any]:
    """The assistant's memory of a person: bookings and dates stay, complaint text goes."""
    out: dict[str, Any] = scrub(mem, MEMORY_TEXT_KEYS)
    return out


def events(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Event payloads: places and phones go (monitor reasons and codes stay)."""
    return [scrub(e) for e in items]


def records(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Readings, person and device views: places and phones go, vitals stay."""
    return [scrub(r) for r in items]
