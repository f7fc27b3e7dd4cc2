"""Daily report from what the gateway stored: readings over MQTT, a soft SOS, then the report
(announced on the events topic) and the same through `healthgw report`."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from agents.reports.daily import DailyReports
from gateway.api.server import create_app
from gateway.contract.topics import vitals_topic
from healthgw.cli import main
from tests.brokers import Broker
from tests.harness import ADMIN, FAMILY, ROOT, device, make_settings, publish, running, watching

pytestmark = pytest.mark.integration


async def test_report_from_stored_day(
    tmp_path: Path, broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    s = make_settings(tmp_path / "data", broker, None)
    tz = ZoneInfo("Europe/London")
    now = time.time()
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        gw = asm.gateway
        for i in range(6):
            await publish(dev, vitals_topic("dad", "watch-jon"),
                          {"ts": now - 60 + i * 5, "seq": i, "heart_rate": 70 + i, "spo2": 97,
                           "sleep": {"deep": 2, "light": 3, "rem": 0, "awake": 0}})  # fmt: skip
        for _ in range(50):
            gw.store.flush()
            if len(gw.store.readings("dad")) >= 6:
                break
            await asyncio.sleep(0.1)
        reports = DailyReports(
            gw.store, gw.household, s.data_dir, gw.clock, doses=gw.db, emit=gw.emit
        )
        day = datetime.fromtimestamp(now, tz).date()
        report = await reports.make("dad", day)
        assert report["readings"] >= 6
        hr = report["vitals"]["heart_rate"]
        assert (hr["min"], hr["max"]) == (70, 75)
        page = await asyncio.to_thread(Path(report["files"]["html"]).read_text)
        assert page.lower().startswith("<!doctype html>")
        # The watch's stage minutes, as a night: 6 readings of 5 minutes asleep each.
        assert report["sleep"]["total_minutes"] == 30.0
        assert report["sleep"]["stages"] == {"deep": 12.0, "light": 18.0, "rem": 0.0, "awake": 0.0}
        assert "In all 30 min asleep (deep 12 min, light 18 min)" in page
        assert reports.list("dad") == [day.isoformat()]
        ready = await w.wait(lambda: w.events("report_ready"))
        assert ready[0]["day"] == day.isoformat()
        # Every evening at HEALTHGW_REPORT_TIME, per person.
        job = asm.meds.scheduler.get_job("report:dad")
        assert job is not None and job.next_run_time.astimezone(tz).strftime("%H:%M") == "20:00"
        # Over the API: make, list and read (the family may read).
        app = create_app(gw.api, admin_token=ADMIN, family_tokens=[FAMILY])
        adm = {"Authorization": f"Bearer {ADMIN}"}
        fam = {"Authorization": f"Bearer {FAMILY}"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub"
        ) as c:
            assert (await c.post(f"/v1/persons/dad/reports/{day}", headers=fam)).status_code == 403
            made = (await c.post(f"/v1/persons/dad/reports/{day}", headers=adm)).json()
            # The hub's reports are built in a child process, off the event loop's GIL
            # (agents/reports/process.py), which stops once no report waits.
            worker = gw.reports._process[0]  # type: ignore[union-attr]
            assert worker.builds == 1 and worker._pool is None
            assert made["vitals"]["heart_rate"]["max"] == 75
            assert (await c.get("/v1/persons/dad/reports", headers=fam)).json() == [day.isoformat()]
            page = await c.get(f"/v1/persons/dad/reports/{day}", headers=fam)
            assert page.status_code == 200 and "text/html" in page.headers["content-type"]
            assert (
                await c.get("/v1/persons/dad/reports/2020-01-01", headers=fam)
            ).status_code == 404
            # The same report as data, for the console: its numbers and the very chart dict
            # its PNGs were drawn from (kept beside it), both readable by family.
            view = (await c.get(f"/v1/persons/dad/reports/{day}/data", headers=fam)).json()
            assert view["report"]["vitals"]["heart_rate"]["max"] == 75
            kept = json.loads(await asyncio.to_thread(Path(made["files"]["charts"]).read_text))
            assert view["charts"] == kept
            hr_points = [v for _, v in view["charts"]["series"]["heart_rate"]["points"]]
            assert hr_points[-6:] == [70, 71, 72, 73, 74, 75]
            assert view["charts"]["series"]["heart_rate"]["normal"] is not None
            assert (
                await c.get("/v1/persons/dad/reports/2020-01-01/data", headers=fam)
            ).status_code == 404
            # A report kept before charts.json was: its charts are computed again.
            await asyncio.to_thread(Path(made["files"]["charts"]).unlink)
            again = (await c.get(f"/v1/persons/dad/reports/{day}/data", headers=fam)).json()
            assert (
                again["charts"]["series"]["heart_rate"]["points"]
                == kept["series"]["heart_rate"]["points"]
            )
    # The CLI, from the same data folder, with no broker.
    rc = await asyncio.to_thread(main, ["report", "dad", "--date", day.isoformat(), "--data-dir", str(s.data_dir),
               "--household", str(ROOT / "examples" / "household.yaml"), "--json"])  # fmt: skip
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["vitals"]["heart_rate"]["n"] >= 6
    assert await asyncio.to_thread(main, ["report", "nobody", "--data-dir", str(s.data_dir),
                 "--household", str(ROOT / "examples" / "household.yaml")]) == 2  # fmt: skip


async def test_alerts_from_a_watch_a_day_behind_count_in_the_day_of_its_readings(
    tmp_path: Path, broker: Broker
) -> None:
    """A watch whose clock is a day behind (or that replays yesterday at real pace) streams
    in real time: the monitor treats it as live, so its soft SOS is stored today. The report
    of the day the readings belong to counts it (issue 14: it said "Soft SOS 0")."""
    s = make_settings(tmp_path / "data", broker, None)
    tz = ZoneInfo("Europe/London")
    behind = 86_400.0
    async with watching(broker) as w, running(s) as asm, device(broker) as dev:
        gw = asm.gateway
        topic = vitals_topic("dad", "watch-jon")
        vitals = [(97, 72)] * 4 + [(86, 104), (85, 106), (86, 108), (85, 108)]
        first = time.time() - behind
        for i, (spo2, hr) in enumerate(vitals):
            # The watch's own clock, read when it sends: its pace is the wall clock's.
            await publish(dev, topic, {"ts": time.time() - behind, "seq": i, "spo2": spo2,
                                       "heart_rate": hr, "steps": 0})  # fmt: skip
            await asyncio.sleep(0.5)
        soft = await w.wait(lambda: w.events("soft_sos"))
        assert soft[0]["retrospective"] is False  # judged live: stored with today's time
        assert soft[0]["reading_ts"] < time.time() - behind + 60
        for _ in range(50):
            gw.store.flush()
            if gw.store.events(person="dad", types=["soft_sos"]):
                break
            await asyncio.sleep(0.1)
        stored = gw.store.events(person="dad", types=["soft_sos"])
        assert stored and _day(stored[0]["ts"], tz) == datetime.now(tz).date()
        reports = DailyReports(gw.store, gw.household, s.data_dir, gw.clock, doses=gw.db)
        day = datetime.fromtimestamp(first, tz).date()
        report = await reports.make("dad", day)
        assert report["sos"]["soft"]["count"] == len(stored) >= 1
        assert report["events"]["soft_sos"] == len(stored)
        # ...and the day it was stored does not count it again.
        today = await reports.make("dad", datetime.now(tz).date())
        assert today["sos"]["soft"]["count"] == 0
        page = await asyncio.to_thread(Path(report["files"]["html"]).read_text)
        assert f"soft SOS {len(stored)}" in page


def _day(ts: str, tz: ZoneInfo) -> object:
    from gateway.contract.topics import parse_ts

    return datetime.fromtimestamp(parse_ts(ts), tz).date()
