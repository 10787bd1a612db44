"""Inputs pinned: the catalog refuses moving refs, pin-revisions rewrites one line, a pin is not
part of the sources' code version, and scheduled re-curation is off unless a profile turns it on."""

from __future__ import annotations

import re

import pytest
from dagster import DefaultScheduleStatus, DefaultSensorStatus

from surrogate_dagster.catalog import CatalogError, load_profile, load_sources
from surrogate_dagster.catalog.pins import OFFLINE_NOTE, catalog_entries, pin_sources, set_revision
from surrogate_dagster.cli import main as cli_main
from surrogate_dagster.hub.client import OfflineHub
from surrogate_dagster.operations import OPS_SCHEDULES, OPS_SENSORS, ops_schedules, ops_sensors
from surrogate_dagster.operations.schedules import recuration_enabled
from surrogate_dagster.paths import ASSETS_DIR, FIXTURES_DIR

SHA = re.compile(r"^[0-9a-f]{40}$")
ENTRY = ("sources:\n  - name: {name}\n    family: dpo\n    hf_id: org/{name}\n    adapter: x\n"
         "{revision}")


def _write(tmp_path, text):
    p = tmp_path / "sources.yaml"
    p.write_text(text)
    return p


# ------------------------------------------------------------------ the catalog refuses moving refs

@pytest.mark.parametrize("revision", ["main", "refs/pr/5", "dev"])
def test_moving_ref_is_refused_naming_the_source(tmp_path, revision):
    p = _write(tmp_path, ENTRY.format(name="moving_src", revision=f"    revision: {revision}\n"))
    with pytest.raises(CatalogError) as e:
        load_sources(p)
    msg = str(e.value)
    assert f"source 'moving_src' (org/moving_src): revision '{revision}' is a moving ref" in msg
    assert "pin-revisions --source moving_src" in msg


def test_missing_revision_is_a_moving_ref(tmp_path):
    with pytest.raises(CatalogError, match="source 'no_rev'.*'main' is a moving ref"):
        load_sources(_write(tmp_path, ENTRY.format(name="no_rev", revision="")))


def test_every_shipped_entry_is_pinned():
    cat = load_sources()
    entries = [*cat.sources, *cat.helpers]
    assert len(entries) == 26
    assert all(SHA.match(s.revision) for s in entries), [s.name for s in entries if not SHA.match(s.revision)]


def test_offline_pins_are_marked_and_match_the_mirror():
    """A pin taken from the offline mirror says so on its line, and is that mirror's head."""
    text = (ASSETS_DIR / "sources.yaml").read_text()
    hub = OfflineHub(FIXTURES_DIR / "hub", "/tmp/unused-pushes", "axentx")
    marked = [line for line in text.splitlines() if OFFLINE_NOTE in line]
    assert len(marked) == 18  # 14 sources + 4 helpers had no documented pin
    for name, entry in catalog_entries(text).items():
        assert hub.current_revision(entry["hf_id"], "main") == entry["revision"], name


# ------------------------------------------------------------------ pin-revisions rewrites one line

YAML = """\
# header comment
sources:
  - name: alpha
    family: dpo
    hf_id: org/alpha  # gated
    revision: main  # track main
    cap: 5  # a ceiling
    adapter: x

  # ---- section comment
  - name: beta
    family: dpo
    hf_id: org/beta
    adapter: x
helpers:
  - name: gamma
    family: helper
    hf_id: org/gamma
"""


def test_set_revision_changes_one_line_and_keeps_comments():
    out = set_revision(YAML, "alpha", "a" * 40)
    diff = [(a, b) for a, b in zip(YAML.splitlines(), out.splitlines()) if a != b]
    assert diff == [("    revision: main  # track main", f"    revision: {'a' * 40}  # track main")]
    out = set_revision(out, "alpha", "b" * 40, note="moved")
    assert f"    revision: {'b' * 40}  # moved" in out.splitlines()


def test_set_revision_inserts_after_hf_id():
    out = set_revision(YAML, "beta", "c" * 40, note="n")
    lines = out.splitlines()
    i = lines.index("    hf_id: org/beta")
    assert lines[i + 1] == f"    revision: {'c' * 40}  # n"
    assert len(lines) == len(YAML.splitlines()) + 1
    out = set_revision(YAML, "gamma", "d" * 40)
    assert out.endswith(f"    hf_id: org/gamma\n    revision: {'d' * 40}\n")
    with pytest.raises(ValueError, match="not a 40-hex"):
        set_revision(YAML, "beta", "main")
    with pytest.raises(KeyError, match="nope"):
        set_revision(YAML, "nope", "c" * 40)


class _Hub:
    def __init__(self):
        self.calls = []

    def current_revision(self, hf_id, ref="main"):
        self.calls.append((hf_id, ref))
        return {"org/alpha": "1" * 40, "org/beta": "2" * 40, "org/gamma": "3" * 40}[hf_id]


def test_pin_sources_pins_every_unpinned_entry(tmp_path):
    p = _write(tmp_path, YAML)
    hub = _Hub()
    changes = pin_sources(p, hub, offline=True)
    assert [(c.name, c.new) for c in changes] == [("alpha", "1" * 40), ("beta", "2" * 40), ("gamma", "3" * 40)]
    text = p.read_text()
    assert text.count(OFFLINE_NOTE) == 3 and "# header comment" in text and "# ---- section comment" in text
    assert pin_sources(p, hub) == []  # nothing left to pin
    # Moving one pin: only that line changes.
    hub_calls = len(hub.calls)
    before = p.read_text().splitlines()
    changes = pin_sources(p, hub, ["beta"], ref="refs/pr/5")
    assert hub.calls[hub_calls:] == [("org/beta", "refs/pr/5")]
    after = p.read_text().splitlines()
    assert [i for i, (a, b) in enumerate(zip(before, after)) if a != b] == [before.index(
        next(line for line in before if line.startswith(f"    revision: {'2' * 40}")))]
    assert "refs/pr/5 of org/beta on" in p.read_text()


def test_cli_pins_from_the_offline_mirror(tmp_path, capsys):
    text = (ASSETS_DIR / "sources.yaml").read_text()
    x_line = next(line for line in text.splitlines() if "revision: 0dc5a42610e4" in line)
    p = _write(tmp_path, text.replace(x_line, "    revision: main"))
    with pytest.raises(CatalogError, match="xlam_function_calling"):
        load_sources(p)
    assert cli_main(["pin-revisions", "--catalog", str(p), "--source", "xlam_function_calling"]) == 0
    assert "xlam_function_calling: Salesforce/xlam-function-calling-60k main -> 0dc5a42610e4" in capsys.readouterr().out
    assert load_sources(p).by_name("xlam_function_calling").revision == "0dc5a42610e4e9004cd9a46fd4711d5a2130701a"
    assert p.read_text() == text


# ------------------------------------------------------------------ a pin is per partition

def test_sources_code_version_leaves_pins_out(monkeypatch):
    from surrogate_dagster.catalog.loader import config_hash
    from surrogate_dagster.sources import assets

    cat = assets.CATALOG
    moved = cat.model_copy(update={"sources": [s.model_copy(update={"revision": "f" * 40}) if i == 0 else s
                                               for i, s in enumerate(cat.sources)]})
    excl = {"sources": {"__all__": {"revision"}}, "helpers": {"__all__": {"revision"}}}
    assert config_hash(moved.model_dump(mode="json", exclude=excl)) == assets.CATALOG_VERSION
    assert config_hash(moved) != config_hash(cat)


# ------------------------------------------------------------------ scheduled re-curation is opt-in

def test_recuration_is_stopped_unless_the_profile_turns_it_on():
    prod = load_profile("production")
    assert prod.phases["ops"]["scheduled_recuration"] is False
    for profile in (prod, load_profile("local")):
        assert recuration_enabled(profile) is False
        sched = {s.name: s for s in ops_schedules(profile)}
        sens = {s.name: s for s in ops_sensors(profile)}
        assert sched["weekly_recuration"].default_status == DefaultScheduleStatus.STOPPED
        assert sens["recuration_sensor"].default_status == DefaultSensorStatus.STOPPED
        # the others keep running
        assert sched["monthly_tier2_evals"].default_status == DefaultScheduleStatus.RUNNING
        assert sens["regression_report_sensor"].default_status == DefaultSensorStatus.RUNNING
    assert {s.name: s.default_status for s in OPS_SCHEDULES}["weekly_recuration"] == DefaultScheduleStatus.STOPPED
    assert {s.name: s.default_status for s in OPS_SENSORS}["recuration_sensor"] == DefaultSensorStatus.STOPPED

    on = prod.model_copy(update={"phases": {**prod.phases, "ops": {**prod.phases["ops"], "scheduled_recuration": True}}})
    assert {s.name: s.default_status for s in ops_schedules(on)}["weekly_recuration"] == DefaultScheduleStatus.RUNNING
    assert {s.name: s.default_status for s in ops_sensors(on)}["recuration_sensor"] == DefaultSensorStatus.RUNNING
    bad = prod.model_copy(update={"phases": {"ops": {"scheduled_recuration": "yes"}}})
    with pytest.raises(ValueError, match="scheduled_recuration must be true or false"):
        recuration_enabled(bad)


def test_offline_mirror_pins_are_found_and_all_re_pinned_at_once(tmp_path):
    from surrogate_dagster.catalog.pins import offline_mirror_pins

    p = _write(tmp_path, YAML)
    pin_sources(p, _Hub(), ["alpha", "gamma"], offline=True)  # two offline-mirror pins
    pin_sources(p, _Hub(), ["beta"])                          # one online pin
    assert offline_mirror_pins(p.read_text()) == ["alpha", "gamma"]
    hub = _Hub()
    changes = pin_sources(p, hub, offline_mirror_pins(p.read_text()))
    assert [c.name for c in changes] == ["alpha", "gamma"] and [h for h, _ in hub.calls] == ["org/alpha", "org/gamma"]
    assert offline_mirror_pins(p.read_text()) == [] and OFFLINE_NOTE not in p.read_text()
    # the shipped catalog: every entry marked offline-mirror is found
    shipped = (ASSETS_DIR / "sources.yaml").read_text()
    assert len(offline_mirror_pins(shipped)) == sum(OFFLINE_NOTE in line for line in shipped.splitlines()) > 0


def test_cli_all_refuses_an_offline_hub(tmp_path, capsys):
    p = _write(tmp_path, (ASSETS_DIR / "sources.yaml").read_text())
    assert cli_main(["pin-revisions", "--all", "--catalog", str(p), "--profile", "local"]) == 2
    assert "offline mirror" in capsys.readouterr().err
