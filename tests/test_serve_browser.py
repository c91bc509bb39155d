"""``kraft-chaos serve`` in headless Chromium (Debian's chromium and chromium-driver, driven by
Selenium; tests/serve_browser.py): open the index, filter it, open a run, open its timeline
and hover an op, which must show that op's details as the history has them. Also: the pages
log no console errors, the timeline's legend hides ops, the history pages, the sandboxed
linearizability.html draws, and the screenshots are made.

Skipped, with the reason, only when chromium or chromedriver is not installed
(``bash scripts/ensure-chromium.sh`` installs both; ``make test`` runs it)."""
from __future__ import annotations

import json
import re
from urllib.parse import unquote

import pytest

from history import store
from tests import serve_browser as sb
from tests.test_serve import _run

pytestmark = pytest.mark.skipif(sb.missing_reason() is not None, reason=sb.missing_reason() or "")

BAD = "append-partition+kill/20260102T100000.000Z"


@pytest.fixture(scope="module")
def driver():
    d = sb.start_driver()
    yield d
    d.quit()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A small store served on an ephemeral port: 4 runs of 3 tests (valid, invalid with 2
    lost writes and a linearizability.html, unknown, incomplete); yields (base URL, root)."""
    from checkers.linearizability.html import write_html
    from tests.test_linearizability_html import stale_read
    root = tmp_path_factory.mktemp("serve") / "store"
    _run(root, "append-partition+kill", "20260101T100000.000Z", True, seed=11)
    bad = _run(root, "append-partition+kill", "20260102T100000.000Z", False, {"lost-write": 2}, seed=12,
               history_ops=400)
    write_html(stale_read(), bad / "linearizability.html")
    _run(root, "kv-none", "20260103T100000.000Z", "unknown", seed=13, workload="kv")
    _run(root, "append-none", "20260104T100000.000Z", None, seed=14, results=False)
    store.update_latest(root, bad)
    with sb.serving(root) as base:
        yield base, root


def _follow(driver, element) -> None:
    """Click ``element`` (a link or submit button) and wait until the next page has loaded:
    a click returns before the navigation it starts, so reading the page at once may read the
    old one, or none. The old page is marked with a window property that a new document does
    not have; probing the old ``<html>`` element instead (Selenium's ``staleness_of``) races
    the navigation, and Chromium then answers "Node with given id does not belong to the
    document" rather than "stale element", which once failed CI."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait
    driver.execute_script("window.__kraftChaosOldPage = true;")
    element.click()

    def loaded(d) -> bool:
        return d.execute_script(
            "return window.__kraftChaosOldPage === undefined && document.readyState === 'complete';")
    WebDriverWait(driver, 60, ignored_exceptions=(WebDriverException,)).until(loaded)


def _errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _rows(driver) -> list[tuple[str, str]]:
    from selenium.webdriver.common.by import By
    return [(r.get_attribute("data-test"), r.get_attribute("data-verdict"))
            for r in driver.find_elements(By.CSS_SELECTOR, "tr.run")]


def test_index_filter_run_timeline_and_hover(driver, site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    base, root = site
    driver.get(base + "/")
    assert driver.title == "kraft-chaos runs"
    assert sorted(_rows(driver)) == [("append-none", "incomplete"), ("append-partition+kill", "invalid"),
                                     ("append-partition+kill", "valid"), ("kv-none", "unknown")]
    # filter by verdict through the form, then by test as well
    Select(driver.find_element(By.NAME, "verdict")).select_by_value("invalid")
    _follow(driver, driver.find_element(By.CSS_SELECTOR, "form button[type=submit]"))
    assert "verdict=invalid" in driver.current_url
    assert _rows(driver) == [("append-partition+kill", "invalid")]
    assert "lost-write 2" in driver.find_element(By.CSS_SELECTOR, "tr.run").text
    Select(driver.find_element(By.NAME, "verdict")).select_by_value("")
    Select(driver.find_element(By.NAME, "test")).select_by_value("append-partition+kill")
    _follow(driver, driver.find_element(By.CSS_SELECTOR, "form button[type=submit]"))
    assert sorted(v for _, v in _rows(driver)) == ["invalid", "valid"]
    # open the invalid run
    _follow(driver, driver.find_element(By.CSS_SELECTOR, 'tr.run[data-verdict="invalid"] a'))
    assert unquote(driver.current_url) == f"{base}/run/{BAD}"
    assert "invalid" in driver.find_element(By.TAG_NAME, "h2").text
    assert "lost-write: 2" in driver.find_element(By.TAG_NAME, "main").text
    quantiles = driver.find_element(By.CSS_SELECTOR, 'img[alt="latency-quantiles"]')
    driver.execute_script("arguments[0].scrollIntoView()", quantiles)
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return arguments[0].complete", quantiles))
    assert driver.execute_script("return arguments[0].naturalWidth", quantiles) > 100   # drawn on demand
    # the timeline
    _follow(driver, driver.find_element(By.LINK_TEXT, "timeline"))
    sb.wait_for_timeline(driver)
    n, lanes = driver.execute_script("return [TL_MODEL.n, TL_MODEL.d.lanes]")
    history = [json.loads(line) for line in (root / BAD / store.HISTORY).read_text().splitlines()]
    assert lanes[0] == "nemesis" and n == sum(1 for op in history if op["type"] == "invoke")
    assert driver.execute_script("return TL_MODEL.d.faults.length") >= 1
    # hover the longest completed op of process 0: the tip shows that op as the history has it
    i = sb.widest_op(driver, lanes.index("0"))
    inv_index = driver.execute_script("return TL_MODEL.index[arguments[0]]", i)
    invoke = next(op for op in history if op["index"] == inv_index)
    done = next(op for op in history if op["index"] > inv_index and op["process"] == invoke["process"])
    tip = sb.hover_op(driver, i)
    assert tip.splitlines()[0].split() == [invoke["f"], done["type"], "process", "0", "node", invoke["node"]]
    assert f"invoke {invoke['time'] / 1e9:.6f} s (index {inv_index})" in " ".join(tip.split())
    assert f"{done['type']} {done['time'] / 1e9:.6f} s (index {done['index']})" in " ".join(tip.split())
    value = json.dumps(done["value"], separators=(",", ":"))
    assert value[:40] in tip
    assert driver.execute_script("return TL_VIEW.hover") == i
    # moving off the ops hides it
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(driver).move_to_element_with_offset(driver.find_element(By.ID, "tl-overlay"), 0, 0).perform()
    ActionChains(driver).move_by_offset(0, 330).perform()       # below the last lane
    assert not driver.find_element(By.ID, "tl-tip").is_displayed()
    assert _errors(driver) == []


def test_the_legend_hides_ops_from_view_and_hover(driver, site):
    from selenium.webdriver.common.by import By
    base, _ = site
    driver.get(f"{base}/timeline/{BAD}")
    sb.wait_for_timeline(driver)
    lane = driver.execute_script("return TL_MODEL.d.lanes.indexOf('0')")
    i = sb.widest_op(driver, lane)
    typ = driver.execute_script("return TL_MODEL.d.types[TL_MODEL.d.type[arguments[0]]]", i)
    assert sb.hover_op(driver, i)
    box = [b for b in driver.find_elements(By.CSS_SELECTOR, "#tl-legend label") if b.text.strip() == typ][0]
    box.find_element(By.TAG_NAME, "input").click()
    assert sb.hover_op(driver, i) == ""                        # hidden ops are not hovered
    # zoom in with the keyboard and fit again: the view changes and comes back
    span0 = driver.execute_script("return TL_VIEW.t1 - TL_VIEW.t0")
    driver.find_element(By.TAG_NAME, "body").send_keys("+")
    assert driver.execute_script("return TL_VIEW.t1 - TL_VIEW.t0") == pytest.approx(span0 * 0.7)
    driver.find_element(By.ID, "tl-fit").click()
    assert driver.execute_script("return TL_VIEW.t1 - TL_VIEW.t0") == pytest.approx(span0)
    assert _errors(driver) == []


def test_results_history_nodes_and_linearizability_pages(driver, site):
    from selenium.webdriver.common.by import By
    base, _ = site
    driver.get(f"{base}/run/{BAD}")
    _follow(driver, driver.find_element(By.LINK_TEXT, "history (paged)"))
    pages = int(re.search(r"page 1 of (\d+)", driver.find_element(By.CLASS_NAME, "pager").text).group(1))
    assert pages > 2
    _follow(driver, driver.find_element(By.LINK_TEXT, "next ›"))
    assert f"page 2 of {pages} (lines 201–400" in driver.find_element(By.CLASS_NAME, "pager").text
    assert driver.find_element(By.ID, "i200").find_element(By.TAG_NAME, "td").text == "200"
    driver.get(f"{base}/results/{BAD}")
    assert "2 anomalies" in driver.find_element(By.ID, "c-lost-write").find_element(By.XPATH, "..").text
    driver.get(f"{base}/run/{BAD}")
    _follow(driver, driver.find_element(By.LINK_TEXT, "node.log"))
    assert "became leader" in driver.find_element(By.TAG_NAME, "body").text
    driver.get(f"{base}/run/{BAD}")
    _follow(driver, driver.find_element(By.LINK_TEXT, "linearizability"))      # served sandboxed; its JS draws
    assert "INVALID" in driver.title
    assert "cannot be placed" in driver.find_element(By.TAG_NAME, "body").text
    assert _errors(driver) == []


def test_screenshots(site, tmp_path):
    from PIL import Image
    _, root = site
    index, timeline = sb.screenshots(root, [BAD, "kv-none/20260103T100000.000Z"], tmp_path)
    for p in (index, timeline):
        with Image.open(p) as im:
            assert im.size == (sb.WIDTH, sb.HEIGHT)
            assert len(im.convert("RGB").getcolors(1 << 24)) > 20       # drawn, not blank
