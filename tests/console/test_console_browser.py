"""The console in a real browser (Debian's chromium, headless) against the whole gateway
(`healthgw run`) over a private mosquitto: sign in, a watch's reading reaching a card over
MQTT -> gateway -> /v1/live, an SOS's ladder and the family's "I'm on my way", a viewer who
sees no buttons and is refused by the API anyway, axe-core, and screenshots at phone and
desktop widths (their folder is printed at the end)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import aiomqtt
import httpx
import pytest

from gateway.contract.topics import vitals_topic
from tests.console.browser import (
    axe_serious,
    screenshots,
    skip_without_chromium,
    wait_for,
)
from tests.gateway.api.gateway_process import VIEWER, LiveGateway, live_gateway
from tests.harness import ADMIN, AWAKE, FAMILY

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    skip_without_chromium()
    # The limiter stays on (the console must live with it), with room for one test's pages.
    with live_gateway(
        tmp_path_factory.mktemp("console"), HEALTHGW_API_RATE_LIMIT="600/minute"
    ) as gw:
        yield gw


def broker_port(gw: LiveGateway) -> int:
    conf = (gw.log.parent / "broker" / "mosquitto.conf").read_text()
    return int(
        next(ln for ln in reversed(conf.splitlines()) if ln.startswith("listener")).split()[1]
    )


def publish_to(port: int, topic: str, payload: dict[str, Any]) -> None:
    """One message as a watch sends it (QoS 1) to the broker on `port`."""

    async def go() -> None:
        async with aiomqtt.Client("127.0.0.1", port, identifier="browser-test-watch") as c:
            await c.publish(topic, json.dumps(payload), qos=1)

    asyncio.run(go())


def sign_in(driver: Any, base_url: str, token: str, role: str) -> None:
    """Sign in with the keyboard; returns once the cards are on the page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.get(base_url + "/")
    driver.execute_script("sessionStorage.clear()")
    driver.refresh()
    field = wait_for(driver, lambda d: d.find_element(By.ID, "token"))
    field.send_keys(token, Keys.ENTER)  # the keyboard, not a click
    wait_for(driver, lambda d: d.find_element(By.ID, "scope").get_attribute("data-role") == role)
    wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "article.card")) == 2)
    assert token not in driver.current_url
    assert driver.execute_script("return sessionStorage.getItem('healthgw.token')") == token


def card_text(driver: Any, person: str) -> str:
    """The card's text read in one step in the page (a redraw cannot land in between)."""
    text: str = driver.execute_script(
        'return document.querySelector(`article[data-person="${arguments[0]}"]`).innerText',
        person,
    )
    return text


def test_a_wrong_token_is_refused_and_nothing_is_shown(
    gateway: LiveGateway, browser: Any, artefacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(gateway.base_url + "/")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    assert browser.switch_to.active_element.text == "Skip to content"  # keyboard first stop
    field = wait_for(browser, lambda d: d.find_element(By.ID, "token"))
    field.send_keys("not-the-token-of-anyone-0123456789", Keys.ENTER)
    error = wait_for(browser, lambda d: d.find_element(By.ID, "sign-in-error").text)
    assert error == "That token was not accepted."
    assert not browser.find_element(By.ID, "household").is_displayed()
    assert browser.execute_script("return sessionStorage.length") == 0
    assert axe_serious(browser) == []
    screenshots(browser, artefacts, "sign-in-refused")


def test_admin_signs_in_and_a_watch_reading_reaches_the_card(
    gateway: LiveGateway, browser: Any, artefacts: Path
) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, gateway.base_url, ADMIN, "admin")
    assert "NEWS2: no score yet" in card_text(browser, "dad")
    wait_for(browser, lambda d: d.find_element(By.ID, "link-state").text == "Live")
    publish_to(broker_port(gateway), vitals_topic("dad", "watch-jon"),
            {"ts": time.time(), "heart_rate": 77, "spo2": 97, "respiratory_rate": 16,
             "systolic_bp": 124, "temperature_c": 36.8, "battery": 64})  # fmt: skip

    def shown(d: Any) -> bool:
        cells = d.find_elements(By.CSS_SELECTOR, 'article[data-person="dad"] [data-vital]')
        return {c.get_attribute("data-vital"): c.text for c in cells}.get("heart_rate") == "77 bpm"

    wait_for(browser, shown)
    text = card_text(browser, "dad")
    assert "97 %" in text and "battery 64 %" in text and "last seen" in text
    # NEWS2 in words, not only a colour.
    badge = browser.find_element(By.CSS_SELECTOR, 'article[data-person="dad"] .news2')
    assert badge.get_attribute("data-level") == "low" and "Low" in badge.text
    # A second reading draws the day's line: the stored one (read back) and the new one.
    publish_to(broker_port(gateway), vitals_topic("dad", "watch-jon"),
               {"ts": time.time(), "heart_rate": 81, "spo2": 96})  # fmt: skip
    spark = 'article[data-person="dad"] svg[aria-label^="heart rate since"]'
    # Read in the wait: the card is redrawn on each live update (a found element goes stale).
    label = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, spark).get_attribute(
        "aria-label").endswith(": 77 to 81 bpm"))  # fmt: skip
    assert label
    assert "battery 64 %" in card_text(browser, "dad")  # not lost to a reading without one
    assert axe_serious(browser) == []
    shots = screenshots(browser, artefacts, "household-admin")
    assert all(p.stat().st_size > 10_000 for p in shots)


def test_viewer_sees_no_buttons_and_the_api_refuses_it(
    gateway: LiveGateway, browser: Any, artefacts: Path
) -> None:
    from selenium.webdriver.common.by import By

    r = httpx.post(f"{gateway.base_url}/v1/sos/grandma/start",
                   headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10)  # fmt: skip
    assert r.status_code == 200
    sign_in(browser, gateway.base_url, VIEWER, "viewer")
    box = wait_for(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, '[data-ladder="waiting"]').text
    )
    assert "nobody has said they are on the way" in box
    assert browser.find_elements(By.CSS_SELECTOR, "button[data-action]") == []  # ack, clear
    # The page hides the button; the API still refuses the call from this page's token.
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/v1/sos/grandma/ack', {method: 'POST', headers: {Authorization:"
        " 'Bearer ' + sessionStorage.getItem('healthgw.token')}}).then(r => done(r.status));"
    )
    assert status == 403
    assert axe_serious(browser) == []
    screenshots(browser, artefacts, "sos-viewer")


def test_family_acknowledges_the_sos_from_the_page(
    gateway: LiveGateway, browser: Any, artefacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    sign_in(browser, gateway.base_url, FAMILY, "family")
    box = wait_for(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, '[data-ladder="waiting"]').text
    )
    assert "Ambulance" in box and "Emergency contact" in box
    assert axe_serious(browser) == []
    screenshots(browser, artefacts, "sos-family")
    ack = '[data-ladder="waiting"] button[data-action="ack"]'

    def press(d: Any) -> bool:  # found and pressed in one go (a redraw may replace it)
        button = d.find_element(By.CSS_SELECTOR, ack)
        assert button.text == "I'm on my way"
        button.send_keys(Keys.ENTER)
        return True

    wait_for(browser, press)
    done = wait_for(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, '[data-ladder="acked"]').text
    )
    assert "a family member (console) is on the way" in done
    assert "the others know" in browser.find_element(By.ID, "action-result").text
    wait_for(browser, lambda d: "SOS acknowledged" in d.find_element(By.ID, "event-list").text)
    ladder = httpx.get(f"{gateway.base_url}/v1/sos/grandma/ladder",
                       headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10).json()  # fmt: skip
    assert ladder["state"] == "acked" and ladder["acked_by"] == "family:console"
    screenshots(browser, artefacts, "sos-acknowledged")


def test_admin_chats_until_a_cardiologist_is_booked_and_reads_the_agent_log(
    gateway: LiveGateway, browser: Any, artefacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    sign_in(browser, gateway.base_url, ADMIN, "admin")
    Select(browser.find_element(By.ID, "chat-person")).select_by_value("grandma")
    wait_for(browser, lambda d: "Connected" in d.find_element(By.ID, "chat-state").text)

    def said(n: int) -> list[str]:
        items = browser.find_elements(By.CSS_SELECTOR, "#chat-log li.from-assistant")
        return [i.text for i in items] if len(items) >= n else []

    for n, text in enumerate(
        ("I've had chest tightness when I climb stairs", "Tuesday morning", "yes"), start=1
    ):
        box = browser.find_element(By.ID, "chat-text")
        box.send_keys(text, Keys.ENTER)
        replies = wait_for(browser, lambda d, n=n: said(n), within=60)
    assert any("cardiologist" in r.lower() for r in replies), replies
    wait_for(browser, lambda d: "book" in d.find_element(By.ID, "agent-log").text.lower(), 30)
    log = browser.find_element(By.ID, "agent-log")
    kinds = {li.get_attribute("data-step") for li in log.find_elements(By.CSS_SELECTOR, "li")}
    assert {"planner", "caller", "observation"} <= kinds
    # Steps open with the keyboard: the planner's reason, the tool and its parameters.
    first_call = log.find_element(By.CSS_SELECTOR, 'li[data-step="caller"] summary')
    first_call.send_keys(Keys.ENTER)
    assert '"tool"' in log.find_element(By.CSS_SELECTOR, 'li[data-step="caller"] pre').text
    booked = httpx.get(f"{gateway.base_url}/v1/persons/grandma/appointments",
                       headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10).json()  # fmt: skip
    assert booked["bookings"], booked
    assert axe_serious(browser) == []
    screenshots(browser, artefacts, "assistant-admin")


def test_family_reads_the_agent_log_redacted_and_cannot_chat(
    gateway: LiveGateway, browser: Any, artefacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    sign_in(browser, gateway.base_url, FAMILY, "family")
    assert not browser.find_element(By.ID, "chat-form").is_displayed()
    Select(browser.find_element(By.ID, "chat-person")).select_by_value("grandma")
    log = wait_for(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#agent-log li[data-step="user"]')
    )
    assert "chest" not in browser.find_element(By.ID, "agent-log").text.lower()
    assert "[redacted]" in log[0].text
    screenshots(browser, artefacts, "assistant-family")


def test_the_person_page_charts_a_day_against_the_normal_band_with_events_marked(
    gateway: LiveGateway, browser: Any, artefacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    # Two readings either side of the SOS pressed earlier in this module: it is marked.
    now = time.time()
    for ts, hr in ((now - 600, 70), (now, 75)):
        publish_to(broker_port(gateway), vitals_topic("grandma", "watch-maria"),
                   {"ts": ts, "heart_rate": hr, "spo2": 93})  # fmt: skip
    day = datetime.now(ZoneInfo("Europe/London")).date().isoformat()  # the household's day
    made = httpx.post(f"{gateway.base_url}/v1/persons/grandma/reports/{day}",
                      headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60)  # fmt: skip
    assert made.status_code == 200, made.text
    sign_in(browser, gateway.base_url, FAMILY, "family")
    spark = 'article[data-person="grandma"] svg[aria-label^="heart rate since"]'
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, spark))
    browser.find_element(By.CSS_SELECTOR, '[data-open="grandma"]').send_keys(Keys.ENTER)
    title = wait_for(browser, lambda d: d.find_element(By.ID, "person-title"))
    assert title.text == "Maria Lopez" and browser.switch_to.active_element == title
    hr = browser.find_element(By.CSS_SELECTOR, 'figure[data-vital="heart_rate"]')
    assert hr.find_elements(By.CSS_SELECTOR, "rect.band")  # her normal range, shaded
    marker = hr.find_element(By.CSS_SELECTOR, 'line.marker[data-type="hard_sos"]')
    assert marker is not None
    caption = hr.find_element(By.TAG_NAME, "figcaption").text
    assert "70–75" in caption and "normal" in caption and "SOS pressed" in caption
    page = browser.find_element(By.ID, "person").text
    # Booked by the assistant test above, named as the household names the specialist.
    assert "with Dr. Priya Nair, cardiologist" in page and "CARD-101" not in page
    assert "Medications today" in page and "Daily reports" in page
    assert browser.find_element(By.ID, "household").is_displayed() is False
    assert axe_serious(browser) == []
    screenshots(browser, artefacts, "person-family")
    # The report read in the page: the same charts its PNGs were drawn from, then its tables.
    browser.find_element(By.XPATH, f'//button[text()="Read the report of {day}"]').send_keys(
        Keys.ENTER
    )
    heading = wait_for(browser, lambda d: d.find_element(By.ID, "report-title"))
    assert day in heading.text and browser.switch_to.active_element == heading
    report = browser.find_element(By.ID, "report-view")
    fig = report.find_element(By.CSS_SELECTOR, 'figure[data-vital="heart_rate"]')
    assert fig.find_elements(By.CSS_SELECTOR, "rect.band")
    assert fig.find_element(By.CSS_SELECTOR, 'line.marker[data-type="hard_sos"]') is not None
    assert "Hard SOS" in fig.find_element(By.TAG_NAME, "figcaption").text
    text = report.text
    assert re.search(r"hard SOS [1-9]", text) and "Vitals" in text and "Hard SOS (button)" in text
    assert axe_serious(browser) == []
    screenshots(browser, artefacts, "report-family")
    # The report downloads as a file of its own (this page's policy would refuse its styles).
    downloads = artefacts / "downloads"
    downloads.mkdir(exist_ok=True)
    browser.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    browser.find_element(By.XPATH, f'//button[text()="Download the report of {day}"]').send_keys(
        Keys.ENTER
    )
    saved = downloads / f"report-grandma-{day}.html"
    wait_for(browser, lambda d: saved.exists() and saved.stat().st_size > 0, within=20)
    assert "<html" in saved.read_text(encoding="utf-8", errors="replace").lower()
    browser.find_element(By.ID, "back").send_keys(Keys.ENTER)
    wait_for(browser, lambda d: d.find_element(By.ID, "household").is_displayed())
    assert browser.switch_to.active_element.get_attribute("data-open") == "grandma"


def test_a_critical_reading_shows_the_question_and_the_alert_and_family_give_the_all_clear(
    gateway: LiveGateway, browser: Any, artefacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    sign_in(browser, gateway.base_url, FAMILY, "family")
    # A gradual fall, 5 s apart as a watch sends it (a sudden jump is "implausible" and asked
    # about differently), after Jon's last reading so none of it is late data.
    admin = {"Authorization": f"Bearer {ADMIN}"}
    rows = httpx.get(f"{gateway.base_url}/v1/persons/dad/readings", headers=admin, timeout=10)
    start = max(time.time() - 20, max(r["ts"] for r in rows.json()) + 1)
    while time.time() < start + 20:
        time.sleep(0.5)
    steps = ((82, 95, 18), (90, 93, 20), (98, 91, 22), (104, 89, 24), (110, 88, 25))
    for k, (hr, spo2, rr) in enumerate(steps):
        publish_to(broker_port(gateway), vitals_topic("dad", "watch-jon"),
                   {"ts": start + 5 * k, "heart_rate": hr, "spo2": spo2, "respiratory_rate": rr,
                    "sleep": AWAKE})  # any hour: awake (else at night judged asleep)  # fmt: skip
    card = 'article[data-person="dad"]'

    def asked_and_alerts(d: Any) -> tuple[str, str] | None:
        # Read in the wait: a live update redraws the card between a find and a read.
        asked = d.find_elements(By.CSS_SELECTOR, f"{card} [data-prompt]")
        alerts = d.find_element(By.CSS_SELECTOR, f'{card} ul[aria-label="Open alerts"]')
        return (asked[0].text, alerts.text) if asked else None

    asked, alerts = wait_for(browser, asked_and_alerts)
    assert 'Asked "are you OK?" on the watch: no answer yet' in asked
    assert "Oxygen saturation low (medium priority, critical)" in alerts
    # SpO2 88 % scores 3 on its own (at least low-medium; with Jon's earlier blood pressure
    # and temperature the total may be higher): the level in words as well as colour.
    words = {"low-medium": "Low–medium", "medium": "Medium", "high": "High"}
    level, text = wait_for(browser, lambda d: (
        (b := d.find_element(By.CSS_SELECTOR, f"{card} .news2")).get_attribute("data-level"), b.text))  # fmt: skip
    assert level in words and words[level] in text
    assert axe_serious(browser) == []
    screenshots(browser, artefacts, "alert-family")
    clear = f'{card} button[data-action="clear"]'

    def press(d: Any) -> bool:  # found and pressed in one go (a redraw may replace it)
        button = d.find_element(By.CSS_SELECTOR, clear)
        assert button.text == "All clear for Jon Smith"
        button.send_keys(Keys.ENTER)
        return True

    wait_for(browser, press)
    # Waits for this action's own words (the line may still hold an earlier action's).
    result = wait_for(
        browser,
        lambda d: (t := d.find_element(By.ID, "action-result").text).startswith("All clear") and t,
    )
    assert result.startswith("All clear given:") and "alert(s) closed" in result
    wait_for(
        browser,
        lambda d: not d.find_elements(By.CSS_SELECTOR, f'{card} button[data-action="clear"]'),
    )
