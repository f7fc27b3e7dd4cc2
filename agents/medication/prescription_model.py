"""The local model reads a prescription the deterministic parser could not, into an
`RxReading` (its JSON schema is the model's grammar, agents/llm/output.py). Its reading is
only a proposal: every value must be visible in the text (the medicine's name, the dose,
the count per day, the days), the user still confirms it, and anything that does not check
out stays a question."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import time
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agents.medication.dose_limits import MedProfile, review
from agents.medication.prescription import Dose, ParseResult, Prescription

PROMPT = (
    "You read medication prescriptions into JSON. Copy the medicine name and numbers exactly "
    "as written. Use null when something is not written. Never guess."
)


class RxReading(BaseModel):
    """What the model may answer; every key is required, null where nothing is written."""

    model_config = ConfigDict(extra="forbid")
    medicine: str = Field(min_length=2, max_length=40)
    dose_amount: float = Field(ge=0)
    dose_unit: Literal["mg", "g", "mcg", "ml", "tablet", "capsule", "puff", "drop"]
    times_per_day: int | None = Field(ge=1, le=6)
    duration_days: int | None = Field(ge=1, le=366)


TIMES: dict[int, tuple[time, ...]] = {
    1: (time(8),),
    2: (time(8), time(20)),
    3: (time(8), time(14), time(20)),
    4: (time(8), time(12), time(16), time(20)),
    5: (time(6), time(10), time(14), time(18), time(22)),
    6: (time(6), time(10), time(14), time(18), time(22), time(2)),
}
_COUNT_WORDS = {1: ("once", "one"), 2: ("twice", "two"), 3: ("three", "thrice"), 4: ("four",),
                5: ("five",), 6: ("six",)}  # fmt: skip
NOTE = "read by the assistant: please check"


M = TypeVar("M", bound=BaseModel)
M_co = TypeVar("M_co", bound=BaseModel, covariant=True)


class _Gen(Protocol[M_co]):
    @property
    def data(self) -> M_co | None: ...


class ModelLike(Protocol):
    @property
    def available(self) -> bool: ...

    async def generate(
        self, static: str, dynamic: str, output: type[M], *, max_tokens: int = 96,
        timeout_s: float = 3.0,
    ) -> _Gen[M]: ...  # fmt: skip


def _num_in(n: float, text: str) -> bool:
    shown = f"{n:g}"
    return re.search(rf"(?<![\d.]){re.escape(shown)}(?![\d.])", text) is not None


def check(out: Mapping[str, Any], text: str) -> Prescription | None:
    """The model's reading, if every value in it is visible in `text`."""
    low = text.lower()
    medicine = " ".join(str(out.get("medicine", "")).lower().split())
    if not medicine or any(w not in low for w in medicine.split()):
        return None
    amount, unit = out.get("dose_amount"), out.get("dose_unit")
    if not isinstance(amount, int | float) or amount <= 0 or not _num_in(float(amount), low):
        return None
    if (
        unit not in ("mg", "g", "mcg", "ml", "tablet", "capsule", "puff", "drop")
        or str(unit) not in low
    ):
        return None
    per_day = out.get("times_per_day")
    if not isinstance(per_day, int) or per_day not in TIMES:
        return None  # how often must be written; an as-needed medicine the parser reads itself
    if not (_num_in(per_day, low) or any(w in low for w in _COUNT_WORDS[per_day])):
        return None
    days = out.get("duration_days")
    if days is not None and (not isinstance(days, int) or not _num_in(days, low)):
        return None
    dose = Dose(float(amount) * 1000, "mg") if unit == "g" else Dose(float(amount), str(unit))
    return Prescription(
        medicine=medicine,
        dose=dose,
        times=TIMES[per_day],
        frequency=f"{per_day} times a day" if per_day > 1 else "once daily",
        duration_days=days,
        instructions=(NOTE,),
    )


async def read_with_model(model: ModelLike | None, text: str) -> Prescription | None:
    if model is None or not model.available:
        return None
    gen = await model.generate(PROMPT, f"Prescription: {text}\nJSON:", RxReading, max_tokens=96,
                               timeout_s=15)  # fmt: skip
    return check(gen.data.model_dump(), text) if gen.data else None


async def read_checked(
    model: ModelLike | None, text: str, profile: MedProfile, others: list[Prescription]
) -> ParseResult | None:
    """The model's reading with the same safety checks as the parser's (a model reading
    "methotrexate once daily" is refused like the parser's); None when it has none."""
    if len(text) > 500:
        return None
    rx = await read_with_model(model, text)
    if rx is None:
        return None
    rv = review(rx, profile, others)
    if rv.questions:
        return ParseResult(None, tuple(rv.questions), tuple(rv.warnings), rv.refused)
    return ParseResult(rx, (), tuple(rv.warnings))
