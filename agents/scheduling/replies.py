"""One way the hub's own questions (a prescription's yes/no, a follow-up) reach the person:
the chat's reply listeners first (the REST and WebSocket chat), then the reply topic."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from gateway.base.clock import Clock
from gateway.base.ports import Publisher
from gateway.contract.topics import ReplyPayload, format_ts, reply_topic

log = logging.getLogger(__name__)

ReplyHook = Callable[[str, dict[str, Any]], None]


async def say_reply(
    pub: Publisher,
    clock: Clock,
    on_reply: ReplyHook | None,
    person: str,
    session_id: str,
    text: str,
    *,
    answer_type: Literal["yes_no", "free_text"] | None,
) -> None:
    """`answer_type` None: nothing is asked (a last word)."""
    payload = ReplyPayload(
        text=text,
        session_id=session_id,
        expects_answer=answer_type is not None,
        answer_type=answer_type,
        ts=format_ts(clock.now()),
    ).model_dump(mode="json", exclude_none=True)
    if on_reply is not None:
        try:
            on_reply(person, payload)
        except Exception:  # a listener's failure must not lose the published reply
            log.exception("reply listener failed")
    await pub.publish(reply_topic(person), payload, qos=1)
