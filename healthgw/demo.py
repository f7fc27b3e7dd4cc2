"""`healthgw demo`: broker + gateway + watch simulators through one story, live on screen.

A normal morning for the household -> Jon's oxygen falls (hypoxia) -> soft SOS with the
reasons -> Jon presses SOS -> texts to the nearest ambulance and his contacts (through the
offline outbox, printed) -> Jon ends the SOS -> all-clear texts -> grandma tells the assistant
about chest tightness -> it asks, picks a cardiologist, books on "yes" (every agent step
printed) -> summary.

Simulated time runs `--speed` times faster than the wall clock. It starts in the recent past
and catches up with now by the end, so every timestamp stays honest for the gateway."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gateway.base.settings import Settings
from gateway.contract.topics import NotifyPayload, format_ts
from gateway.contract.values import Event
from gateway.household.model import load_household
from simulators.story import Timeline
from simulators.vitals import model_for_person
from simulators.watch import Watch

ROOT = Path(__file__).resolve().parent.parent
HOUSEHOLD = ROOT / "examples" / "household.yaml"
PATIENT = "dad"  # the one whose story it is; grandma stays well (no false alarms)

# (simulated seconds from the start, step)
STORY = [
    (0.0, "normal"),
    (150.0, "hypoxia"),
    (420.0, "sos"),
    (540.0, "sos_end"),
    (560.0, "normal"),
    (580.0, "chat"),
]
STORY_LENGTH_S = 700.0
CHAT_PERSON = "grandma"
CHAT_TEXT = "I've had chest tightness when I climb stairs"
CHAT_ANSWERS = {"free_text": ["Tuesday morning"], "yes_no": ["Yes please"]}

BOLD, DIM, RED, YEL, GRN, CYA, RST = (
    ("\033[1m", "\033[2m", "\033[31m", "\033[33m", "\033[32m", "\033[36m", "\033[0m")
    if sys.stdout.isatty()
    else ("",) * 7
)


def _say(text: str) -> None:
    print(text, flush=True)


def _listening(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), 0.5):
        return True
    return False


@contextlib.contextmanager
def _broker(host: str, port: int, workdir: Path) -> Iterator[None]:
    """Use the broker already listening, or start a private mosquitto for the demo."""
    if _listening(host, port):
        _say(f"{DIM}broker: using the one already on {host}:{port}{RST}")
        yield
        return
    exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not os.path.exists(exe):
        raise SystemExit("healthgw demo: mosquitto is not installed (run `make setup`)")
    workdir.mkdir(parents=True, exist_ok=True)
    conf = workdir / "mosquitto.conf"
    conf.write_text(
        (ROOT / "mosquitto" / "dev.conf").read_text()
        + f"\nlistener {port} {host}\npersistence_location {workdir}/\n"
    )
    proc = subprocess.Popen([exe, "-c", str(conf)], stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if _listening(host, port):
                break
            time.sleep(0.05)
        _say(f"{DIM}broker: started mosquitto on {host}:{port} (mosquitto/dev.conf){RST}")
        yield
    finally:
        proc.terminate()
        proc.wait(5)


def _describe(ev: Event) -> str | None:
    d = ev.data
    t = str(ev.type)
    if t == "soft_sos":
        if not d.get("notify"):
            return f"{YEL}alert (already told){RST} {ev.person}: {d.get('why')}"
        return f"{RED}{BOLD}SOFT SOS{RST} {ev.person}: {d.get('why')}\n          advice: {d.get('advice')}"
    if t == "alert_updated":
        return f"{YEL}alert worse{RST} {ev.person}: {d.get('why')}"
    if t == "alert_cleared":
        return f"{GRN}alert cleared{RST} {ev.person}: {d.get('condition')}"
    if t == "hard_sos":
        return f"{RED}{BOLD}HARD SOS{RST} {ev.person} (trigger {d.get('trigger')}, ambulance {d.get('ambulance_id')})"
    if t == "sos_end":
        return f"{GRN}{BOLD}SOS ENDED{RST} {ev.person}"
    if t == "implausible_reading":
        return f"{YEL}questioned{RST} {ev.person}: {d.get('vital')} {d.get('kind')} ({d.get('detail')})"
    if t.startswith("device_") or t in (
        "battery_low",
        "fall_detected",
        "sos_escalated",
        "prompt_answered",
    ):
        return f"{CYA}{t}{RST} {ev.person} {json.dumps({k: v for k, v in d.items() if k in ('device', 'reason', 'ok')})}"
    if t == "appointment_booked":
        return f"{GRN}{BOLD}APPOINTMENT BOOKED{RST} {ev.person}: {d.get('specialization')}"
    if t == "notification_failed":
        return f"{RED}text failed{RST} {d.get('to_masked')} ({d.get('error_code')})"
    return None


def _step_line(state: dict[str, Any]) -> str:
    v = state["value"]
    kind = state["from"]
    if kind == "planner":
        return f"  {YEL}planner{RST}  {v['reason']}  -> {v['action']}"
    if kind == "caller":
        return f"  {CYA}caller{RST}   {v['tool']}({json.dumps(v['parameters'])[:150]})"
    if kind == "observation":
        return f"  {DIM}observe  {json.dumps(v)[:150]}{RST}"
    return f"  {kind:<8} {json.dumps(v)[:150]}"


async def _chat(gw: Any) -> str | None:
    """Grandma chats with the assistant; the demo answers for her. Returns the run id."""
    replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    off = gw.api.chat_listen(CHAT_PERSON, replies.put_nowait)
    answers = {k: list(v) for k, v in CHAT_ANSWERS.items()}
    _say(f"\n{BOLD}>>> {CHAT_PERSON} types to the assistant:{RST} {CHAT_TEXT}")
    sid = await gw.api.chat_say(CHAT_PERSON, CHAT_TEXT, None)
    try:
        while sid is not None:
            try:
                r = await asyncio.wait_for(replies.get(), 1.0)
            except TimeoutError:
                if not gw.api.chat_open(sid):
                    break
                continue
            _say(f"{DIM}{time.strftime('%H:%M:%S')}{RST} {GRN}[assistant]{RST} {r['text']}")
            if r.get("expects_answer"):
                left = answers.get(str(r.get("answer_type")), [])
                answer = left.pop(0) if left else "I don't know"
                _say(f"{DIM}{time.strftime('%H:%M:%S')}{RST} {BOLD}[{CHAT_PERSON}]{RST} {answer}")
                await gw.api.chat_say(CHAT_PERSON, answer, sid)
    finally:
        off()
    await asyncio.to_thread(gw.store.flush)
    runs = gw.store.trajectories(person=CHAT_PERSON, limit=5)
    run = next((t for t in runs if t["category"] not in ("hard_sos", "end_sos", "soft_sos")), None)
    if run is None:
        return None
    full = gw.store.trajectory(run["run_id"])
    _say(f"\n{BOLD}agent log{RST} ({run['category']}, run {run['run_id'][:8]}):")
    for st in full["trajectory"]["interaction_trajectory"] if full else []:
        _say(_step_line(st))
    return str(run["run_id"])


async def _run(args: argparse.Namespace) -> int:
    from healthgw.assembly.hub import api_routers, assemble, serve_api

    data = Path(args.data_dir)
    # Every demo tells the same story from a clean slate.
    await asyncio.to_thread(shutil.rmtree, data, True)
    await asyncio.to_thread(data.mkdir, parents=True)
    url = args.mqtt_url or os.environ.get("HEALTHGW_MQTT_URL", "mqtt://127.0.0.1:1883")
    api_port = 8080 if not _listening("127.0.0.1", 8080) else 0
    settings = Settings(
        mqtt_url=url,
        data_dir=data,
        household=HOUSEHOLD,
        gateway_id="demo-hub",
        api_port=api_port,
        print_texts=True,  # the demo shows its texts on purpose; a hub never does by default
        # The console's Simulator panel: the demo's broker is its own, without accounts.
        simulator_enabled=True,
    )
    household = load_household(HOUSEHOLD)
    speed = max(0.5, float(args.speed))
    counts: Counter[str] = Counter()
    timeline = Timeline(list(STORY), extra_actions=("chat",))

    with _broker(settings.mqtt_host, settings.mqtt_port, data / "broker"):
        asm = assemble(settings)
        gw = asm.gateway

        def show(ev: Event) -> None:
            counts[str(ev.type)] += 1
            line = _describe(ev)
            if line:
                _say(f"{DIM}{time.strftime('%H:%M:%S')}{RST} {line}")

        gw.add_event_hook(show)
        await gw.start()
        api = asyncio.create_task(serve_api(gw, api_routers(asm))) if api_port else None
        await asyncio.wait_for(gw.link.connected.wait(), 15)

        sim_start = time.time() - STORY_LENGTH_S  # catches up with now at the end
        watches: list[Watch] = []
        for p in household.persons:
            model = model_for_person(
                p, seed=7, start_ts=sim_start, interval_s=5.0, timezone=household.timezone
            )

            def on_notify(_w: Watch, n: NotifyPayload, who: str = p.id) -> None:
                _say(f"{DIM}{time.strftime('%H:%M:%S')}{RST} {CYA}[watch {who}]{RST} {n.text}")

            w = Watch(
                p.id,
                p.devices[0].id,
                model,
                settings.mqtt_host,
                settings.mqtt_port,
                client_id=f"demo-{p.devices[0].id}",
                on_notify=on_notify,
            )
            w.connect()
            watches.append(w)
        patient = next(w for w in watches if w.person == PATIENT)

        _say(
            f"\n{BOLD}healthgw demo{RST}: {len(watches)} watches, story of {STORY_LENGTH_S:.0f} s "
            f"simulated at {speed:g}x ({STORY_LENGTH_S / speed:.0f} s). Texts go to the offline "
            f"outbox and are printed as [sms to ...].\n"
        )
        if api is not None:
            # The family's screen for this story: this terminal is the demo's owner's.
            _say(
                f"{BOLD}console{RST}: http://127.0.0.1:{api_port}/  sign in with the admin"
                f" token {gw.api_token} (its Simulator panel drives a watch of its own)\n"
            )
        sos_pressed_at: float | None = None
        chat: asyncio.Task[str | None] | None = None
        sim = 0.0
        wall0 = time.monotonic()
        step_s = 5.0
        while sim <= STORY_LENGTH_S:
            for action in timeline.due(sim):
                if action == "sos":
                    _say(f"\n{BOLD}>>> {PATIENT} presses SOS on the watch{RST}")
                    sos_pressed_at = time.time()
                    await asyncio.to_thread(patient.press_sos)
                elif action == "chat":
                    chat = asyncio.create_task(_chat(gw))
                elif action == "sos_end":
                    _say(f"\n{BOLD}>>> the ambulance has arrived: {PATIENT} ends the SOS{RST}")
                    await asyncio.to_thread(patient.end_sos)
                else:
                    patient.model.set_scenario(action, sim_start + sim)
                    _say(f"{DIM}--- {PATIENT}: {action} ---{RST}")
            for w in watches:
                w.publish_reading(ts=sim_start + sim)
            sim += step_s
            delay = wall0 + sim / speed - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

        chat_run = None
        if chat is not None:
            try:
                chat_run = await asyncio.wait_for(chat, 120)
            except TimeoutError:
                _say(f"{RED}the assistant did not finish{RST}")
        await asyncio.to_thread(gw.texts.wait_idle, 10)
        await asyncio.sleep(1.0)
        for w in watches:
            w.disconnect()
        gw.store.flush()
        stats = gw.stats()
        outbox = data / "outbox.jsonl"
        texts = [json.loads(x) for x in outbox.read_text().splitlines()] if outbox.exists() else []
        trajectories = gw.store.trajectories(limit=100)
        # The SOS's own first text (the family may have been texted earlier by the alert).
        first_text = min(
            (t["ts"] for t in texts if sos_pressed_at is not None and t["ts"] >= sos_pressed_at),
            default=None,
        )
        if api is not None:
            api.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await api
        await gw.stop()

    _say(f"\n{BOLD}Summary{RST}")
    _say(
        f"  readings processed   {stats['counters'].get('readings', 0)}"
        f" (rejected {stats['counters'].get('rejected', 0)}, duplicates {stats['duplicates']})"
    )
    _say("  events               " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    _say(f"  texts sent           {len(texts)} (outbox: {outbox})")
    if sos_pressed_at is not None and first_text is not None:
        _say(f"  SOS press -> 1st text {1000 * (first_text - sos_pressed_at):.0f} ms")
    _say(
        "  trajectories stored  "
        + ", ".join(f"{t['category']} ({t['status']})" for t in reversed(trajectories))
    )
    _say(f"  data                 {data}/healthgw.db (SQLite), API token in {data}/api_token")
    _say(f"  started {format_ts(time.time() - STORY_LENGTH_S / speed)}, done.")
    if chat_run:
        _say(f"  agent log            GET /v1/trajectories/{chat_run} (admin or family token)")
    ok = (
        counts.get("soft_sos", 0) >= 1
        and counts.get("hard_sos", 0) == 1
        and len(texts) >= 4
        and counts.get("appointment_booked", 0) == 1
    )
    if not ok:
        _say(f"{RED}the story did not unfold as expected{RST}")
    return 0 if ok else 1


def run_demo(args: argparse.Namespace) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_run(args))
    return 130
