"""Closed-loop scenario evaluation: the real assistant (policy, triage, tools, memory in a
scratch database) talks to a simulated user who answers from the scenario.

The simulated user answers every free-text question with the next of its `details`, then
"I don't know"; a yes/no question (the booking offer) with `accept`.

A scenario expects a specialist and whether it is booked, or (`expect.safety`) the crisis route:
the user is told where to get help now and nothing is booked or searched. `on_behalf` (who the
complaint is about, e.g. "mother") and `why` (the clinical reason for the expected route) are
documentation only; they do not change how the scenario runs.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agents.assistant.language import CRISIS_MESSAGE, EMERGENCY_MESSAGES
from agents.assistant.memory import LongTermMemory
from agents.assistant.model_roles import ModelLike, Roles
from agents.assistant.planner.policy import Policy
from agents.assistant.planner.types import NOTIFY, TriageLike
from agents.assistant.runner import Assistant
from agents.playbooks.journal import SosJournal
from agents.tools.appointment_tools import AppointmentToolDeps, register_appointment_tools
from agents.tools.registry import ToolRegistry
from agents.tools.sos_tools import SosToolDeps, build_sos_registry
from gateway.base.clock import ManualClock
from gateway.base.db import Database
from gateway.base.errors import HealthGWError
from gateway.household.model import SPECIALIZATIONS, Household

EVAL_TZ = "Europe/London"
# A Monday morning: every weekday of the following weeks has specialist hours.
EVAL_NOW = datetime(2026, 3, 16, 9, 0, tzinfo=ZoneInfo(EVAL_TZ))


class Expect(BaseModel):
    model_config = ConfigDict(extra="allow")
    # None only for the crisis route, which chooses no specialist.
    specialization: str | None = None
    # Required for a booking; a red-flag route never books, so there it may be left out.
    booked: bool | None = None
    # The crisis route (suicide, self-harm).
    safety: bool = False
    # The emergency route (a physical "call 999" red flag).
    emergency: bool = False

    @model_validator(mode="after")
    def _route(self) -> Expect:
        if self.safety and self.emergency:
            raise ValueError("expect.safety and expect.emergency are two different routes")
        if (self.safety or self.emergency) and self.booked:
            raise ValueError("the crisis and emergency routes never book")
        if self.booked is None:
            if not (self.safety or self.emergency):
                raise ValueError(
                    "expect.booked is required unless expect.safety or expect.emergency"
                )
            self.booked = False
        if not (self.safety or self.emergency) and not self.specialization:
            raise ValueError(
                "expect.specialization is required unless expect.safety or expect.emergency"
            )
        return self

    @property
    def red_flag(self) -> bool:
        return self.safety or self.emergency


class Scenario(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    category: str | None = None
    utterance: str = Field(min_length=1)
    details: list[str] = Field(default_factory=list)
    accept: bool
    expect: Expect
    on_behalf: str | None = None
    why: str | None = None


class ScenarioError(HealthGWError, ValueError):
    pass


def load_scenarios(path: Path) -> list[Scenario]:
    out: list[Scenario] = []
    problems: list[str] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(Scenario.model_validate(json.loads(line)))
        except ValidationError as exc:
            # Which field and why ("expect: expect.booked is required ..."), never the value.
            why = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(line)'}: {e['msg']}"
                for e in exc.errors()
            )
            problems.append(f"{path}:{n}: {why}")
        except ValueError as exc:
            problems.append(f"{path}:{n}: {str(exc).splitlines()[0]}")
    if problems:
        raise ScenarioError("invalid scenarios:\n  " + "\n  ".join(problems[:10]))
    return out


def eval_household() -> Household:
    """One user and one specialist of every kind, with weekly hours."""
    specialists = []
    for i, spec in enumerate(SPECIALIZATIONS):
        prefix = "".join(w[0] for w in spec.split()).upper() + spec[:3].upper()
        specialists.append(
            {
                "id": f"{prefix}-{100 + i}",
                "name": f"Dr. Eval {spec.title()}",
                "specialization": spec,
                "hours": {
                    d: ["09:00-12:00", "13:00-17:00"] for d in ("mon", "tue", "wed", "thu", "fri")
                },
            }
        )
    return Household.model_validate(
        {
            "timezone": EVAL_TZ,
            "persons": [
                {
                    "id": "evaluser",
                    "name": "Sam Taylor",
                    "birth_date": "1980-05-05",
                    "sex": "other",
                    "location": {"latitude": 51.5, "longitude": -0.12},
                }
            ],
            "specialists": specialists,
        }
    )


class _Publisher:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    async def publish(
        self, topic: str, payload: Any, *, qos: int = 1, retain: bool = False
    ) -> None:
        self.sent.append((topic, payload))


class _NoTexts:
    def submit(self, *, to: str, body: str, key: str, person: str, purpose: str) -> str:
        raise RuntimeError("the appointment flow never texts")


class SimulatedUser:
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.session_id = f"eval-{sc.id}"
        self._details = list(sc.details)
        self.turns = 1
        self.heard: list[str] = []

    async def ask(self, question: str, answer_type: str) -> str:
        self.turns += 1
        self.heard.append(question)
        if answer_type == "yes_no":
            return "Yes, please book it." if self.sc.accept else "No, not right now."
        return self._details.pop(0) if self._details else "I don't know"

    async def reply(self, text: str) -> None:
        self.heard.append(text)


@dataclass
class ScenarioResult:
    id: str
    category: str | None
    passed: bool
    expected: str | None
    chosen: str | None
    booked: bool
    expected_booked: bool
    turns: int
    steps: int
    mean_step_ms: float
    run_category: str
    safety: bool = False
    expected_safety: bool = False
    emergency: bool = False
    expected_emergency: bool = False


@dataclass
class ScenarioReport:
    results: list[ScenarioResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        n = len(self.results) or 1
        steps = [r.mean_step_ms for r in self.results]
        return {
            "n": len(self.results),
            "task_success": sum(r.passed for r in self.results) / n,
            "specialist_accuracy": sum(r.chosen == r.expected for r in self.results) / n,
            "booking_accuracy": sum(r.booked == r.expected_booked for r in self.results) / n,
            "safety_accuracy": sum(r.safety == r.expected_safety for r in self.results) / n,
            "emergency_accuracy": sum(r.emergency == r.expected_emergency for r in self.results)
            / n,
            "mean_turns": sum(r.turns for r in self.results) / n,
            "mean_step_ms": sum(steps) / n,
            "scenarios": [asdict(r) for r in self.results],
        }


def _build(
    triage: TriageLike, model: ModelLike | None, data_dir: Path, clock: ManualClock
) -> Assistant:
    hh = eval_household()
    db = Database(data_dir / "eval.db")
    memory = LongTermMemory(db, clock_now=clock.now)
    reg = ToolRegistry(clock=clock)
    build_sos_registry(
        SosToolDeps(
            _Publisher(),
            _NoTexts(),
            hh,
            lambda _p: None,
            SosJournal(Database(data_dir / "s.db")),
            None,
            clock,
        ),
        registry=reg,
    )
    register_appointment_tools(reg, AppointmentToolDeps(hh, memory, clock))
    return Assistant(reg, Policy(triage), hh, clock, roles=Roles(model))


async def run_scenarios(
    scenarios: Sequence[Scenario],
    triage: TriageLike,
    *,
    model: ModelLike | None = None,
    data_dir: Path | None = None,
) -> ScenarioReport:
    report = ScenarioReport()
    with tempfile.TemporaryDirectory(prefix="healthgw-eval-") as tmp:
        root = data_dir or Path(tmp)
        for sc in scenarios:
            # A fresh memory and calendar per scenario: no scenario sees another's bookings.
            clock = ManualClock(EVAL_NOW.timestamp())
            d = root / sc.id
            d.mkdir(parents=True, exist_ok=True)
            assistant = _build(triage, model, d, clock)
            user = SimulatedUser(sc)
            t0 = time.perf_counter()
            out = await assistant.run("evaluser", sc.utterance, user)
            _ = time.perf_counter() - t0
            chosen = out.specialization
            safety = took_route(out.trajectory, (CRISIS_MESSAGE,))
            emergency = took_route(out.trajectory, EMERGENCY_MESSAGES)
            ok = (
                safety == sc.expect.safety
                and emergency == sc.expect.emergency
                and out.booked == sc.expect.booked
                and (sc.expect.red_flag or chosen == sc.expect.specialization)
            )
            report.results.append(
                ScenarioResult(
                    sc.id,
                    sc.category,
                    ok,
                    sc.expect.specialization,
                    chosen,
                    out.booked,
                    bool(sc.expect.booked),
                    user.turns,
                    len(out.step_ms),
                    sum(out.step_ms) / max(1, len(out.step_ms)),
                    out.category,
                    safety,
                    sc.expect.safety,
                    emergency,
                    sc.expect.emergency,
                )
            )
    return report


def took_route(trajectory: dict[str, Any], messages: Sequence[str]) -> bool:
    """Whether the conversation told the user one of `messages` (a red-flag route's)."""
    for st in trajectory.get("interaction_trajectory", ()):
        v = st.get("value")
        if st.get("from") == "caller" and isinstance(v, dict) and v.get("tool") == NOTIFY:
            params = v.get("parameters") or {}
            if params.get("message") in messages:
                return True
    return False


def format_report(report: ScenarioReport) -> str:
    d = report.to_dict()
    lines = [f"{'id':<8} {'pass':<5} {'expected':<20} {'chosen':<20} booked turns"]
    for r in report.results:
        expected = _route(r.expected_safety, r.expected_emergency) or r.expected or "-"
        chosen = _route(r.safety, r.emergency) or r.chosen or "-"
        lines.append(
            f"{r.id:<8} {'yes' if r.passed else 'NO':<5} {expected:<20} {chosen:<20} "
            f"{r.booked!s:<6} {r.turns}"
        )
    lines.append(
        f"task success {d['task_success']:.1%}  specialist {d['specialist_accuracy']:.1%}  "
        f"booking {d['booking_accuracy']:.1%}  safety {d['safety_accuracy']:.1%}  "
        f"emergency {d['emergency_accuracy']:.1%}  mean turns {d['mean_turns']:.2f}  "
        f"mean step {d['mean_step_ms']:.1f} ms  (n={d['n']})"
    )
    return "\n".join(lines)


def _route(safety: bool, emergency: bool) -> str | None:
    if safety:
        return "(crisis route)"
    return "(emergency)" if emergency else None
