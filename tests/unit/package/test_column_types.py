"""Column types of table metadata, also outside an asset (on materialized assets:
tests/integration/test_table_metadata.py)."""

from surrogate_dagster.metadata import attach_table_metadata, column_types, table_metadata


def test_column_types_and_outside_an_asset():
    assert column_types([]) == {}
    assert column_types([{"a": True}, {"a": {"k": 1}, "b": b"x"}]) == {"a": ("bool|struct", False),
                                                                       "b": ("binary", True)}
    meta = table_metadata([{"a": 1}])
    assert meta["dagster/row_count"].value == 1
    assert attach_table_metadata([{"a": 1}]) is False  # no asset executing: nothing to attach to
