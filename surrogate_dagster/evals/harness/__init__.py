"""Benchmark harness wrappers, Dagster-free: each ``run(...)`` returns a ``common.EvalReport``.

All model-written code runs in the project's sandbox (surrogate_dagster.sandbox).
"""
