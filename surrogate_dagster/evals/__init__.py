"""Evals: harness wrappers (harness/), inference (inference.py), gates (gates.py), report storage
and views (reports.py) -- all Dagster-free -- and the Dagster assets, checks and release
(assets.py, checks.py, release.py).

For definitions.py (imported lazily, so `import surrogate_dagster.evals.harness...` needs no Dagster):

    from .evals import EVAL_ASSETS, EVAL_CHECKS, EVAL_JOBS, EVAL_SCHEDULES, eval_resources
"""


def __getattr__(name: str):
    if name in ("EVAL_ASSETS", "EVAL_CHECKS", "EVAL_JOBS", "EVAL_SCHEDULES"):
        from . import assets

        return getattr(assets, name)
    if name == "eval_resources":
        from .resources import eval_resources

        return eval_resources
    raise AttributeError(name)


__all__ = ["EVAL_ASSETS", "EVAL_CHECKS", "EVAL_JOBS", "EVAL_SCHEDULES", "eval_resources"]
