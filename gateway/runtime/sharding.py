"""Scale-out by person (docs/scale-out.md): each gateway instance handles some persons.

`HEALTHGW_SHARD=i/N` gives instance i the persons whose stable hash picks shard i of N;
`HEALTHGW_SHARD_PERSONS=a,b` names them instead. The instance then:
- keeps only its persons of the household file (so the monitor, the store, the API's person
  lists, Home Assistant discovery, reports and reminders all see only them);
- subscribes to its persons' topics only (the contract's subscriptions with the person filled
  in), so one person's messages always reach the same instance on any MQTT broker;
- drops and counts a message for someone else's person that still arrives (a subscription a
  persistent session kept from before a re-shard, a broker that widens filters).

The hash is rendezvous (highest random weight) over SHA-256, never Python's salted hash():
every instance and every restart agrees, and going from N to N+1 instances moves only about
1/(N+1) of the persons, all of them to the new instance.
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.base.errors import ConfigError
from gateway.base.settings import Settings
from gateway.contract.topics import GATEWAY_SUBSCRIPTIONS
from gateway.household.model import Household

# Whatever the gateway's handler returns (e.g. a task the link waits on before it acks).
MessageHandler = Callable[[str, bytes], Awaitable[Any]]
_WILD_PERSON = "health/+/"


def shard_of(person: str, count: int) -> int:
    """The shard (0..count-1) that owns `person`: the highest SHA-256 weight wins. A
    weight depends on the shard and the person only, so adding a shard moves a person only
    to the new one."""
    if count < 1:
        raise ValueError("the shard count must be at least 1")
    best, best_w = 0, -1
    for i in range(count):
        digest = hashlib.sha256(f"{i}/{person}".encode()).digest()
        w = int.from_bytes(digest[:8], "big")
        if w > best_w:
            best, best_w = i, w
    return best


def person_subscriptions(persons: Iterable[str]) -> list[str]:
    """The contract's gateway subscriptions with the person segment filled in, per person."""
    subs: list[str] = []
    for p in persons:
        for topic in GATEWAY_SUBSCRIPTIONS:
            # Every inbound topic is health/{person}/...: a new kind cannot be missed silently.
            if not topic.startswith(_WILD_PERSON):
                raise ValueError("a gateway subscription is not per person")
            subs.append(f"health/{p}/{topic[len(_WILD_PERSON) :]}")
    return subs


def topic_person(topic: str) -> str | None:
    """The person segment of a health/{person}/... topic; None for any other topic."""
    parts = topic.split("/", 2)
    return parts[1] if len(parts) >= 2 and parts[0] == "health" else None


@dataclass
class Shard:
    """One instance's share: the rule (`index`/`count`, or `listed`) and, once applied to a
    household, its persons, the others' persons and the subscriptions."""

    index: int | None = None
    count: int | None = None
    listed: frozenset[str] | None = None
    persons: tuple[str, ...] = ()
    others: frozenset[str] = frozenset()
    subscriptions: tuple[str, ...] = ()
    foreign: int = 0  # messages for another instance's person, dropped

    @property
    def label(self) -> str:
        if self.listed is not None:
            return f"list of {len(self.listed)}"
        return f"{self.index}/{self.count}"

    def owns(self, person: str) -> bool:
        if self.listed is not None:
            return person in self.listed
        assert self.index is not None and self.count is not None
        return shard_of(person, self.count) == self.index

    def apply(self, household: Household) -> Household:
        """This instance's part of the household; refuses an empty one or a listed person
        who is not in the file (a typo would leave that person unmonitored)."""
        mine = [p for p in household.persons if self.owns(p.id)]
        if self.listed is not None:
            missing = self.listed - {p.id for p in household.persons}
            if missing:
                raise ConfigError(
                    "HEALTHGW_SHARD_PERSONS names persons who are not in the household file: "
                    + ", ".join(sorted(missing))
                )
        if not mine:
            raise ConfigError(
                f"shard {self.label} has none of the household's {len(household.persons)} "
                "persons: use fewer instances or another shard"
            )
        self.persons = tuple(p.id for p in mine)
        self.others = frozenset(p.id for p in household.persons) - set(self.persons)
        self.subscriptions = tuple(person_subscriptions(self.persons))
        # Validated again (not model_copy): the derived `by_id` must be rebuilt for the subset.
        return Household.model_validate(
            {
                "timezone": household.timezone,
                "persons": mine,
                "ambulances": household.ambulances,
                "specialists": household.specialists,
            }
        )

    def guard(self, handler: MessageHandler) -> MessageHandler:
        """`handler` for this shard's persons; another instance's person is counted, dropped."""
        mine = frozenset(self.persons)

        async def guarded(topic: str, payload: bytes) -> Any:
            person = topic_person(topic)
            if person is None or person in mine or self.owns(person):
                # Unknown persons of this shard go on: the validator rejects them as usual.
                return await handler(topic, payload)
            self.foreign += 1
            return None

        return guarded

    def stats(self) -> dict[str, Any]:
        return {
            "shard": self.label,
            "persons": len(self.persons),
            "other_persons": len(self.others),
            "subscriptions": len(self.subscriptions),
            "foreign_dropped": self.foreign,
        }


def from_settings(settings: Settings) -> Shard | None:
    """The shard the settings ask for; None when this instance handles everyone."""
    if settings.shard_persons:
        return Shard(listed=frozenset(settings.shard_persons))
    if settings.shard is not None:
        i, n = (int(x) for x in settings.shard.split("/"))
        return Shard(index=i, count=n)
    return None


def plan(persons: Sequence[str], count: int) -> dict[int, list[str]]:
    """Which persons each of `count` instances gets (for planning and the docs)."""
    out: dict[int, list[str]] = {i: [] for i in range(count)}
    for p in persons:
        out[shard_of(p, count)].append(p)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m gateway.runtime.sharding HOUSEHOLD N`: the persons of each of N shards."""
    from gateway.household.model import load_household

    ap = argparse.ArgumentParser(
        prog="python -m gateway.runtime.sharding", description=main.__doc__
    )
    ap.add_argument("household")
    ap.add_argument("count", type=int)
    args = ap.parse_args(argv)
    if args.count < 1:
        ap.error("count must be at least 1")
    hh = load_household(args.household)
    for i, persons in plan([p.id for p in hh.persons], args.count).items():
        print(f"HEALTHGW_SHARD={i}/{args.count}\t{len(persons)}\t{','.join(persons)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
