"""The console's Simulator panel in a real browser (Debian's chromium, headless) against the
whole gateway (`healthgw run` with HEALTHGW_SIMULATOR_ENABLED) over a private mosquitto: the
admin starts a simulated watch and its readings reach the card, presses SOS on it and sees the
ladder with the texts (which reach the local Twilio-compatible sink), then ends it; a family
member sees no panel and is refused by the API anyway."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.browser import (
    axe_serious,
    screenshots,
    skip_without_chromium,
    wait_for,
)
from tests.console.test_console_browser import card_text, sign_in
from tests.gateway.api.gateway_process import LiveGateway, live_gateway
from tests.harness import ADMIN, FAMILY

pytestmark = [pytest.mark.browser, pytest.mark.integration]

JON_AMBULANCE = "+447700900902"  # AMB-west, the nearest to Jon's home (examples/household.yaml)
JON_CONTACT = "+447700900201"  # Ana Lopez


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    skip_without_chromium()
    with live_gateway(
        tmp_path_factory.mktemp("console-sim"),
        HEALTHGW_API_RATE_LIMIT="600/minute",
        HEALTHGW_SIMULATOR_ENABLED="true",
    ) as gw:
        yield gw


def press(driver: Any, action: str) -> None:
    """A panel button, with the keyboard."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.find_element(By.CSS_SELECTOR, f'#simulator button[data-sim="{action}"]').send_keys(
        Keys.ENTER
    )


def result(driver: Any, expected: str) -> str:
    """The panel's status line once it says `expected` (the line keeps the previous action's
    words until the new answer arrives, so waiting for a prefix raced), else what it says."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By

    def text(d: Any) -> str:
        return str(d.find_element(By.ID, "sim-result").text)

    with contextlib.suppress(TimeoutException):
        wait_for(driver, lambda d: text(d) == expected)
    return text(driver)


def test_admin_presses_sos_in_the_simulator_and_sees_the_texts_and_the_ladder(
    gateway: LiveGateway, browser: Any, artefacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    sign_in(browser, gateway.base_url, ADMIN, "admin")
    panel = wait_for(
        browser, lambda d: (p := d.find_element(By.ID, "simulator")).is_displayed() and p
    )
    Select(browser.find_element(By.ID, "sim-person")).select_by_value("dad")
    Select(browser.find_element(By.ID, "sim-scenario")).select_by_value("normal")
    assert "No simulated watch is running for Jon Smith" in panel.text
    # Start with the keyboard: Enter in the form's select submits it like the button.
    panel.find_element(By.CSS_SELECTOR, 'button[type="submit"]').send_keys(Keys.ENTER)
    assert result(browser, "Scenario normal started.") == "Scenario normal started."

    # The simulated watch's readings take the real road: MQTT -> gateway -> /v1/live -> card.
    def heart_rate(d: Any) -> str:
        cells = d.find_elements(By.CSS_SELECTOR, 'article[data-person="dad"] [data-vital]')
        return {c.get_attribute("data-vital"): c.text for c in cells}.get("heart_rate", "")

    assert wait_for(browser, heart_rate, within=20).endswith(" bpm")
    assert "last seen" in card_text(browser, "dad")
    watch = wait_for(
        browser,
        lambda d: "reading(s) sent" in (t := d.find_element(By.ID, "sim-watch").text) and t,
    )
    assert "Jon Smith's simulated watch (watch-jon): normal" in watch

    before = len(gateway.sink.messages)
    press(browser, "sos")
    assert result(browser, "SOS pressed on the watch.") == "SOS pressed on the watch."
    box = wait_for(
        browser,
        lambda d: (
            d.find_element(
                By.CSS_SELECTOR, 'article[data-person="dad"] [data-ladder="waiting"]'
            ).text
        ),
        within=20,
    )
    assert "Ambulance" in box and "Emergency contact" in box
    # The texts themselves, at the Twilio-compatible sink: the ambulance and the contact.
    texts = gateway.sink.wait_for(before + 2, timeout=15)[before:]
    to = {t.to for t in texts}
    assert JON_AMBULANCE in to and JON_CONTACT in to, to
    wait_for(browser, lambda d: "SOS pressed" in d.find_element(By.ID, "event-list").text)
    wait_for(browser, lambda d: "Text sent" in d.find_element(By.ID, "event-list").text)
    assert axe_serious(browser) == []
    shots = screenshots(browser, artefacts, "simulator-sos-admin")
    assert all(p.stat().st_size > 10_000 for p in shots)

    press(browser, "sos-end")
    assert result(browser, "SOS ended on the watch.") == "SOS ended on the watch."
    wait_for(browser, lambda d: "SOS ended" in d.find_element(By.ID, "event-list").text, 20)
    wait_for(
        browser,
        lambda d: (
            not d.find_elements(
                By.CSS_SELECTOR, 'article[data-person="dad"] [data-ladder="waiting"]'
            )
        ),
        within=20,
    )
    # A fall on the watch: the gateway asks "are you OK?" on it; the wearer answers from here.
    Select(browser.find_element(By.ID, "sim-scenario")).select_by_value("fall")
    panel.find_element(By.CSS_SELECTOR, 'button[type="submit"]').send_keys(Keys.ENTER)
    assert result(browser, "Scenario fall started.") == "Scenario fall started."
    card = 'article[data-person="dad"]'
    asked = wait_for(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, f"{card} [data-prompt]"), within=20
    )
    assert "no answer yet" in asked[0].text
    wait_for(
        browser,
        lambda d: 'It has shown "are you OK?"' in d.find_element(By.ID, "sim-watch").text,
    )
    screenshots(browser, artefacts, "simulator-prompt-admin")
    press(browser, "ok")
    assert result(browser, 'Answered "I\'m OK" on the watch.') == 'Answered "I\'m OK" on the watch.'
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, f"{card} [data-prompt]"), 20)
    wait_for(browser, lambda d: "Prompt answered" in d.find_element(By.ID, "event-list").text)
    # "Not OK" with no question pending is still a person asking for help: a hard SOS, its
    # ladder on the card and the ambulance texted.
    before = len(gateway.sink.messages)
    press(browser, "not-ok")
    assert result(browser, 'Answered "Not OK" on the watch.') == 'Answered "Not OK" on the watch.'
    ladder = f'{card} [data-ladder="waiting"]'
    box = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, ladder).text, within=20)
    assert "Ambulance" in box
    texts = gateway.sink.wait_for(before + 2, timeout=15)[before:]
    assert JON_AMBULANCE in {t.to for t in texts}
    screenshots(browser, artefacts, "simulator-not-ok-admin")
    press(browser, "sos-end")
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, ladder), within=20)
    press(browser, "stop")
    assert result(browser, "Watch stopped.") == "Watch stopped."
    wait_for(
        browser,
        lambda d: "No simulated watch is running" in d.find_element(By.ID, "sim-watch").text,
    )
    screenshots(browser, artefacts, "simulator-ended-admin")


def test_family_sees_no_simulator_and_the_api_refuses_it(
    gateway: LiveGateway, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, gateway.base_url, FAMILY, "family")
    assert not browser.find_element(By.ID, "simulator").is_displayed()
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/v1/simulator/dad/sos/start', {method: 'POST', headers: {Authorization:"
        " 'Bearer ' + sessionStorage.getItem('healthgw.token')}}).then(r => done(r.status));"
    )
    assert status == 403
