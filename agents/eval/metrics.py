"""Scoring functions for teacher-forced planner/caller evaluation (stdlib only, all pure).

- `tokens`: lowercase word/number tokens. Numbers joined by `:` `.` `/` `-` stay one token,
  so "10:00-10:30, 16/03/2026" is ["10:00-10:30", "16/03/2026"] and an ISO date or a time
  range never looks like free text.
- `rouge_l`: ROUGE-L F1 (beta = 1) over those tokens.
- `values_match`: recursive comparison of JSON values, exact or lenient (free text by ROUGE-L).
- `caller_scores`: ToolAcc / ParamAcc / ValuesAcc / ROUGE-L of one predicted tool call.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# A number with internal separators ("10:00", "16/03/2026", "3.5", "2026-03-16",
# "09:00-12:00") is one token; otherwise runs of letters/digits ("qwtr482913", "bpm").
_TOKEN = re.compile(r"\d+(?:[:./-]\d+)+|[^\W_]+")
_NUMERIC = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SPACE = re.compile(r"\s+")

NUMBER_TOLERANCE = 1e-6
# A reference string with at least this many tokens is free text (lenient matching applies).
FREE_TEXT_MIN_TOKENS = 4
LENIENT_ROUGE_L = 0.5


def tokens(text: str) -> list[str]:
    """Lowercase tokens of `text`; punctuation and whitespace separate them."""
    return _TOKEN.findall(text.casefold())


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge_l_tokens(candidate: Sequence[str], reference: Sequence[str]) -> float:
    """ROUGE-L F1 of two token sequences: 1.0 if both are empty, 0.0 if only one is."""
    if not candidate and not reference:
        return 1.0
    if not candidate or not reference:
        return 0.0
    lcs = _lcs(candidate, reference)
    if lcs == 0:
        return 0.0
    precision = lcs / len(candidate)
    recall = lcs / len(reference)
    return 2 * precision * recall / (precision + recall)


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F-measure (beta = 1) of the longest common token subsequence."""
    return rouge_l_tokens(tokens(candidate), tokens(reference))


def normalise_text(s: str) -> str:
    """Strip, casefold and collapse runs of whitespace to one space."""
    return _SPACE.sub(" ", s.strip().casefold())


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _as_number(v: Any) -> float | None:
    """A real number from a number or a numeric string; None otherwise."""
    if _is_number(v):
        f = float(v)
    elif isinstance(v, str) and _NUMERIC.fullmatch(v.strip()):
        f = float(v.strip())
    else:
        return None
    return f if math.isfinite(f) else None


def _as_bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        return {"true": True, "false": False}.get(normalise_text(v))
    return None


def _is_list(v: Any) -> bool:
    return isinstance(v, Sequence) and not isinstance(v, str | bytes | bytearray)


def values_match(pred: Any, ref: Any, *, lenient: bool) -> bool:
    """Does the predicted JSON value match the reference one?

    Exact: strings equal after `normalise_text`; numbers equal within 1e-6, a numeric string
    against a number compared as numbers (two strings are compared as strings, so ids and phone
    numbers keep their leading zeros and "+"); booleans equal ("true"/"false" strings count as
    booleans); dicts match when every reference key is present and matches (extra predicted
    keys inside nested dicts are ignored; `caller_scores` rejects extra top-level parameters);
    lists match element-wise, in order, with equal length.
    Lenient: additionally, a reference string of at least 4 tokens (free text) is matched by a
    predicted string whose ROUGE-L against it is at least 0.5.
    """
    if isinstance(ref, Mapping):
        if not isinstance(pred, Mapping):
            return False
        return all(k in pred and values_match(pred[k], v, lenient=lenient) for k, v in ref.items())
    if _is_list(ref):
        if not _is_list(pred) or len(pred) != len(ref):
            return False
        return all(values_match(p, r, lenient=lenient) for p, r in zip(pred, ref, strict=True))
    if isinstance(ref, bool) or isinstance(pred, bool):
        a, b = _as_bool(pred), _as_bool(ref)
        return a is not None and a == b
    if ref is None or pred is None:
        return pred is None and ref is None
    if _is_number(ref) or _is_number(pred):
        p, r = _as_number(pred), _as_number(ref)
        return p is not None and r is not None and abs(p - r) <= NUMBER_TOLERANCE
    if isinstance(ref, str) and isinstance(pred, str):
        if normalise_text(pred) == normalise_text(ref):
            return True
        if lenient:
            ref_tokens = tokens(ref)
            if len(ref_tokens) >= FREE_TEXT_MIN_TOKENS:
                return rouge_l_tokens(tokens(pred), ref_tokens) >= LENIENT_ROUGE_L
        return False
    return bool(pred == ref)


@dataclass(frozen=True, slots=True)
class CallerScore:
    """One predicted tool call against the reference.

    tool_ok: same tool name. param_ok: same set of parameter names. values_ok_*: right tool,
    no extra parameters, and every reference parameter value matches (exact / lenient).
    rouge_l: over the canonical JSON text (sorted keys) of {tool, parameters}.
    """

    tool_ok: bool
    param_ok: bool
    values_ok_exact: bool
    values_ok_lenient: bool
    rouge_l: float


def _call_parts(call: Any) -> tuple[Any, Any]:
    if not isinstance(call, Mapping):
        return None, None
    return call.get("tool"), call.get("parameters")


def canonical_call(call: Any) -> str:
    """The canonical JSON text of a call's {tool, parameters} (sorted keys)."""
    tool, params = _call_parts(call)
    return json.dumps(
        {"tool": tool, "parameters": params}, sort_keys=True, ensure_ascii=False, default=str
    )


def caller_scores(pred: Mapping[str, Any], ref: Mapping[str, Any]) -> CallerScore:
    """Score a predicted {tool, parameters} against the reference. A malformed prediction
    (not a mapping, parameters not a mapping) scores as wrong rather than raising."""
    p_tool, p_params = _call_parts(pred)
    r_tool, r_params = _call_parts(ref)
    if not isinstance(r_params, Mapping):
        raise TypeError("reference call parameters must be a mapping")
    tool_ok = isinstance(p_tool, str) and p_tool == r_tool
    params_ok_type = isinstance(p_params, Mapping)
    p_names = set(p_params) if isinstance(p_params, Mapping) else set()
    param_ok = params_ok_type and p_names == set(r_params)

    def values(lenient: bool) -> bool:
        return bool(
            tool_ok
            and param_ok
            and isinstance(p_params, Mapping)
            and values_match(p_params, r_params, lenient=lenient)
        )

    return CallerScore(
        tool_ok=tool_ok,
        param_ok=param_ok,
        values_ok_exact=values(False),
        values_ok_lenient=values(True),
        rouge_l=rouge_l(canonical_call(pred), canonical_call(ref)),
    )
