"""The chat in front of the assistant's conversations: one user message goes to an open
yes/no question about a proposed prescription (agents.medication.rx_confirm), to a follow-up the
hub sent (agents.scheduling.follow_ups), or to the appointment conversations
(agents.assistant.conversations). It is the gateway's chat port, so MQTT intents, REST and the WebSocket
all reach them the same way.

Which one gets a message:
- it names the question's session (`rx-...`): the question. An unclear answer is asked again;
- it names an open follow-up's session (`fu-...`): the follow-up;
- it names another session: the conversations;
- no session (a watch): the person's open conversation if one is going (it was the one
  talking); else an open prescription question when the text reads as a plain yes or no;
  else an open follow-up; anything else starts a conversation, and a prescription question
  stays open (the watch's yes/no prompt and the API still settle it).
A follow-up answered "better" is closed with a kind word; any other answer starts an
appointment conversation (in the follow-up's session) with the remembered symptoms.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

from agents.assistant.language import read_yes_no
from agents.medication.rx_confirm import RxConfirmations, is_confirm_prompt
from agents.scheduling.follow_ups import SESSION_PREFIX, FollowUps, reads_better

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]


class ConversationsPort(Protocol):
    """agents.assistant.conversations.Conversations in this process, or the proxy of the assistant's
    own process (agents.assistant.process.proxy.AssistantProcess)."""

    async def say(self, person: str, text: str, session_id: str | None = None) -> str: ...
    def listen(self, person: str, fn: Listener) -> Callable[[], None]: ...
    def session_open(self, session_id: str) -> bool: ...
    def stats(self) -> dict[str, Any]: ...


class PromptAnswerer(Protocol):
    """MedicationService.answer_prompt: confirm (all checks) or decline, and tell the person."""

    async def answer_prompt(
        self, person: str, prompt_id: str, yes: bool, *, by: str
    ) -> str | None: ...


class ChatRouter:
    def __init__(
        self,
        conversations: ConversationsPort,
        confirmations: RxConfirmations,
        meds: PromptAnswerer,
        follow_ups: FollowUps | None = None,
    ) -> None:
        self.conversations = conversations
        self._rx = confirmations
        self._meds = meds
        self._fu = follow_ups
        self._listeners: dict[str, list[Listener]] = {}
        self._last: dict[str, str] = {}  # person -> the conversation session last started
        self.counters = {"rx_answers": 0, "rx_unclear": 0, "follow_up_answers": 0}
        confirmations.on_reply = self._fan_out
        if follow_ups is not None:
            follow_ups.on_reply = self._fan_out

    async def say(self, person: str, text: str, session_id: str | None = None) -> str:
        if session_id is not None and is_confirm_prompt(session_id):
            return await self._rx_answer(person, session_id, text, ask_again=True)
        fu = self._follow_up(person, session_id)
        if session_id is None and not self._talking(person):
            prompt = self._rx.open_for(person)
            if prompt is not None and read_yes_no(text) != "unclear":
                return await self._rx_answer(person, prompt.id, text, ask_again=False)
        if fu is not None and (session_id is not None or not self._talking(person)):
            fu_sid, symptoms = fu
            self.counters["follow_up_answers"] += 1
            assert self._fu is not None
            self._fu.answered(person, fu_sid)
            if reads_better(text):
                await self._fu.close(person, fu_sid, "Glad to hear it. Tell me any time if it "
                                     "comes back.")  # fmt: skip
                return fu_sid
            text, session_id = f"{symptoms}. {text}", fu_sid
        sid = await self.conversations.say(person, text, session_id)
        self._last[person] = sid
        return sid

    def _follow_up(self, person: str, session_id: str | None) -> tuple[str, str] | None:
        if self._fu is None or (
            session_id is not None and not session_id.startswith(SESSION_PREFIX)
        ):
            return None
        return self._fu.open_for(person, session_id)

    def _talking(self, person: str) -> bool:
        sid = self._last.get(person)
        return sid is not None and self.conversations.session_open(sid)

    async def _rx_answer(self, person: str, prompt_id: str, text: str, *, ask_again: bool) -> str:
        said = read_yes_no(text)
        if said == "unclear":
            self.counters["rx_unclear"] += 1
            if ask_again and self._rx.is_open(prompt_id):
                await self._rx.ask_again(person, prompt_id)
            return prompt_id
        self.counters["rx_answers"] += 1
        await self._meds.answer_prompt(person, prompt_id, said == "yes", by="chat")
        return prompt_id

    # --- the rest of the chat port ------------------------------------------------------------

    def listen(self, person: str, fn: Listener) -> Callable[[], None]:
        off = self.conversations.listen(person, fn)
        self._listeners.setdefault(person, []).append(fn)

        def off_both() -> None:
            off()
            with contextlib.suppress(ValueError):
                self._listeners.get(person, []).remove(fn)

        return off_both

    def _fan_out(self, person: str, payload: dict[str, Any]) -> None:
        for fn in list(self._listeners.get(person, [])):
            try:
                fn(payload)
            except Exception:
                log.exception("chat listener failed")

    def session_open(self, session_id: str) -> bool:
        if is_confirm_prompt(session_id):
            return self._rx.is_open(session_id)
        return self.conversations.session_open(session_id)

    def stats(self) -> dict[str, Any]:
        return {**self.conversations.stats(), **self.counters, "rx": dict(self._rx.counters)}
