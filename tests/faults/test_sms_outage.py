"""The SMS provider answers 500s, then hangs past the client's timeout, then recovers.

A real gateway (in-process, real mosquitto) texts through the real twilio SDK over HTTP to a
local Twilio-compatible endpoint (`FaultySms`). An SOS press is made while the endpoint answers
500 to everything; alerts that text the contacts are raised while it accepts texts but never
answers (the client gives up after its 10 s timeout: the text went out, the gateway cannot know);
then it recovers. Checked, per queue row (the "[ref XXXXXX]" marker each body carries):

- nothing lost: every text the gateway queued reached the endpoint and was accepted;
- nothing doubled: each marker was accepted exactly once, also the ones whose create timed
  out after the endpoint had accepted them (the queue asks the provider, by marker, before any
  resend: Twilio's create takes no idempotency key, the marker lookup is the only guard);
- `notification_failed` (permanent: false) on `health/{person}/events` while it lasts;
- recovery is automatic (nobody touches the gateway)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gateway.contract.topics import sos_topic, vitals_topic
from tests.brokers import Broker
from tests.faults.conftest import FaultySms, marker_of, summary, until
from tests.harness import AWAKE, device, make_settings, publish, running, watching

pytestmark = [pytest.mark.faults, pytest.mark.integration]

AMB_WEST, ANA, TOM = "+447700900902", "+447700900201", "+447700900202"
CLIENT_TIMEOUT_S = 10.0  # TwilioSender's default: what "hang past the timeout" must exceed


def failed_events(w: Any) -> list[dict[str, Any]]:
    return [e for e in w.events("notification_failed") if e.get("permanent") is False]


async def test_sms_endpoint_500s_then_hangs_then_recovers(
    tmp_path: Path, broker: Broker, faulty_sms: FaultySms
) -> None:
    sms = faulty_sms
    sms.hold_s = CLIENT_TIMEOUT_S + 1.5
    # Answers that would end the story early (an unanswered prompt becoming a hard SOS, the
    # ladder climbing) are pushed out of the test's window: the texts are the SOS's and the
    # alerts' own.
    s = make_settings(tmp_path / "data", broker, sms, escalation_window_s=600.0)
    t0 = time.monotonic()
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        texts = asm.gateway.texts
        # 1. 500s: an SOS press.
        sms.set_mode("error")
        await publish(dev, sos_topic("dad", "watch-jon"), {"action": "start", "ts": time.time()})
        await w.wait(lambda: w.events("hard_sos"), within=10)
        dad_failed = await until(
            lambda: (
                {e["message_id"] for e in failed_events(w) if e["person"] == "dad"}
                >= {r["id"] for r in texts.messages(person="dad")}
                and texts.messages(person="dad")
            ),
            within=30,
            what="notification_failed for every SOS text while the endpoint answers 500",
        )
        assert sms.messages == []  # nothing was accepted while it answered 500
        # 2. Hang: alerts for grandma text her contacts; each create is accepted, never answered.
        sms.set_mode("hang")
        hang_started = time.monotonic()
        topic = vitals_topic("grandma", "watch-maria")
        base = time.time() - 20
        for i in range(4):  # NEWS2 medium on a watch: the contacts are texted now
            await publish(
                dev, topic, {"ts": base + 5 * i, "seq": i, "heart_rate": 118,
                             "respiratory_rate": 26, "spo2": 90, "sleep": AWAKE},  # any hour
            )  # fmt: skip
        await w.wait(lambda: w.events("soft_sos"), within=15)
        await until(
            lambda: [m for m in sms.messages if sms.accepted_in.get(m.sid) == "hang"],
            within=15,
            what="a text accepted by the hanging endpoint",
        )
        # Every create held now must outlive the client's timeout before the endpoint recovers.
        await until(
            lambda: time.monotonic() - hang_started > sms.hold_s + 0.5,
            within=sms.hold_s + 5,
            what="the hang phase",
        )
        held = [m for m in sms.messages if sms.accepted_in.get(m.sid) == "hang"]
        # 3. Recovery: nobody touches the gateway.
        sms.set_mode("ok")
        recovered_at = time.monotonic()
        await until(
            lambda: texts.messages() and not texts.pending(),
            within=60,
            what="every queued text sent after recovery",
        )
        drained_s = time.monotonic() - recovered_at
        await asyncio.sleep(3.0)  # a late duplicate would land now
        rows = texts.messages()
        accepted = sms.messages

    by_marker = Counter(marker_of(m.body) for m in accepted)
    by_pair = Counter((m.to, m.body) for m in accepted)
    row_markers = {r["marker"] for r in rows}
    sent_events = {e["message_id"]: e for e in w.events("notification_sent")}
    pending_events = w.events("notification_pending")
    reconciled = [e for e in sent_events.values() if e.get("reconciled")]
    recipients = Counter(r["to_phone"] for r in rows)
    print(
        f"texts queued={len(rows)} accepted_at_endpoint={len(accepted)} "
        f"requests={dict(sms.by_mode)} accepted_by_mode={dict(Counter(sms.accepted_in.values()))}"
    )
    print(
        f"events: pending={len(pending_events)} failed={len(failed_events(w))} "
        f"sent={len(sent_events)} sent_after_lookup={len(reconciled)} "
        f"held_creates={len(held)} drain_after_recovery_s={drained_s:.1f}"
    )
    # The queue: every row sent, none permanently failed.
    assert [r["state"] for r in rows] == ["sent"] * len(rows)
    # Nothing lost: each row's marker reached the endpoint and was accepted...
    assert row_markers == set(by_marker), (row_markers, set(by_marker))
    # ... nothing doubled: once per marker, and once per (recipient, body).
    assert max(by_marker.values()) == 1, by_marker
    assert max(by_pair.values()) == 1
    # The texts the story must produce: the SOS's (nearest ambulance, dad's contact) and the
    # alert's (both of grandma's contacts).
    dad_to = {r["to_phone"] for r in rows if r["person"] == "dad"}
    gma_to = {r["to_phone"] for r in rows if r["person"] == "grandma"}
    assert {AMB_WEST, ANA} <= dad_to and {ANA, TOM} <= gma_to, (dad_to, gma_to)
    # While it lasted: notification_failed for the SOS texts; after, one sent event per row.
    assert dad_failed
    assert set(sent_events) == {r["id"] for r in rows}
    # The ambiguous creates (accepted, then timed out) were found by the lookup, not resent.
    held_markers = {marker_of(m.body) for m in held}
    held_rows = {r["id"] for r in rows if r["marker"] in held_markers}
    assert held_rows and held_rows <= {e["message_id"] for e in reconciled}
    assert {e["error_code"] for e in pending_events if e["message_id"] in held_rows} == {"timeout"}
    summary(
        "sms_outage",
        texts=len(rows),
        recipients=len(recipients),
        accepted=len(accepted),
        doubled=sum(n - 1 for n in by_marker.values()),
        lost=len(row_markers - set(by_marker)),
        failed_events=len(failed_events(w)),
        timed_out_but_accepted=len(held),
        found_by_lookup=len(reconciled),
        recovered_in_s=round(drained_s, 1),
        total_s=round(time.monotonic() - t0, 1),
    )
