"""The appointment planner's control flow: code, not the model.

`Policy.next(view)` is a pure function of the trajectory so far (the user's words, every
call and observation): it returns the next tool, the only tools allowed there, the reason and
the exact parameters. The live assistant and teacher-forced evaluation call the same function,
and a conversation can be replayed from its trajectory. The model only rephrases language
inside what this allows (agents/assistant/runner.py).

Before anything else, every message the user wrote is checked for crisis wording (thoughts of
suicide or self-harm, agents.triage.red_flags): on a match the conversation stores what was said,
tells the user where to get help now (CRISIS_MESSAGE) and ends; nothing is searched or booked,
whatever step it had reached. Right after it, every message is checked for a physical red flag
from the NHS "call 999" list (agents.triage.emergency: chest pain that will not go away, stroke
signs, severe breathlessness, collapse, heavy bleeding, ...): the same way out, with
EMERGENCY_MESSAGE (call 999; press SOS, to someone who wears a watch).

Flow (the brief's categories): vague complaint (or a short one the triage is unsure of) ->
follow-up questions (counter) -> past
complaints -> when are you free -> a specialist with a fitting slot -> offer -> yes: confirm,
save history, store symptoms, notify (general, dietician) | no: store symptoms, notify
(negative). No free slot, no answer and a taken slot each have their own way out.

This module decides which step comes next; agents.assistant.planner.steps builds each step's plan (tool,
parameters, wording) and agents.assistant.planner.types holds the View and Plan types and tool names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from agents.assistant.language import (
    CRISIS_MESSAGE,
    DECLINED_MESSAGE,
    EMERGENCY_MESSAGE,
    EMERGENCY_MESSAGE_WATCH,
    NO_ANSWER_MESSAGE,
    NO_SLOT_MESSAGE,
    SCHEDULE_QUESTION,
    YesNo,
    booked_message,
    is_dont_know,
    offer_question,
    read_yes_no,
    reoffer_question,
)
from agents.assistant.planner import steps as step
from agents.assistant.planner.triage import (
    AREA_ONLY,
    GP,
    REFERRAL_ONLY,
    SHORT_OPENER_WORDS,
    past_prior,
    scores,
    weak,
)
from agents.assistant.planner.types import (
    BOOK,
    CONFIRM,
    INPUT,
    PAST,
    SAVE,
    SEARCH,
    Call,
    Plan,
    TriageLike,
    View,
    offer_from,
)
from agents.assistant.schedule import Schedule, parse_schedule, slot_text
from agents.triage.condense import condense_symptoms
from agents.triage.emergency import emergency
from agents.triage.red_flags import crisis


def _last(calls: Sequence[Call], *tools: str) -> int | None:
    for i in range(len(calls) - 1, -1, -1):
        if calls[i].tool in tools:
            return i
    return None


def _first(calls: Sequence[Call], *tools: str, start: int = 0) -> int | None:
    for i in range(start, len(calls)):
        if calls[i].tool in tools:
            return i
    return None


class Policy:
    def __init__(
        self,
        triage: TriageLike,
        *,
        max_follow_ups: int = 2,
        max_searches: int = 4,
        settle_confidence: float = 0.6,
        watch_wearers: frozenset[str] = frozenset(),
    ):
        self.triage = triage
        # Persons with a watch: the emergency message offers its SOS button to them only.
        self.watch_wearers = watch_wearers
        self.max_follow_ups = max_follow_ups
        # Ask (within max_follow_ups) until the triage is this sure: a half-described
        # complaint is where a wrong specialist comes from.
        self.settle_confidence = settle_confidence
        self.max_searches = max_searches

    # --- the facts a view implies -----------------------------------------------------------

    @staticmethod
    def follow_ups(v: View) -> list[Call]:
        """Questions asked before any other tool ran: the clarifying ones."""
        out: list[Call] = []
        for c in v.calls:
            if c.tool != INPUT:
                break
            out.append(c)
        return out

    def complaint(self, v: View) -> str:
        answers = [
            c.result
            for c in self.follow_ups(v)
            if c.ok and isinstance(c.result, str) and not is_dont_know(c.result)
        ]
        return " ".join([v.text, *answers]).strip()

    def symptoms(self, v: View) -> str:
        # Once a symptoms string is in a call, every later call repeats it exactly.
        for c in v.calls:
            for key in ("symptoms", "current_symptoms"):
                val = c.params.get(key)
                if isinstance(val, str) and val.strip():
                    return val
        # After clarifying questions, the answers hold the symptoms; the vague opener does not.
        answers = [
            c.result
            for c in self.follow_ups(v)
            if c.ok and isinstance(c.result, str) and not is_dont_know(c.result)
        ]
        return condense_symptoms(" ".join(answers) if answers else v.text)

    def schedule_index(self, v: View) -> int | None:
        """The call that asked when the user is free: the first question after the clarifying
        ones and before the first search."""
        search = _first(v.calls, SEARCH)
        end = search if search is not None else len(v.calls)
        return _first(v.calls[:end], INPUT, start=len(self.follow_ups(v)))

    def schedule(self, v: View) -> Schedule:
        """When the user is free, by the documented conventions (no answer: tomorrow)."""
        i = self.schedule_index(v)
        answer = v.calls[i].result if i is not None else ""
        return parse_schedule(answer if isinstance(answer, str) else "", v.now)

    def messages(self, v: View) -> list[str]:
        """The user's own descriptions: the opener and each useful clarifying answer."""
        answers = [
            c.result
            for c in self.follow_ups(v)
            if c.ok and isinstance(c.result, str) and not is_dont_know(c.result)
        ]
        return [v.text, *answers]

    def scores(
        self, v: View, prior: Mapping[str, float] | None = None
    ) -> tuple[list[tuple[str, float]], bool]:
        """(specialties by descending probability, vague) of the whole complaint so far."""
        return scores(self.triage, self.messages(v), prior)

    def settle(self, v: View) -> tuple[str, bool]:
        """(specialty to search, unsure): the best specialty with the person's similar past
        complaints as a prior, or a general physician when the evidence stays weak or split
        after the clarifying questions (unsure=True: the user is told so)."""
        past_i = _last(v.calls, PAST)
        past = v.calls[past_i].result if past_i is not None else None
        ranked, vague = self.scores(v, past_prior(self.triage, past))
        best = ranked[0][0]
        if best != GP and (vague or weak(ranked)):
            return GP, True
        return best, False

    def specialization(self, v: View) -> str:
        return self.settle(v)[0]

    @staticmethod
    def flagged_at(v: View, flag: Callable[[str], object]) -> int | None:
        """Where the first message `flag` finds something in came: 0 for the opener, i + 1 for
        the answer of call i (the calls from there on are the red-flag route's); None without
        one."""
        if flag(v.text):
            return 0
        for i, c in enumerate(v.calls):
            if c.tool == INPUT and isinstance(c.result, str) and flag(c.result):
                return i + 1
        return None

    # --- the next step ----------------------------------------------------------------------

    def next(self, v: View, *, yes_no: Callable[[str], YesNo] = read_yes_no) -> Plan:
        calls = v.calls
        uid = v.user_id
        symptoms = self.symptoms(v)

        since = self.flagged_at(v, crisis)
        if since is not None:
            return step.wrap_up(
                v,
                symptoms,
                CRISIS_MESSAGE,
                "The user wrote about suicide or self-harm: no routine booking; tell them "
                "where to get help now.",
                since=since,
            )
        since = self.flagged_at(v, emergency)
        if since is not None:
            watch = uid in self.watch_wearers
            return step.wrap_up(
                v,
                symptoms,
                EMERGENCY_MESSAGE_WATCH if watch else EMERGENCY_MESSAGE,
                "The user described a 999 red flag: no routine booking; tell them to call 999"
                + (" or press SOS" if watch else "")
                + " now.",
                since=since,
            )
        if any(c.tool == INPUT and not c.ok for c in calls):
            return step.wrap_up(v, symptoms, NO_ANSWER_MESSAGE, "The user did not answer.")

        fups = self.follow_ups(v)
        n_f = len(fups)
        search_idx = [i for i, c in enumerate(calls) if c.tool == SEARCH]
        past_i = _last(calls, PAST)

        if past_i is None and not search_idx:
            complaint = self.complaint(v)
            ranked, vague = self.scores(v)
            spec, confidence = ranked[0]
            gave_up = (
                bool(fups) and isinstance(fups[-1].result, str) and is_dont_know(fups[-1].result)
            )
            short = n_f == 0 and len(v.text.split()) <= SHORT_OPENER_WORDS
            # An area named and nothing about it, or a referral with no reason: ask.
            ask_first = (short and bool(AREA_ONLY.match(v.text.casefold()))) or (
                n_f == 0 and bool(REFERRAL_ONLY.search(v.text.casefold()))
            )
            unsure = confidence < self.settle_confidence
            # Weak or split evidence is asked about once, whatever the opener's length.
            split = n_f == 0 and spec != GP and weak(ranked)
            unsettled = (
                vague
                or split
                or ask_first
                or (n_f > 0 and unsure)
                or (short and (unsure or spec == GP))
            )
            if unsettled and n_f < self.max_follow_ups and not gave_up:
                asked = [str(c.params.get("questions", "")) for c in fups]
                q = self.triage.follow_up(complaint, asked)
                if q:
                    return step.ask_follow_up(uid, q)
            return step.check_past(uid, symptoms)

        # When is the user free? The first question after the clarifying ones.
        if not search_idx and self.schedule_index(v) is None:
            return step.ask_schedule(uid, SCHEDULE_QUESTION)
        schedule = self.schedule(v)
        spec, unsure = self.settle(v)

        def search(specialization: str, reason: str) -> Plan:
            return step.search(specialization, reason, symptoms, schedule)

        if not search_idx:
            why = f"The symptoms ({symptoms}) fit {step.a_an(spec)}."
            if unsure:
                why = (
                    f"The symptoms ({symptoms}) do not point clearly to one kind of specialist; "
                    "a general physician can assess them and refer on."
                )
            elif spec == GP:
                why = f"The symptoms ({symptoms}) are best seen first by a general physician."
            return search(spec, why)

        last_s = search_idx[-1]
        found = calls[last_s]
        chosen = str(found.params.get("specialization") or spec)
        offer = offer_from(found.result) if found.ok else None
        if offer is None:
            tried = {str(calls[i].params.get("specialization")) for i in search_idx}
            if GP not in tried and len(search_idx) < self.max_searches:
                return search(
                    GP, f"No {chosen} is free; a general physician can see the user first."
                )
            return step.wrap_up(
                v, symptoms, NO_SLOT_MESSAGE, "No specialist has a free slot.", spec=chosen
            )

        sid, name, start, end = offer
        slot = slot_text(start, end)
        after = calls[last_s + 1 :]
        offers = [c for c in after if c.tool == INPUT]
        if not offers:
            question = offer_question(name, start, unsure=unsure and chosen == GP)
            return step.offer(uid, name, start, question, chosen)
        last_answer = offers[-1].result if isinstance(offers[-1].result, str) else ""
        decision = yes_no(last_answer)
        if decision == "unclear" and len(offers) < 2:
            return step.reoffer(uid, name, start, reoffer_question(name, start), chosen)
        if decision != "yes":
            return step.wrap_up(
                v,
                symptoms,
                DECLINED_MESSAGE,
                "The user declined; keep the symptoms for later.",
                spec=chosen,
                since=last_s,
            )

        conf = [c for c in after if c.tool in (CONFIRM, BOOK)]
        if not conf:
            return step.confirm(uid, sid, slot, chosen)
        if not conf[-1].ok:
            if len(search_idx) < self.max_searches:
                return search(chosen, "That slot was just taken; look for the next free one.")
            return step.wrap_up(
                v, symptoms, NO_SLOT_MESSAGE, "No slot could be booked.", spec=chosen
            )
        if not any(c.tool == SAVE for c in after):
            return step.save(uid, symptoms, sid, slot, chosen)
        return step.wrap_up(
            v,
            symptoms,
            booked_message(name, start),
            "The appointment is saved; keep the symptoms.",
            spec=chosen,
            since=last_s,
            facts=(name, f"{start:%H:%M}", str(start.day), "booked"),
        )
