"""Scale-out by person (docs/scale-out.md): HEALTHGW_SHARD=i/N or HEALTHGW_SHARD_PERSONS.

The rule (a stable hash, settings errors), and two real `healthgw run` processes on one
mosquitto: every reading processed exactly once, each shard's SOS texted once by its own
instance through the real twilio SDK, each /metrics and person list showing only its persons,
and an instance that dies marked offline by its last will while its persons' readings wait in
the broker for it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from pydantic import ValidationError

from gateway.base.errors import ConfigError
from gateway.base.settings import Settings
from gateway.contract.topics import GATEWAY_SUBSCRIPTIONS, parse_topic, sos_topic, vitals_topic
from gateway.household.model import load_household
from gateway.runtime.sharding import Shard, from_settings, plan, shard_of
from simulators.sms_sink import SmsSink
from tests.brokers import Broker, free_port, stop_process
from tests.harness import ADMIN, ROOT, device, gateway_process_env, publish, spawn_gateway, watching

EXAMPLE = ROOT / "examples" / "household.yaml"
FROM = ("+15005550006", "+15005550007")  # one sender number per instance: who texted what


# --- the rule -------------------------------------------------------------------------------


def test_the_hash_is_sha256_rendezvous_not_pythons_salted_hash() -> None:
    def expected(person: str, n: int) -> int:
        weights = [hashlib.sha256(f"{i}/{person}".encode()).digest()[:8] for i in range(n)]
        return max(range(n), key=lambda i: weights[i])

    ids = [f"resident-{k}" for k in range(300)]
    for n in (1, 2, 3, 5, 8):
        assert [shard_of(p, n) for p in ids] == [expected(p, n) for p in ids]
    # Another interpreter with another hash seed agrees.
    code = "from gateway.runtime.sharding import shard_of; print([shard_of(f'resident-{k}', 3) for k in range(300)])"
    other = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(other.stdout) == [shard_of(p, 3) for p in ids]


def test_every_person_has_exactly_one_shard_and_a_new_shard_moves_few() -> None:
    ids = [f"resident-{k}" for k in range(2000)]
    for n in (2, 3, 4):
        parts = plan(ids, n)
        assert sorted(p for ps in parts.values() for p in ps) == sorted(ids)
        sizes = [len(ps) for ps in parts.values()]
        print(json.dumps({"shards": n, "sizes": sizes}))
        assert min(sizes) > len(ids) / n * 0.8  # roughly even
    # Rendezvous: going from 3 to 4 instances moves persons only to the new one, about 1/4.
    moved = [p for p in ids if shard_of(p, 3) != shard_of(p, 4)]
    assert all(shard_of(p, 4) == 3 for p in moved)
    print(json.dumps({"moved_3_to_4": len(moved), "of": len(ids)}))
    assert len(moved) < len(ids) * 0.35


def test_subscriptions_are_the_contracts_per_person() -> None:
    hh = load_household(EXAMPLE)
    shard = Shard(listed=frozenset({"dad"}))
    mine = shard.apply(hh)
    assert [p.id for p in mine.persons] == ["dad"] and shard.others == {"grandma"}
    assert len(shard.subscriptions) == len(GATEWAY_SUBSCRIPTIONS)
    for sub in shard.subscriptions:
        concrete = sub.replace("+", "watch-jon")
        parsed = parse_topic(concrete)
        assert parsed is not None and parsed.person == "dad", sub
    assert vitals_topic("dad", "watch-jon").replace("watch-jon", "+") in shard.subscriptions


def test_a_listed_person_missing_from_the_household_or_an_empty_shard_refuses_to_start() -> None:
    hh = load_household(EXAMPLE)
    with pytest.raises(ConfigError, match="not in the household"):
        Shard(listed=frozenset({"dad", "uncle-typo"})).apply(hh)
    n = 64  # two persons cannot fill 64 shards
    empty = next(i for i in range(n) if not any(shard_of(p.id, n) == i for p in hh.persons))
    with pytest.raises(ConfigError, match="none of the household"):
        Shard(index=empty, count=n).apply(hh)


@pytest.mark.parametrize(
    "env,needle",
    [
        ({"shard": "2/2", "gateway_id": "a"}, "shard"),
        ({"shard": "hunter2-secret", "gateway_id": "a"}, "shard"),
        ({"shard": "0/0", "gateway_id": "a"}, "shard"),
        ({"shard": "١/٢", "gateway_id": "a"}, "shard"),  # non-ASCII digits
        ({"shard_persons": "dad,hunter2 secret", "gateway_id": "a"}, "shard_persons"),
        ({"shard_persons": "dad,dad", "gateway_id": "a"}, "twice"),
        ({"shard": "0/2", "shard_persons": "dad", "gateway_id": "a"}, "not both"),
        ({"shard": "0/2"}, "HEALTHGW_GATEWAY_ID"),
    ],
)
def test_bad_shard_settings_are_named_never_echoed(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ValidationError) as e:
        Settings(**env)  # type: ignore[arg-type]
    assert needle in str(e.value)
    assert "hunter2" not in str(e.value)


def test_good_shard_settings() -> None:
    s = Settings(shard=" 1/3 ", gateway_id="hub-1")  # type: ignore[call-arg]
    shard = from_settings(s)
    assert shard is not None and (shard.index, shard.count) == (1, 3)
    listed = from_settings(Settings(shard_persons="a, b", gateway_id="hub-a"))  # type: ignore[arg-type]
    assert listed is not None and listed.listed == {"a", "b"}
    assert from_settings(Settings()) is None


# --- two real instances on one broker -------------------------------------------------------


def _household(path: Path, n: int) -> list[str]:
    """n residents, each with a watch and one contact; ids chosen so both of 2 shards get
    at least two."""
    base = yaml.safe_load(EXAMPLE.read_text())
    template = base["persons"][0]
    k = 0
    while True:
        ids = [f"res-{k}-{i}" for i in range(n)]
        if all(len(ps) >= 2 for ps in plan(ids, 2).values()):
            break
        k += 1
    persons = []
    for i, pid in enumerate(ids):
        persons.append(
            {
                **{f: template[f] for f in ("birth_date", "sex", "location")},
                "id": pid,
                "name": f"Resident {i}",
                "devices": [{"id": f"w-{pid}", "interval_s": 600}],
                "emergency_contacts": [{"name": f"Kin {i}", "phone": f"+4477009003{i:02d}"}],
            }
        )
    path.write_text(yaml.safe_dump({**base, "persons": persons}))
    return ids


def _env(tmp: Path, broker: Broker, sink: SmsSink, household: Path, i: int) -> dict[str, str]:
    return gateway_process_env(
        tmp / f"data-{i}",
        broker.url,
        sms_url=sink.url,
        sms_from=FROM[i],
        household=household,
        gateway_id=f"shard-{i}",
        HEALTHGW_SHARD=f"{i}/2",
    )


async def _ready(url: str, within: float = 60) -> None:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient() as c:
        while True:
            try:
                if (await c.get(f"{url}/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass  # not listening yet
            assert time.monotonic() < deadline, f"{url} never became ready"
            await asyncio.sleep(0.2)


def _metric(text: str, name: str) -> float:
    m = re.search(rf"(?m)^{re.escape(name)} (\S+)$", text)
    assert m, name
    return float(m.group(1))


def _stored(data: Path) -> dict[str, int]:
    with sqlite3.connect(data / "healthgw.db") as db:
        rows = db.execute("SELECT person, count(*) FROM readings GROUP BY person").fetchall()
    return {str(p): int(n) for p, n in rows}


@pytest.fixture
def sink() -> Iterator[SmsSink]:
    with SmsSink() as s:
        yield s


@pytest.mark.integration
async def test_two_instances_process_each_reading_once_and_text_each_sos_once(
    tmp_path: Path, broker: Broker, sink: SmsSink
) -> None:
    household = tmp_path / "household.yaml"
    ids = _household(household, 8)
    shards = plan(ids, 2)
    envs = [_env(tmp_path, broker, sink, household, i) for i in (0, 1)]
    logs = [tmp_path / f"gw-{i}.log" for i in (0, 1)]
    procs: list[subprocess.Popen[bytes] | None] = [
        spawn_gateway(e, lg) for e, lg in zip(envs, logs, strict=True)
    ]
    per_person = 10
    t0 = time.monotonic()
    try:
        async with watching(broker) as w, device(broker, "care-home-watches") as dev:
            for e in envs:  # ready: subscribed ("online" is published just before that)
                await _ready(f"http://127.0.0.1:{e['HEALTHGW_API_PORT']}")
            started_s = time.monotonic() - t0
            for k in range(per_person):
                for pid in ids:
                    body = {"ts": time.time(), "seq": k, "heart_rate": 70 + k, "spo2": 97}
                    await publish(dev, vitals_topic(pid, f"w-{pid}"), body)
            # One SOS in each shard.
            sos = {i: shards[i][0] for i in (0, 1)}
            for pid in sos.values():
                await publish(
                    dev, sos_topic(pid, f"w-{pid}"), {"action": "start", "ts": time.time()}
                )
            texts = await asyncio.to_thread(sink.wait_for, 4, 20)  # ambulance + 1 contact each
            await asyncio.sleep(1.5)  # a double would show up now
            assert len(sink.messages) == 4, [m.to for m in texts]
            for i, pid in sos.items():
                contact = f"+4477009003{ids.index(pid):02d}"
                to_contact = [m for m in sink.messages if m.to == contact]
                assert len(to_contact) == 1 and to_contact[0].from_ == FROM[i]
                assert sum(1 for m in sink.messages if m.from_ == FROM[i]) == 2
            assert len(w.events("hard_sos")) == 2

            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ADMIN}"}) as c:
                urls = [f"http://127.0.0.1:{e['HEALTHGW_API_PORT']}" for e in envs]
                for i, url in enumerate(urls):
                    want = per_person * len(shards[i])
                    deadline = time.monotonic() + 20
                    while True:
                        text = (await c.get(f"{url}/metrics")).text
                        got = _metric(text, 'healthgw_messages_total{kind="readings"}')
                        if got >= want or time.monotonic() > deadline:
                            break
                        await asyncio.sleep(0.2)
                    assert got == want
                    assert _metric(text, "healthgw_persons") == len(shards[i])
                    assert _metric(text, f'healthgw_shard_info{{shard="{i}/2"}}') == 1
                    assert _metric(text, "healthgw_shard_foreign_messages_total") == 0
                    assert not any(pid in text for pid in ids)  # counts only, no person labels
                    people = (await c.get(f"{url}/v1/persons")).json()
                    assert sorted(p["id"] for p in people) == sorted(shards[i])
                    devices = (await c.get(f"{url}/v1/devices")).json()
                    assert {d["person"] for d in devices} == set(shards[i])
                    assert (await c.get(f"{url}/readyz")).status_code == 200

                # Instance 1 dies without a goodbye: its last will marks it offline (retained),
                # and instance 0 carries on with its own persons only.
                p1 = procs[1]
                assert p1 is not None
                p1.send_signal(signal.SIGKILL)
                p1.wait(10)
                procs[1] = None
                await w.wait(lambda: ("gateway/shard-1/status", "offline") in w.messages)
                late = {i: shards[i][1] for i in (0, 1)}
                for pid in late.values():
                    body = {"ts": time.time(), "seq": 99, "heart_rate": 66, "spo2": 98}
                    await publish(dev, vitals_topic(pid, f"w-{pid}"), body)
                want0 = per_person * len(shards[0]) + 1
                deadline = time.monotonic() + 10
                while _metric((await c.get(f"{urls[0]}/metrics")).text,
                              'healthgw_messages_total{kind="readings"}') < want0:  # fmt: skip
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.2)
                # Back: its persistent session kept its person's reading while it was away.
                envs[1]["HEALTHGW_API_PORT"] = str(free_port())
                procs[1] = spawn_gateway(envs[1], logs[1])
                url1 = f"http://127.0.0.1:{envs[1]['HEALTHGW_API_PORT']}"
                await _ready(url1)
                deadline = time.monotonic() + 20
                while True:
                    rows = (await c.get(f"{url1}/v1/persons/{late[1]}/readings")).json()
                    if len(rows) == per_person + 1 or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.2)
                assert len(rows) == per_person + 1
    finally:
        for p in procs:
            if p is not None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            stop_process(p, 15)
    stores = [_stored(tmp_path / f"data-{i}") for i in (0, 1)]
    print(json.dumps({"persons": len(ids), "shard_sizes": [len(shards[0]), len(shards[1])],
                      "start_s": round(started_s, 1), "stored": [sum(s.values()) for s in stores]}))  # fmt: skip
    # Exactly once overall: no person in both stores, every published reading in one.
    assert not set(stores[0]) & set(stores[1])
    for i in (0, 1):
        assert set(stores[i]) == set(shards[i])
    assert sum(sum(s.values()) for s in stores) == per_person * len(ids) + 2
    from tests.phi_scan import findings

    names = {f"Resident {i}" for i in range(len(ids))} | {f"Kin {i}" for i in range(len(ids))}
    for lg in logs:
        text = lg.read_text(errors="replace")
        assert "shard " in text and "connected to broker" in text
        hits = [f for line in text.splitlines() for f in findings(line, names)]
        assert not hits, hits[:5]


@pytest.mark.integration
async def test_after_a_reshard_a_stale_wildcard_delivers_others_readings_which_are_dropped(
    tmp_path: Path, broker: Broker
) -> None:
    """The instance ran unsharded first: its persistent broker session still holds the
    wildcard subscriptions. Sharded now, what arrives for someone else's person is counted
    and dropped, and their retained state (the other instance's now) is left alone."""
    from gateway.contract.topics import state_topic
    from tests.gateway.ha.test_gateway_ha import _retained
    from tests.harness import make_settings, running

    data = tmp_path / "data"
    before = make_settings(data, broker, None, gateway_id="hub-a")
    async with running(before) as asm, device(broker, "w1") as dev:
        for pid, dev_id in (("grandma", "watch-maria"), ("dad", "watch-jon")):
            await publish(dev, vitals_topic(pid, dev_id), {"ts": time.time(), "seq": 1,
                                                          "heart_rate": 71, "spo2": 97})  # fmt: skip
        deadline = time.monotonic() + 10
        while asm.gateway.counters["readings"] < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
    assert state_topic("grandma") in await _retained(broker, "health/+/state")

    after = make_settings(data, broker, None, gateway_id="hub-a", shard_persons=["dad"])
    async with running(after) as asm, device(broker, "w2") as dev:
        gw = asm.gateway
        assert [p.id for p in gw.household.persons] == ["dad"]
        for seq in (2, 3):
            for pid, dev_id in (("grandma", "watch-maria"), ("dad", "watch-jon")):
                await publish(dev, vitals_topic(pid, dev_id), {"ts": time.time(), "seq": seq,
                                                              "heart_rate": 72, "spo2": 97})  # fmt: skip
        deadline = time.monotonic() + 10
        while gw.counters["readings"] < 2 or gw.shard.foreign < 2:  # type: ignore[union-attr]
            assert time.monotonic() < deadline, (dict(gw.counters), gw.stats()["shard"])
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        stats = gw.stats()
        assert stats["shard"]["foreign_dropped"] == 2 and gw.counters["readings"] == 2
        assert gw.counters["rejected"] == 0  # dropped before validation: not dead-lettered
        gw.store.flush()
        # Only what it stored before the re-shard (kept until retention prunes it).
        assert [r["seq"] for r in gw.store.readings("grandma", limit=10)] == [1]
        assert sorted(r["seq"] for r in gw.store.readings("dad", limit=10)) == [1, 2, 3]
        retained = await _retained(broker, "#")
        # This hub's Home Assistant entities for grandma are gone; her state is kept.
        assert not any("healthgw_hub-a_grandma/" in t for t in retained)
        assert any("healthgw_hub-a_dad/" in t for t in retained)
        assert state_topic("grandma") in retained
