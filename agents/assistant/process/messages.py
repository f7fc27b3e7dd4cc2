"""What the gateway process and the assistant's own process say to each other over their
pipe: small frozen dataclasses, pickled by `multiprocessing.Connection`.

Gateway -> assistant: `Say` (one user message; answered by `Said`), `Tick` (once a second:
is the shared local model up? answered by `Stats`), `Answer` (the result of a `Call`),
`Stop`.

Assistant -> gateway: `Ready` (after the open conversations were resumed), `Said`,
`Closed` (a conversation ended), `Publish` (a reply or a watch message to go out on the
gateway's broker link), `Call` (what only the gateway may do: audit a tool call, announce a
booking, schedule a follow-up, ask the shared local model), `Stats`.

Every message that carries a user's words is PHI: nothing here is logged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# What the assistant's process may ask the gateway to do (anything else is refused).
CallOp = Literal["audit", "booked", "schedule_follow_up", "generate"]
# Calls whose result the child does not wait for (sent with rid 0).
FIRE_AND_FORGET: frozenset[str] = frozenset({"audit", "booked", "schedule_follow_up"})


@dataclass(frozen=True, slots=True)
class Say:
    rid: int
    person: str
    text: str
    session_id: str | None
    # The person's latest vitals as the gateway's monitor has them (the memory's profile).
    vitals: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Tick:
    model_available: bool


@dataclass(frozen=True, slots=True)
class Answer:
    rid: int
    value: Any = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Stop:
    pass


@dataclass(frozen=True, slots=True)
class Ready:
    pid: int
    nice: int
    # (session id, person, open) of every conversation resumed at start.
    sessions: tuple[tuple[str, str, bool], ...] = ()


@dataclass(frozen=True, slots=True)
class Said:
    rid: int
    session_id: str | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Closed:
    session_id: str


@dataclass(frozen=True, slots=True)
class Publish:
    topic: str
    payload: dict[str, Any] | str | bytes
    qos: int = 1
    retain: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    rid: int  # 0: fire and forget
    op: CallOp
    args: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class Stats:
    counters: dict[str, Any]


ToChild = Say | Tick | Answer | Stop
ToGateway = Ready | Said | Closed | Publish | Call | Stats
