"""The summary for the GP (issue 28) from the console, in a real browser against the whole
gateway (`healthgw run`: the PDF is made in the report child): the family downloads it from
the person page as a file; a viewer sees no such button and the API refuses its token."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.contract.topics import vitals_topic
from tests.console.browser import axe_serious, screenshots, skip_without_chromium, wait_for
from tests.console.test_console_browser import broker_port, publish_to, sign_in
from tests.gateway.api.gateway_process import VIEWER, LiveGateway, live_gateway
from tests.harness import FAMILY

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    skip_without_chromium()
    with live_gateway(
        tmp_path_factory.mktemp("console-summary"), HEALTHGW_API_RATE_LIMIT="600/minute"
    ) as gw:
        yield gw


def exports(gw: LiveGateway) -> list[tuple[str, str, int]]:
    db = sqlite3.connect(f"file:{gw.log.parent / 'data' / 'healthgw.db'}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT actor, args, ok FROM audit WHERE tool = 'clinician_summary_export'"
        ).fetchall()
    finally:
        db.close()


def open_person(browser: Any, person: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    def opened(d: Any) -> bool:
        # The cards are redrawn on live updates: a button found a moment ago may be gone.
        titles = d.find_elements(By.ID, "person-title")
        if titles and titles[0].is_displayed():
            return bool(titles[0].text == "Maria Lopez")
        d.find_element(By.CSS_SELECTOR, f'[data-open="{person}"]').send_keys(Keys.ENTER)
        return False

    wait_for(browser, opened)


def test_family_downloads_the_summary_for_the_gp(
    gateway: LiveGateway, browser: Any, artefacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    now = time.time()
    for i, hr in enumerate((72, 118, 76)):
        publish_to(broker_port(gateway), vitals_topic("grandma", "watch-maria"),
                   {"ts": now - 300 + 100 * i, "seq": i, "heart_rate": hr, "spo2": 93})  # fmt: skip
    sign_in(browser, gateway.base_url, FAMILY, "family")
    open_person(browser, "grandma")
    # Read inside the wait: the page may be redrawn.
    wait_for(browser, lambda d: d.find_element(By.ID, "summary-download").text
             == "Summary for the GP (PDF)")  # fmt: skip
    assert axe_serious(browser) == []
    screenshots(browser, artefacts, "person-summary-family")
    downloads = artefacts / "summary-downloads"
    downloads.mkdir(exist_ok=True)
    browser.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    browser.find_element(By.ID, "summary-download").send_keys(Keys.ENTER)
    status = wait_for(
        browser,
        lambda d: (t := d.find_element(By.ID, "summary-status").text).startswith(
            ("Downloaded", "No summary")
        ) and t,
        within=90,  # the report child starts, imports matplotlib, reads 14 days, draws
    )  # fmt: skip
    match = re.fullmatch(r"Downloaded (summary-grandma-\d{4}-\d\d-\d\d-to-\d{4}-\d\d-\d\d\.pdf)\.",
                         status)  # fmt: skip
    assert match, status
    saved = downloads / match.group(1)
    wait_for(browser, lambda d: saved.exists() and saved.stat().st_size > 10_000, within=20)
    pdf = saved.read_bytes()
    assert pdf.startswith(b"%PDF-")
    assert b"Maria Lopez" in pdf  # its title names her
    assert len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf)) == 2
    # Audited on the hub: who (the family role and its token's fingerprint), what, when.
    rows = wait_for(browser, lambda d: exports(gateway), within=10)
    assert rows[0][0].startswith("family:") and rows[0][2] == 1
    assert json.loads(rows[0][1])["person"] == "grandma"
    # Bad dates: a clear sentence on the page, not a stack trace.
    browser.execute_script(
        "document.getElementById('summary-since').value = '2026-03-10';"
        "document.getElementById('summary-until').value = '2026-03-01';"
    )
    browser.find_element(By.ID, "summary-download").send_keys(Keys.ENTER)
    wait_for(browser, lambda d: d.find_element(By.ID, "summary-status").text
             == "No summary: `until` is before `since`.")  # fmt: skip


def test_a_viewer_sees_no_summary_and_the_api_refuses_it(
    gateway: LiveGateway, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, gateway.base_url, VIEWER, "viewer")
    open_person(browser, "grandma")
    wait_for(browser, lambda d: "Daily reports" in d.find_element(By.ID, "person").text)
    assert browser.find_elements(By.ID, "summary-download") == []
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/v1/persons/grandma/summary.pdf', {headers: {Authorization:"
        " 'Bearer ' + sessionStorage.getItem('healthgw.token')}}).then(r => done(r.status));"
    )
    assert status == 403
    r = httpx.get(f"{gateway.base_url}/v1/persons/grandma/summary.pdf",
                  headers={"Authorization": f"Bearer {VIEWER}"}, timeout=10)  # fmt: skip
    assert r.status_code == 403
