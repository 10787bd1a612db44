"""The Dagster UI as a person uses it: dagster-webserver on a temp copy of the local profile,
Debian's Chromium (headless) through chromedriver: the asset catalog lists every group and asset,
one partition of source_rows is materialized from the UI, the run succeeds, screenshots are saved
(the test's tmp dir; docs/img/asset_graph.png with SURROGATE_UPDATE_SCREENSHOT=1); after an edit of
that source's catalog entry (its cap), observed by catalog_sync_sensor as the daemon would record
it, the partition shows Unsynced in the partition view without anyone clicking Observe."""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="Debian's chromium + chromium-driver are not installed (scripts/install_ui_deps.sh installs them)")

REPO = Path(__file__).resolve().parents[2]
PARTITION = "xlam_function_calling"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _profile(tmp: Path) -> Path:
    """The local profile with every path absolute and inside tmp (nothing written to the repo)."""
    prof = yaml.safe_load((REPO / "resources" / "local.yaml").read_text())
    prof["object_store"]["root"] = str(tmp / "store")
    prof["hub"].update(mirror_dir=str(REPO / "fixtures" / "hub"), push_dir=str(tmp / "pushes"))
    for section in (prof.get("phases") or {}).values():
        for k, v in list(section.items()):
            if k.endswith("_dir") and isinstance(v, str) and v.startswith("var/"):
                section[k] = str(tmp / v)
    path = tmp / "local.yaml"
    path.write_text(yaml.safe_dump(prof))
    return path


@pytest.fixture(scope="module")
def webserver(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ui")
    home = tmp / "dagster_home"
    home.mkdir()
    # Runs launched from the UI start at once (the default queued coordinator needs a daemon).
    (home / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\n"
        "run_coordinator:\n  module: dagster._core.run_coordinator\n  class: DefaultRunCoordinator\n")
    # As `make run` leaves it: every source's entry observed (hf_revisions), so the partitions the UI
    # materializes read a data version of their entry.
    from dagster import DagsterInstance

    from surrogate_dagster.resources import HubResource
    from surrogate_dagster.sources.revisions import record_revision_observations

    hub = HubResource(mode="offline", mirror_dir=str(REPO / "fixtures" / "hub"), push_dir=str(tmp / "pushes"),
                      org="axentx")
    with DagsterInstance.from_config(str(home)) as instance:
        assert not record_revision_observations(instance, hub.get_client()).failed
    env = {**os.environ, "DAGSTER_HOME": str(home), "SURROGATE_PROFILE": str(_profile(tmp))}
    port = _free_port()
    exe = Path(sys.executable).with_name("dagster-webserver")
    log = open(tmp / "webserver.log", "w")
    proc = subprocess.Popen([str(exe), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
                            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/server_info", timeout=2)
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"dagster-webserver exited: {(tmp / 'webserver.log').read_text()[-3000:]}")
            time.sleep(1)
    else:
        proc.terminate()
        pytest.fail("dagster-webserver did not answer within 120 s")
    yield url, tmp, env
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1600,1800"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _until(fn, timeout: float = 30, what: str = "condition"):
    """Retry `fn` (DOM re-renders make elements stale) until it returns truthy."""
    from selenium.common.exceptions import WebDriverException

    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            out = fn()
            if out:
                return out
        except WebDriverException as e:
            last = e
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last.msg})" if last else ""))


def _click(driver, text: str, timeout: float = 30) -> None:
    from selenium.webdriver.common.by import By

    def go():
        _skip_survey(driver)  # it may pop up at any time during the first minute
        for b in driver.find_elements(By.XPATH, f"//button[normalize-space()='{text}']"):
            if b.is_displayed() and b.is_enabled():
                b.click()
                return True
        return False
    _until(go, timeout, f"button {text!r}")


def _skip_survey(driver) -> None:
    """Dagster's first-visit dialogs (a survey, a newsletter) close with their Skip button."""
    from selenium.webdriver.common.by import By

    from selenium.common.exceptions import WebDriverException

    for b in driver.find_elements(By.XPATH, "//button[normalize-space()='Skip']"):
        try:
            if b.is_displayed():
                b.click()
        except WebDriverException:
            pass  # covered by another dialog or gone: the next attempt sees the page as it is then


def _dismiss_popups(driver) -> None:
    """Best effort: close first-visit dialogs (later clicks retry if one comes back)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    deadline = time.monotonic() + 15
    time.sleep(2)  # the first-visit survey pops up after the page loads
    while time.monotonic() < deadline:
        _skip_survey(driver)
        if not [e for e in driver.find_elements(By.CSS_SELECTOR, ".bp5-overlay-backdrop") if e.is_displayed()]:
            return
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
        time.sleep(0.5)


def _expected():
    """Groups and asset names of the code location, loaded the way the webserver loads it."""
    from surrogate_dagster.definitions import defs

    graph = defs.resolve_asset_graph()
    keys = graph.materializable_asset_keys | graph.observable_asset_keys
    return {graph.get(k).group_name for k in keys}, {k.to_user_string() for k in keys}


def test_catalog_lists_every_group_and_asset(webserver, browser):
    from selenium.webdriver.common.by import By

    url, tmp, env = webserver
    os.environ["SURROGATE_PROFILE"], saved = env["SURROGATE_PROFILE"], os.environ.get("SURROGATE_PROFILE")
    try:
        groups, names = _expected()
    finally:
        os.environ.pop("SURROGATE_PROFILE") if saved is None else os.environ.__setitem__("SURROGATE_PROFILE", saved)
    browser.get(url + "/assets")
    _dismiss_popups(browser)
    text = _until(lambda: (t := browser.find_element(By.TAG_NAME, "body").text) and "source_rows" in t and t,
                  60, "the asset catalog")
    # The catalog is a virtualized list: only rows in view are in the DOM, so scroll every
    # scrollable element down step by step and collect what appears.
    lines = set(text.splitlines())
    stale = 0
    for _ in range(80):
        before = len(lines)
        browser.execute_script(
            "document.querySelectorAll('*').forEach(e => {"
            " if (e.scrollHeight > e.clientHeight + 10) { e.scrollTop += 400; } });"
            "window.scrollBy(0, 400);")
        time.sleep(0.3)
        lines |= set(browser.find_element(By.TAG_NAME, "body").text.splitlines())
        stale = stale + 1 if len(lines) == before else 0
        if names <= lines or stale >= 6:
            break
    assert names <= lines, f"missing assets in the UI: {sorted(names - lines)}"
    assert groups <= lines, f"missing groups in the UI: {sorted(groups - lines)}"


def test_materialize_one_partition_from_the_ui(webserver, browser):
    from dagster import AssetKey, AssetRecordsFilter, DagsterInstance
    from selenium.webdriver.common.by import By

    url, tmp, env = webserver
    browser.get(url + "/assets/source_rows")
    _dismiss_popups(browser)
    _click(browser, "Materialize…", 60)
    # "Custom" partition selection: open the picker, filter, pick the partition.
    def open_picker():
        _skip_survey(browser)
        for e in browser.find_elements(By.XPATH, "//div[contains(@class,'TagSelector_placeholder')]"):
            if e.is_displayed():
                browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", e)
                e.click()
                return True
        return False
    _until(open_picker, 30, "the partition picker")
    box = _until(lambda: [i for i in browser.find_elements(By.XPATH, "//input[@placeholder='Filter partitions']")
                          if i.is_displayed()], 30, "the partition filter")[0]
    box.send_keys(PARTITION)
    _until(lambda: [e.click() or True for e in browser.find_elements(
        By.XPATH, f"//span[normalize-space()='{PARTITION}']") if e.is_displayed()][:1], 30, "the partition item")
    _until(lambda: browser.find_elements(By.XPATH, "//button[normalize-space()='Launch 1 run']"), 30,
           "one partition selected")
    browser.save_screenshot(str(tmp / "launch_dialog.png"))
    _click(browser, "Launch 1 run", 30)

    # The run is launched by the webserver (code server subprocess); wait for its success.
    home = Path(env["DAGSTER_HOME"])
    with DagsterInstance.from_config(str(home)) as instance:
        rec = _until(lambda: instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey("source_rows"), asset_partitions=[PARTITION]), limit=1).records,
            180, "the materialization of source_rows[xlam_function_calling]")[0]
        run = instance.get_run_by_id(rec.run_id)
        _until(lambda: instance.get_run_by_id(rec.run_id).is_finished, 60, "the run to finish")
        assert instance.get_run_by_id(rec.run_id).status.value == "SUCCESS"
    assert run.tags.get("dagster/partition") == PARTITION
    assert (tmp / "store" / "raw" / PARTITION).is_dir()

    # As a person checks it: the run page says Success; then the lineage graph, saved as a screenshot.
    browser.get(f"{url}/runs/{rec.run_id}")
    _until(lambda: "Success" in browser.find_element(By.TAG_NAME, "body").text, 60, "the run page to say Success")
    browser.get(url + "/asset-groups")
    _dismiss_popups(browser)
    time.sleep(5)
    browser.save_screenshot(str(tmp / "lineage_loading.png"))
    # The global lineage opens with groups collapsed: sources -> curation -> ...
    _until(lambda: {"sources", "curation"} <= set(browser.find_element(By.TAG_NAME, "body").text.split()),
           60, "the lineage graph")
    time.sleep(3)  # let the graph layout settle before the picture
    shot = tmp / "asset_graph.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if os.environ.get("SURROGATE_UPDATE_SCREENSHOT") == "1":  # refresh the README's picture
        (REPO / "docs" / "img").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, REPO / "docs" / "img" / "asset_graph.png")


def test_an_edited_entry_shows_unsynced_in_the_partition_view(webserver, browser):
    """Runs after the UI materialized the partition: the cap edit reaches it as a new data version."""
    from dagster import DagsterInstance, SensorResult, build_sensor_context
    from selenium.webdriver.common.by import By

    from surrogate_dagster.resources import HubResource
    from surrogate_dagster.sources.assets import CATALOG
    from surrogate_dagster.sources.revisions import catalog_sync_sensor

    url, tmp, env = webserver
    hub = HubResource(mode="offline", mirror_dir=str(REPO / "fixtures" / "hub"), push_dir=str(tmp / "pushes"),
                      org="axentx")
    page = f"{url}/assets/source_rows?view=partitions&partition={PARTITION}"
    with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        def sync():
            res = catalog_sync_sensor(build_sensor_context(instance=instance, resources={"hub": hub}))
            for ev in res.asset_events if isinstance(res, SensorResult) else ():
                instance.report_runless_asset_event(ev)  # what the daemon does with a sensor's events
            return res

        assert not isinstance(sync(), SensorResult)  # every entry observed as it is: nothing to record
        browser.get(page)
        _dismiss_popups(browser)
        _until(lambda: "Materialized" in browser.find_element(By.TAG_NAME, "body").text, 60, "the partition view")
        assert "Unsynced" not in browser.find_element(By.TAG_NAME, "body").text
        i = next(i for i, s in enumerate(CATALOG.sources) if s.name == PARTITION)
        old = CATALOG.sources[i]
        CATALOG.sources[i] = old.model_copy(update={"cap": (old.cap or 1000) - 1})  # the one-line edit
        try:
            res = sync()
        finally:
            CATALOG.sources[i] = old
        assert [e.partition for e in res.asset_events] == [PARTITION]
    browser.get(page)
    _dismiss_popups(browser)
    _until(lambda: "Unsynced" in browser.find_element(By.TAG_NAME, "body").text, 60,
           "the partition view to say Unsynced")
    browser.save_screenshot(str(tmp / "partition_unsynced.png"))


PLOTTED = "ling_coder_sft"  # a code source whose filter drops rows and scores the code it keeps
CHAIN = ["source_rows", "normalized_rows", "sanitized_rows", "filtered_rows"]
LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""


def _launch(url: str, assets: list[str], partition: str | None) -> str:
    """A run launched the way the Materialize button launches it (the asset job, the partition as tag)."""
    import json

    params = {"selector": {"repositoryLocationName": "surrogate_dagster.definitions", "repositoryName": "__repository__",
                           "jobName": "__ASSET_JOB", "assetSelection": [{"path": [a]} for a in assets]},
              "mode": "default", "runConfigData": "{}",
              "executionMetadata": {"tags": [{"key": "dagster/partition", "value": partition}] if partition else []}}
    req = urllib.request.Request(url + "/graphql", data=json.dumps({"query": LAUNCH, "variables": {"p": params}}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        out = json.load(resp)["data"]["launchRun"]
    assert out["__typename"] == "LaunchRunSuccess", out
    return out["run"]["runId"]


def test_plots_render_on_the_asset_pages(webserver, browser):
    """The pictures people look at, where they look: on a partition's page, the filter's drop reasons
    and edu-score histogram open from their metadata rows as images (the chain launched from the
    UI's asset job, as the Materialize button launches it)."""
    from dagster import DagsterInstance
    from selenium.webdriver.common.by import By

    url, tmp, env = webserver
    with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        for assets, pk in ((["eval_canaries"], None), (["helper_rows"], None), (CHAIN, PLOTTED)):
            parts = [pk] if pk or assets != ["helper_rows"] else _helper_partitions()
            for p in parts:
                run_id = _launch(url, assets, p)
                run = _until(lambda: (r := instance.get_run_by_id(run_id)) and r.is_finished and r, 300,
                             f"the run of {assets}[{p}]")
                assert run.status.value == "SUCCESS", (assets, p, (tmp / "webserver.log").read_text()[-3000:])
    for asset, plots in (("filtered_rows", ["dropped_by_reason_plot", "edu_score_plot"]),):
        browser.get(f"{url}/assets/{asset}?view=partitions&partition={PLOTTED}")
        _dismiss_popups(browser)
        _until(lambda: plots[0] in browser.find_element(By.TAG_NAME, "body").text, 60, f"{asset}'s metadata")
        browser.save_screenshot(str(tmp / f"{asset}_metadata.png"))
        for key in plots:
            def open_markdown():
                from selenium.common.exceptions import WebDriverException

                _dismiss_popups(browser)  # the first-visit dialogs cover the page for a while
                rows = [r for r in browser.find_elements(By.XPATH, f"//tr[.//*[normalize-space()='{key}']]")
                        if r.is_displayed()]
                links = rows[0].find_elements(By.XPATH, ".//*[normalize-space()='[Show Markdown]']"
                                                        "[not(*[normalize-space()='[Show Markdown]'])]") if rows else []
                if not links:
                    return False
                browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", links[0])
                try:
                    links[0].click()
                except WebDriverException:
                    return False
                return True
            _until(open_markdown, 60, f"the {key} row's [Show Markdown]")
            img = _until(lambda: [i for i in browser.find_elements(By.XPATH, "//img[starts-with(@src, 'data:image/png')]")
                                  if i.is_displayed()],
                         30, f"the {key} image")[0]
            assert browser.execute_script("return arguments[0].naturalWidth", img) > 100, key
            browser.save_screenshot(str(tmp / f"{asset}_{key}.png"))
            _click(browser, "Close", 30)
            _until(lambda: not [i for i in browser.find_elements(By.XPATH, "//img[starts-with(@src, 'data:image/png')]")
                                if i.is_displayed()], 30, f"the {key} dialog to close")


def _helper_partitions() -> list[str]:
    from surrogate_dagster.definitions import defs
    from dagster import AssetKey

    pdef = defs.resolve_asset_graph().get(AssetKey("helper_rows")).partitions_def
    return pdef.get_partition_keys() if pdef else [None]
