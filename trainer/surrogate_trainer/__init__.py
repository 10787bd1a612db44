"""Trainer side of surrogate_dagster: axolotl under Dagster Pipes (no pipeline imports)."""
