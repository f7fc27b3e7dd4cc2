"""The API keeps its OpenAPI contract under a fuzzer: schemathesis (every check, the stateful
phase over the document's links included) against the live gateway (`healthgw run` over a
private mosquitto, texting a local Twilio-compatible sink) over real HTTP, once as the admin
and once as a family member. Derandomized (fixed seed), bounded in examples per operation.

Pressing SOS is fair game here: the texts go to the local sink, nowhere else."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import schemathesis
from schemathesis.engine import Status, events, from_schema

from tests.gateway.api.gateway_process import LiveGateway, live_gateway
from tests.harness import ADMIN, FAMILY
from tests.phi_scan import findings

pytestmark = [pytest.mark.fuzz, pytest.mark.integration]

SEED = 20261125
MAX_EXAMPLES = 12  # per operation and phase: ~25 s a role on 2 cores
TOKENS = {"admin": ADMIN, "family": FAMILY}


@dataclass
class Outcome:
    operations: set[str] = field(default_factory=set)
    cases: Counter[str] = field(default_factory=Counter)  # per phase
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    links: int = 0  # the document's OpenAPI links: the stateful phase's transitions


def fuzz(base_url: str, token: str) -> Outcome:
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "headers": {"Authorization": f"Bearer {token}"},
            "cache": {"enabled": False},  # nothing left in the checkout
            "request-timeout": 30,
            "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none"},
        }
    )
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json", config=config)
    out = Outcome(links=schema.statistic.transitions.total)
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            rec = event.recorder
            if event.phase.value != "stateful":
                out.operations.add(rec.label)
            out.cases[event.phase.value] += len(rec.cases)
            for interaction in rec.interactions.values():
                if interaction.response is not None:
                    out.statuses[interaction.response.status_code] += 1
            for checks in rec.checks.values():
                for check in checks:
                    if check.failure_info is not None:
                        f = check.failure_info.failure
                        sample = check.failure_info.code_sample.replace(token, "[token]")
                        out.failures.append(f"{rec.label}: {check.name}: {f.title}\n{sample}")
            if event.status == Status.ERROR:
                out.errors.append(f"{rec.label}: error")
        elif isinstance(event, events.NonFatalError | events.FatalError):
            out.errors.append(repr(event))
    return out


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    work = tmp_path_factory.mktemp("fuzz")
    # Rate limits stay on (the guard is in the path of every request), high enough that
    # the fuzzer measures the contract, not the limiter.
    with live_gateway(work, HEALTHGW_API_RATE_LIMIT="100000/minute") as gw:
        yield gw


@pytest.mark.parametrize("role", ["admin", "family"])
def test_the_live_api_keeps_its_openapi_contract(gateway: LiveGateway, role: str) -> None:
    started = time.monotonic()
    out = fuzz(gateway.base_url, TOKENS[role])
    took = time.monotonic() - started
    print(
        f"\nschemathesis as {role}: {len(out.operations)} operations, {out.links} links, "
        f"{sum(out.cases.values())} cases {dict(out.cases)}, statuses {dict(sorted(out.statuses.items()))}, "
        f"{len(out.failures)} failures, {len(out.errors)} errors, {took:.1f} s; "
        f"texts at the local sink so far: {len(gateway.sink.messages)}"
    )
    assert not out.errors, out.errors[:5]
    assert not out.failures, "\n\n".join(out.failures[:10])
    # It really ran: every operation, every phase, the stateful one over the links.
    assert len(out.operations) >= 29, sorted(out.operations)
    assert out.links >= 15
    for phase in ("examples", "coverage", "fuzzing", "stateful"):
        assert out.cases[phase] > 0, (phase, dict(out.cases))
    assert out.statuses[200] > 0 and out.statuses[404] > 0
    if role == "family":
        assert out.statuses[403] > 0  # the admin-only routes refused
    # The live gateway's own log (INFO, the default) after all that: no PHI.
    hits = [
        f for line in gateway.log.read_text(errors="replace").splitlines() for f in findings(line)
    ]
    assert not hits, hits[:10]
