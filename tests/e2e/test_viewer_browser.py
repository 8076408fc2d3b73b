"""Tier: e2e (daemons, the CLI and a real browser: Debian's headless chromium through chromedriver,
driven by Selenium; nothing downloaded at test time).

`memsync ui` against two running daemons on one hub: log in with the printed link; search finds a
planted memory; a memory holding `<script>` shows as text and runs nothing; forget from its page
removes it from the hub and the index; approve from the page resolves the approval an agent waits
on; the fleet page turns a stopped site offline without a reload; requests without the session or
the CSRF value are refused. A memory's page (the second test): a link shows with its reason; pin
then unpin changes the page; unmerge from a dream step (`memsync dream` run first) restores the
member; the outcome filter narrows a search; a saved memory's type and tags are corrected from the
page and reach the hub; actions without the CSRF value are refused; a linked memory's `<script>`
task runs nothing. With ``VIEWER_SCREENSHOTS=DIR`` it saves each page there
(``make screenshots`` writes docs/images)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import AgentProcess, SiteFiles, episode, hub_episodes, memsync, stop_daemon, wait_for, wait_started
from harness import start_viewer, stop_viewer
from harness.dream_store import push_texts
from harness.site import write_config

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="the browser test needs Debian's chromium and chromium-driver packages (apt-get install chromium "
    "chromium-driver)",
)

PLANTED = "the zanzibar quokka migration moved billing to the new scheduler"
HOSTILE_TASK = "<script>document.title='pwned'</script> hostile note"
HOSTILE_TEXT = "<img src=x onerror=\"document.title='pwned-img'\"> and <b>bold</b> words quokkahostile"
VIEWER = """
[ui]
user = "ana"

[[collaborators]]
name = "ana"
chat_id = "1001"
permissions = ["approve"]
"""
FAST_JOBS = """
[jobs]
heartbeat_interval = 1
stale_after = 3

[jobs.mark-stale-agents]
every = 1
lease = 5
"""


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1280,1000")
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium'}")
    # Selenium Manager stays offline: the driver and the browser are the system's.
    os.environ["SE_OFFLINE"] = "true"
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver: Any, name: str, whole: bool = False) -> None:
    """The page as shown, or ``whole`` (the window made as tall as the page, then put back)."""
    folder = os.environ.get("VIEWER_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        size = driver.get_window_size()
        if whole:
            height = int(driver.execute_script("return document.documentElement.scrollHeight"))
            driver.set_window_size(size["width"], min(height + 40, 4000))
        driver.save_screenshot(str(Path(folder) / f"viewer-{name}.png"))
        driver.set_window_size(size["width"], size["height"])


def main_text(driver: Any) -> str:
    """The page's main text; "" while a new page replaces the old one."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        return str(driver.find_element(By.TAG_NAME, "main").text)
    except (NoSuchElementException, StaleElementReferenceException):
        return ""


def found_by_cli(site: SiteFiles, query: str) -> bool:
    done = memsync("search", query, "--mode", "bm25", "--all", "--json", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    return any(query in str(r.get("text")) for r in json.loads(done.stdout)["results"])


def test_the_viewer_in_a_real_browser(
    tmp_path: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Callable[..., subprocess.Popen[bytes]],
    browser: Any,
) -> None:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    hub = tmp_path / "hub.db"
    laptop_db, vm_db = tmp_path / "laptop.db", tmp_path / "vm.db"
    agent = agents(laptop_db)
    for i in range(3):
        agent.store(episode(i, sessionId="s-plant"))
    agent.store(episode(3, sessionId="s-plant", task="billing migration", output=PLANTED))
    agent.store(episode(4, sessionId="s-plant", task=HOSTILE_TASK, output=HOSTILE_TEXT))
    agent.close()
    other = agents(vm_db)
    other.store(episode(0))
    other.close()
    laptop = write_config(
        tmp_path / "laptop", "laptop", laptop_db, hub, warm="enabled = true", extra=VIEWER + FAST_JOBS
    )
    vm = write_config(tmp_path / "vm", "vm", vm_db, hub, extra=FAST_JOBS)
    procs = {}
    for site in (laptop, vm):
        procs[site.name] = daemons(site.config, site.log)
        wait_started(site, procs[site.name], site.log)
    wait_for(lambda: found_by_cli(laptop, "zanzibar"), timeout=120, interval=0.5, what="the planted memory indexed")
    wait_for(lambda: found_by_cli(laptop, "quokkahostile"), timeout=60, interval=0.5, what="the hostile one indexed")

    # An agent on the vm asks and waits, as a hook does.
    asked = memsync("approval", "request", "--category", "deploy", "--summary", "ship the quokka", "-c", str(vm.config))
    assert asked.returncode == 0, asked.stderr
    approval_id = asked.stdout.strip()
    waiting = subprocess.Popen(
        [sys.executable, "-m", "daemon", "approval", "wait", approval_id, "--timeout", "240", "-c", str(vm.config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    ui, login = start_viewer(laptop.config, tmp_path / "ui.log")
    base = login.split("/login")[0]
    try:
        # Nothing without the session; the login link works once.
        assert httpx.get(base + "/").status_code == 401
        browser.get(login)
        assert browser.current_url == base + "/"
        assert httpx.get(login, follow_redirects=False).status_code == 401
        session = browser.get_cookie("memsync_session")
        assert session is not None
        assert session["httpOnly"] is True
        assert session["sameSite"] == "Strict"
        assert "memsync_session" not in str(browser.execute_script("return document.cookie"))

        # Search finds the planted memory; why it ranked is said.
        box = browser.find_element(By.NAME, "q")
        box.send_keys("zanzibar quokka")
        box.submit()
        WebDriverWait(browser, 30).until(lambda d: "zanzibar" in d.find_element(By.CSS_SELECTOR, "ol.results").text)
        first = browser.find_element(By.CSS_SELECTOR, "li.result")
        assert PLANTED[:40] in first.text
        assert "relevance" in first.find_element(By.CSS_SELECTOR, ".why").text
        shot(browser, "memory")

        # The hostile memory shows as text and runs nothing.
        browser.get(base + "/?q=quokkahostile&mode=bm25")
        hit = browser.find_element(By.CSS_SELECTOR, "li.result")
        assert "<script>document.title='pwned'</script>" in hit.text
        assert "<img src=x" in hit.text
        assert "pwned" not in browser.title
        assert browser.find_elements(By.CSS_SELECTOR, "li.result img, li.result b, main script") == []
        hit.find_element(By.CSS_SELECTOR, "a.title").click()
        WebDriverWait(browser, 30).until(lambda d: "/memory/laptop/" in d.current_url)
        assert "pwned" not in browser.title
        assert HOSTILE_TEXT in browser.find_element(By.CSS_SELECTOR, "pre.whole").text
        neighbours = browser.find_elements(By.CSS_SELECTOR, "ol.neighbours li")
        assert len(neighbours) >= 2  # its session's episodes before it, and itself
        hostile_key = browser.current_url.rsplit("/", 1)[1]

        # A POST without the CSRF value, with the browser's own session, is refused.
        cookies = {"memsync_session": session["value"]}
        refused = httpx.post(f"{base}/memory/laptop/{hostile_key}/forget", data={"confirm": "yes"}, cookies=cookies)
        assert refused.status_code == 403
        assert ("laptop", hostile_key) in {(e["sourceSite"], e["sourceId"]) for e in hub_episodes(hub)}

        # The planted memory's page, then forget it from there.
        browser.get(base + "/?q=zanzibar+quokka")
        browser.find_element(By.CSS_SELECTOR, "li.result a.title").click()
        WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "pre.whole"))
        assert PLANTED in browser.find_element(By.CSS_SELECTOR, "pre.whole").text
        planted_key = browser.current_url.rsplit("/", 1)[1]
        browser.find_element(By.NAME, "confirm").click()
        browser.find_element(By.CSS_SELECTOR, "section.danger button").click()
        WebDriverWait(browser, 90).until(lambda d: "forgotten" in main_text(d))
        said = browser.find_element(By.TAG_NAME, "main").text
        assert f"forgotten: laptop:{planted_key}: removed from the hub file" in said
        assert "search index on laptop: purged" in said
        assert ("laptop", planted_key) not in {(e["sourceSite"], e["sourceId"]) for e in hub_episodes(hub)}
        assert not found_by_cli(laptop, "zanzibar")
        assert b"zanzibar" not in b"".join(p.read_bytes() for p in tmp_path.glob("hub.db*"))

        # Approve from the page: the agent's wait ends approved.
        browser.get(base + "/approvals")
        item = browser.find_element(By.CSS_SELECTOR, f'li[data-approval="{approval_id}"]')
        assert "ship the quokka" in item.text
        shot(browser, "approvals")
        item.find_element(By.CSS_SELECTOR, "button.approve").click()
        WebDriverWait(browser, 30).until(lambda d: "approved by ana" in main_text(d))
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0, err
        assert "approved by ana" in out + err

        browser.get(base + "/digest")
        assert "today so far" in browser.find_element(By.TAG_NAME, "h2").text
        shot(browser, "digest")

        # The fleet: both online; the vm stops and turns offline on the open page, with no reload.
        browser.get(base + "/fleet")
        row = 'tr[data-site="vm"]'
        # The live updates replace the rows: a row found may be gone when read, so read it again.
        stale = (StaleElementReferenceException,)
        WebDriverWait(browser, 30, ignored_exceptions=stale).until(
            lambda d: "online" in (d.find_element(By.CSS_SELECTOR, row).get_attribute("class") or "")
        )
        shot(browser, "fleet")
        browser.execute_script("window.stillThisPage = true;")
        assert stop_daemon(procs["vm"]) == 0
        WebDriverWait(browser, 90, poll_frequency=0.5, ignored_exceptions=stale).until(
            lambda d: "offline" in (d.find_element(By.CSS_SELECTOR, row).get_attribute("class") or "")
        )
        assert browser.execute_script("return window.stillThisPage === true;")
        assert browser.find_element(By.CSS_SELECTOR, "#fleet-live").get_attribute("data-updated")
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate()
        stop_viewer(ui)


# A memory's page, its sections and its actions. The duplicate pair is the dream test's (same fix,
# same identifiers and numbers: folded), pushed by another site two hours ago (the dream leaves
# memories younger than an hour alone); the outcome pair shares its words but not how it went.
DUPLICATES = (
    "Fixed E11000 duplicate key in users.insert by adding a unique index check",
    "E11000 duplicate key on users.insert: fixed it with a unique index check",
)
LINKED_HOSTILE = "<script>document.title='pwned-link'</script> second step of the okapi checklist"
OUTCOMES = (
    ("the okapi ledger replay finished cleanly after the index rebuild", True),
    ("the okapi ledger replay died: the replica's disk was full", False),
)
SAVED = "the okapi billing cron runs at 02:00 UTC on the worker"


def keys_found(site: SiteFiles, query: str) -> set[str]:
    """The memories `memsync search` shows by default (what the dream hides is not among them)."""
    done = memsync("search", query, "--mode", "bm25", "--all", "--json", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    return {f"{r['sourceSite']}:{r['sourceId']}" for r in json.loads(done.stdout)["results"]}


def pinned_by_cli(site: SiteFiles, key: str) -> bool:
    done = memsync("uses", key, "--json", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    return bool(json.loads(done.stdout)[0]["pinned"])


def test_a_memorys_sections_and_actions_in_a_real_browser(
    tmp_path: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Callable[..., subprocess.Popen[bytes]],
    browser: Any,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    hub = tmp_path / "hub.db"
    db = tmp_path / "laptop.db"
    push_texts(hub, "notes", DUPLICATES, int(time.time()) - 7200)
    agent = agents(db)
    agent.store(episode(0, sessionId="s-check", task="first step of the okapi checklist", success=True))  # id 1
    agent.store(episode(1, sessionId="s-check", task=LINKED_HOSTILE, success=True))  # id 2
    for n, (task, went) in enumerate(OUTCOMES, 2):  # ids 3, 4
        agent.store(episode(n, sessionId=f"s-out-{n}", task=task, success=went))
    agent.close()
    laptop = write_config(tmp_path / "laptop", "laptop", db, hub, warm="enabled = true", extra=VIEWER)
    config = ("--config", str(laptop.config))
    saved = memsync("remember", SAVED, "--type", "warning", "--tag", "ops", "--project", "okapi", "--json", *config)
    assert saved.returncode == 0, saved.stderr
    assert json.loads(saved.stdout)["key"] == "laptop:m1"
    proc = daemons(laptop.config, laptop.log)
    wait_started(laptop, proc, laptop.log)
    pair = {"notes:1", "notes:2"}
    wait_for(lambda: pair <= keys_found(laptop, "E11000"), timeout=120, interval=0.5, what="the pair indexed")
    wait_for(lambda: "laptop:m1" in keys_found(laptop, "okapi billing cron"), timeout=60, what="the saved memory")

    # The dream, through the CLI, folds the pair; the member leaves default results.
    dreamt = memsync("dream", *config)
    assert dreamt.returncode == 0, dreamt.stderr
    listed = memsync("dream", "steps", "--memory", "notes#1", "--json", *config)
    assert listed.returncode == 0, listed.stderr
    (step,) = json.loads(listed.stdout)
    canonical, (member,) = step["canonical"], step["members"]
    assert {canonical, member} == pair
    wait_for(lambda: member not in keys_found(laptop, "E11000"), timeout=60, what="the member hidden")

    ui, login = start_viewer(laptop.config, tmp_path / "ui.log")
    base = login.split("/login")[0]
    try:
        browser.get(login)
        session = browser.get_cookie("memsync_session")
        assert session is not None
        cookies = {"memsync_session": session["value"]}

        # A link with its reason; the linked memory's <script> task is text.
        browser.get(base + "/memory/laptop/1")
        links = browser.find_element(By.CSS_SELECTOR, "ul.links")
        led = links.find_element(By.CSS_SELECTOR, 'li.link[data-kind="led_to"]')
        assert "came next in its session" in led.text
        assert "laptop:2" in led.text
        assert "<script>document.title='pwned-link'</script>" in led.text
        assert "pwned" not in browser.title
        assert browser.find_elements(By.CSS_SELECTOR, "main script") == []

        # Pin, then unpin: the page says so, and `memsync uses` agrees.
        browser.find_element(By.CSS_SELECTOR, "button.pin").click()
        WebDriverWait(browser, 30).until(lambda d: "pinned by ana" in main_text(d))
        assert "pinned: its salience never decays" in main_text(browser)
        assert pinned_by_cli(laptop, "laptop:1")
        # Without the CSRF value, nothing is unpinned, unmerged or corrected.
        for action, form in (("pin", {"pinned": "no"}), ("unmerge", {"step": step["id"]})):
            refused = httpx.post(f"{base}/memory/{canonical.replace(':', '/')}/{action}", data=form, cookies=cookies)
            assert refused.status_code == 403
        refused = httpx.post(f"{base}/memory/laptop/1/pin", data={"pinned": "no"}, cookies=cookies)
        assert refused.status_code == 403
        assert pinned_by_cli(laptop, "laptop:1")
        refused = httpx.post(f"{base}/memory/laptop/m1/retag", data={"type": "decision"}, cookies=cookies)
        assert refused.status_code == 403
        browser.find_element(By.CSS_SELECTOR, "button.unpin").click()
        WebDriverWait(browser, 30).until(lambda d: "not pinned" in main_text(d))
        assert not pinned_by_cli(laptop, "laptop:1")

        # The canonical's page names the step; unmerge restores the member everywhere.
        browser.get(f"{base}/memory/{canonical.replace(':', '/')}")
        steps = browser.find_element(By.CSS_SELECTOR, f'li.step[data-step="{step["id"]}"]')
        assert f"this memory consolidated {member}" in steps.text
        shot(browser, "memory-page", whole=True)
        steps = browser.find_element(By.CSS_SELECTOR, f'li.step[data-step="{step["id"]}"]')
        steps.find_element(By.CSS_SELECTOR, "button.unmerge").click()
        WebDriverWait(browser, 30).until(lambda d: "undone: step" in main_text(d))
        assert f"{member} shown again" in main_text(browser)
        assert "undone by ana" in main_text(browser)
        wait_for(lambda: member in keys_found(laptop, "E11000"), timeout=60, what="the member shown again")

        # The outcome filter narrows a search, through the form.
        browser.get(base + "/?q=okapi+ledger+replay&mode=bm25&all=1")
        listed_all = main_text(browser)
        assert "finished cleanly" in listed_all
        assert "disk was full" in listed_all
        Select(browser.find_element(By.NAME, "outcome")).select_by_value("failure")
        browser.find_element(By.CSS_SELECTOR, "form.search button").click()
        WebDriverWait(browser, 30).until(lambda d: "outcome=failure" in d.current_url)
        (only,) = browser.find_elements(By.CSS_SELECTOR, "li.result")
        assert "disk was full" in only.text

        # The saved memory's type and tags corrected from its page: the hub and the page show them.
        browser.get(base + "/memory/laptop/m1")
        assert "warning (given)" in browser.find_element(By.CSS_SELECTOR, "dd.type").text
        Select(browser.find_element(By.NAME, "type")).select_by_value("decision")
        tags = browser.find_element(By.NAME, "tags")
        tags.clear()
        tags.send_keys("billing, cron")
        browser.find_element(By.CSS_SELECTOR, "button.retag").click()
        WebDriverWait(browser, 30).until(lambda d: "corrected laptop:m1" in main_text(d))
        assert "type decision (was warning)" in main_text(browser)

        def corrected_in_hub() -> bool:
            (held,) = [e for e in hub_episodes(hub) if e["sourceId"] == "m1"]
            corrected = (held["metadata"].get("memory_type"), held["tags"])
            return corrected == ("decision", ["billing", "cron", "project:okapi"])

        wait_for(corrected_in_hub, timeout=90, interval=0.5, what="the correction on the hub")

        def page_corrected() -> bool:
            browser.get(base + "/memory/laptop/m1")
            return "decision (given)" in browser.find_element(By.CSS_SELECTOR, "dd.type").text

        wait_for(page_corrected, timeout=60, interval=1, what="the correction in the index")
        assert "billing, cron, project:okapi" in main_text(browser)
    finally:
        stop_viewer(ui)
