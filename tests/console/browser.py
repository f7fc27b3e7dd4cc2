"""Headless Debian chromium through selenium and Debian's chromium-driver (never a
downloaded browser), and the helpers the console's browser tests share."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
PHONE = (390, 844)
DESKTOP = (1280, 900)


def skip_without_chromium() -> None:
    if not (os.access(CHROMIUM, os.X_OK) and os.access(DRIVER, os.X_OK)):
        pytest.skip(
            "Debian's chromium and chromium-driver are not installed"
            " (scripts/setup.sh installs them: apt-get install chromium chromium-driver)"
        )


def chromium() -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (dev extra) missing")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--no-first-run", "--disable-extensions", "--lang=en-GB"):  # fmt: skip
        opts.add_argument(arg)
    # Selenium Manager would otherwise look for (and download) a driver.
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=DRIVER))
    driver.set_window_size(*DESKTOP)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: Any, what: Callable[[Any], Any], within: float = 15.0) -> Any:
    """Poll until `what` is truthy. The cards are redrawn when the picture changes, so an
    element found a moment ago may be gone: that is "not yet", not a failure."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (NoSuchElementException, StaleElementReferenceException)
    return WebDriverWait(driver, within, 0.1, ignored_exceptions=ignored).until(what)


def axe_serious(driver: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now (WCAG 2.x A/AA
    rules and best practices). Raises if axe did not run: an empty list must mean clean."""
    driver.execute_script(AXE.read_text(encoding="utf-8"))
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document).then(r => done({violations: r.violations, passes: r.passes.length}),"
        " e => done({error: String(e)}));"
    )
    assert "error" not in result, result
    assert result["passes"] > 10, result  # it looked at the page
    return [v for v in result["violations"] if v.get("impact") in ("serious", "critical")]


def screenshots(driver: Any, folder: Path, name: str) -> list[Path]:
    """The whole page at phone and desktop widths (the viewport grown to the page's height
    through DevTools: a window cannot be taller than headless chromium's screen)."""
    out = []
    for label, (w, h) in (("phone", PHONE), ("desktop", DESKTOP)):
        metrics = {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": w < 500}
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        height = int(driver.execute_script("return document.documentElement.scrollHeight"))
        metrics["height"] = max(h, min(height, 4000))
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        path = folder / f"{name}-{label}.png"
        driver.save_screenshot(str(path))
        out.append(path)
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return out
