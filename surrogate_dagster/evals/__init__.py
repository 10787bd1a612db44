"""Evals: harness wrappers (harness/), one benchmark on one checkpoint (runner.py), checkpoints as
inference loads them (checkpoints.py), gates (gates.py), report storage and views (reports.py),
the release's scoreboard, outcome.md and knowledge_index.md (outcome.py), the catalog and profile
models (config.py) -- all Dagster-free -- and the Dagster resource, assets,
checks and release (resources.py, assets.py, checks.py, release.py). Generation itself is the
shared ``surrogate_dagster.inference`` package, below the phases.

For definitions.py (imported lazily, so `import surrogate_dagster.evals.harness...` needs no Dagster):

    from .evals import EVAL_ASSETS, EVAL_CHECKS, eval_resources
"""


def __getattr__(name: str):
    if name in ("EVAL_ASSETS", "EVAL_CHECKS"):
        from . import assets

        return getattr(assets, name)
    if name == "eval_resources":
        from .resources import eval_resources

        return eval_resources
    raise AttributeError(name)


__all__ = ["EVAL_ASSETS", "EVAL_CHECKS", "eval_resources"]
