"""Headless Chromium for ``kraft-chaos serve``'s browser tests (tests/test_serve_browser.py), and
the README's screenshots.

Debian's ``chromium`` and ``chromium-driver`` (scripts/ensure-chromium.sh, run by ``make
test``) driven by Selenium through the system chromedriver: no browser download.
``KRAFT_CHAOS_CHROMIUM`` and ``KRAFT_CHAOS_CHROMEDRIVER`` name other binaries.

Screenshots (docs/serve-index.png, docs/serve-timeline.png) from real runs of a store::

    .venv/bin/python -m tests.serve_browser --store store --out docs RUN_DIR [RUN_DIR ...]

copies the RUN_DIRs (``<test>/<timestamp>`` under ``--store``) into a temporary store, serves
it, and shoots the index and the timeline of the first RUN_DIR with an op hovered.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Iterator

#: Window size of the screenshots and tests (CSS pixels).
WIDTH, HEIGHT = 1400, 860


def browser_paths() -> tuple[str | None, str | None]:
    """``(chromium, chromedriver)`` executables, each None when not found (the env overrides,
    then PATH, then /usr/bin and /usr/lib/chromium)."""
    def find(env: str, names: tuple[str, ...], extra: tuple[str, ...]) -> str | None:
        if os.environ.get(env):
            return os.environ[env] if os.access(os.environ[env], os.X_OK) else None
        for n in names:
            if shutil.which(n):
                return shutil.which(n)
        return next((p for p in extra if os.access(p, os.X_OK)), None)
    return (find("KRAFT_CHAOS_CHROMIUM", ("chromium", "chromium-browser"), ("/usr/bin/chromium", "/usr/lib/chromium/chromium")),
            find("KRAFT_CHAOS_CHROMEDRIVER", ("chromedriver",), ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")))


def missing_reason() -> str | None:
    """Why the browser tests cannot run here (no chromium or no chromedriver), or None."""
    chromium, driver = browser_paths()
    if chromium and driver:
        return None
    what = " and ".join(n for n, p in (("chromium", chromium), ("chromedriver", driver)) if not p)
    return (f"{what} not installed: the browser tests need Debian's chromium and chromium-driver "
            "(bash scripts/ensure-chromium.sh, run by `make test`)")


def start_driver(width: int = WIDTH, height: int = HEIGHT, scale: float = 1.0):
    """A headless Chromium session (selenium ``WebDriver``) with a ``width`` x ``height`` CSS-pixel
    viewport at device scale ``scale``, logging the browser console. Raises RuntimeError (with
    :func:`missing_reason`) when chromium is absent, and selenium's errors when it cannot start.
    The caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    reason = missing_reason()
    if reason:
        raise RuntimeError(reason)
    chromium, chromedriver = browser_paths()
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--no-first-run", "--disable-extensions", "--hide-scrollbars",
                f"--window-size={width},{height}", f"--force-device-scale-factor={scale}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(chromedriver), options=opts)
    # --window-size sizes the window, not the viewport: make the viewport exactly width x height
    inner = driver.execute_script("return [innerWidth, innerHeight]")
    driver.set_window_size(2 * width - inner[0], 2 * height - inner[1])
    driver.set_page_load_timeout(60)
    return driver


@contextlib.contextmanager
def serving(root: Path) -> Iterator[str]:
    """``kraft-chaos serve`` of ``root`` on an ephemeral port of 127.0.0.1 in a thread; yields its
    base URL (``http://127.0.0.1:PORT``) and stops it afterwards."""
    from harness.web.serve import make_server
    srv = make_server(root, port=0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def wait_for_timeline(driver, timeout: float = 60) -> None:
    """Wait until the timeline page has decoded its data and drawn (``TL_MODEL`` set, the view
    sized)."""
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return !!(window.TL_MODEL && window.TL_VIEW && TL_VIEW.W > 0)"))


def hover_op(driver, i: int) -> str:
    """Move the mouse to the middle of timeline op ``i`` (its model index) and return the hover
    text shown ('' when none). The op's bar must be on screen."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    overlay = driver.find_element(By.ID, "tl-overlay")
    box = driver.execute_script("return TL_VIEW.box(arguments[0])", i)
    rect = overlay.rect
    x = box["x"] + min(box["w"], rect["width"] - box["x"]) / 2
    y = box["y"] + box["h"] / 2
    # selenium 4 offsets are from the element's centre
    ActionChains(driver).move_to_element_with_offset(
        overlay, int(x - rect["width"] / 2), int(y - rect["height"] / 2)).perform()
    tip = driver.find_element(By.ID, "tl-tip")
    return tip.text if tip.is_displayed() else ""


def widest_op(driver, lane: int) -> int:
    """The model index of the longest op of ``lane`` that ended (not open), in the fitted view."""
    return driver.execute_script("""
        var m = TL_MODEL, best = -1, w = -1;
        for (var i = 0; i < m.n; i++)
          if (m.d.lane[i] === arguments[0] && m.d.dc[i] >= 0 && m.end[i] - m.start[i] > w) { w = m.end[i] - m.start[i]; best = i; }
        return best;""", lane)


def screenshots(store_root: Path, runs: list[str], out: Path) -> list[Path]:
    """Copy ``runs`` (paths under ``store_root``) into a temporary store, serve it, and write
    ``out/serve-index.png`` (the index) and ``out/serve-timeline.png`` (the first run's
    timeline, an op of its busiest client lane hovered). Returns the two paths."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kraft-chaos-shots-") as tmp:
        root = Path(tmp) / "store"
        for rel in runs:
            shutil.copytree(store_root / rel, root / rel, symlinks=True)
        driver = start_driver()
        try:
            with serving(root) as base:
                driver.get(base + "/")
                index = out / "serve-index.png"
                driver.save_screenshot(str(index))
                driver.get(f"{base}/timeline/{runs[0]}")
                wait_for_timeline(driver)
                busiest = driver.execute_script("""
                    var c = {}; for (var i = 0; i < TL_MODEL.n; i++) c[TL_MODEL.d.lane[i]] = (c[TL_MODEL.d.lane[i]] || 0) + 1;
                    var best = 1; for (var l in c) if (+l > 0 && c[l] > (c[best] || 0)) best = +l; return best;""")
                hover_op(driver, widest_op(driver, busiest))
                timeline = out / "serve-timeline.png"
                driver.save_screenshot(str(timeline))
        finally:
            driver.quit()
    return [index, timeline]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.serve_browser", description=__doc__.split("\n\n")[0])
    p.add_argument("--store", type=Path, default=Path("store"))
    p.add_argument("--out", type=Path, default=Path("docs"))
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="runs under --store, the timeline's first")
    args = p.parse_args(argv)
    for path in screenshots(args.store, args.runs, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
