"""The automation conditions cover exactly the re-curation groups and are off unless the profile turns them on
(a planted upstream change re-curated: tests/integration/test_automation.py)."""

from dagster import AssetKey, AutomationConditionSensorDefinition, DefaultSensorStatus

from surrogate_dagster.operations import ops_sensors
from surrogate_dagster.sources.revisions import hf_revisions
from surrogate_dagster.operations.sensors import RECURATION_CONDITION, RECURATION_GROUPS, build_recuration_sensor


def test_conditions_cover_exactly_the_recuration_groups():
    from surrogate_dagster.definitions import defs

    graph = defs.resolve_asset_graph()
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        expected = RECURATION_CONDITION if node.group_name in RECURATION_GROUPS else None
        assert node.automation_condition == expected, key.to_user_string()
    assert graph.get(AssetKey("hf_revisions")).automation_condition is None  # observed, never requested
    sensors = {s.name: s for s in defs.sensors}
    assert isinstance(sensors["recuration_sensor"], AutomationConditionSensorDefinition)


def test_automation_is_off_unless_the_profile_turns_it_on():
    from surrogate_dagster.catalog import load_profile

    prod = load_profile("production")
    assert {s.name: s for s in ops_sensors(prod)}["recuration_sensor"].default_status == DefaultSensorStatus.STOPPED
    on = prod.model_copy(update={"phases": {**prod.phases, "ops": {**prod.phases["ops"], "scheduled_recuration": True}}})
    sensor = {s.name: s for s in ops_sensors(on)}["recuration_sensor"]
    assert isinstance(sensor, AutomationConditionSensorDefinition)
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert build_recuration_sensor().default_status == DefaultSensorStatus.STOPPED
