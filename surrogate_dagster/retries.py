"""Step retry policies for the steps that can fail for reasons that go away on their own.

A step that talks to the HF Hub (mirroring a source, pushing a dataset or a checkpoint), to an
LLM API, or that launches the trainer on a cluster can fail on a rate limit, a dropped
connection, a 5xx or a pre-empted node. Dagster re-runs such a step in the same run after a delay
that doubles on each attempt (exponential backoff) and is spread by +/- up to the delay itself
(jitter), so steps that failed together (22 mirrors hitting the same rate limit) do not all come
back at the same instant. Re-running is safe for each of them: the mirror and the stores write
objects before their commit markers, the LLM client reads its cache from the object store (calls
already paid are not repeated), and the trainer resumes from the checkpoints it uploaded.

Every other step is deterministic given its inputs: a retry would fail the same way, so it has
no policy. Run-level retries (runtime/k8s.py `run_retries`) cover a run worker that dies and leave
step failures to these policies (`retry_on_asset_or_op_failure: false`), so a failing step is
never retried twice over.

`SURROGATE_RETRY_DELAY_SCALE` (default 1) multiplies every delay: the test suite sets it to 0, so
a retried step is tested without sleeping through the backoff.

`RETRY_POLICIES` names which asset gets which policy; the assets pass `retry_policy=` in their
decorators and tests/integration/test_retries.py reads the policies back from the Definitions.
"""

from __future__ import annotations

import os

from dagster import Backoff, Jitter, RetryPolicy

DELAY_SCALE = float(os.environ.get("SURROGATE_RETRY_DELAY_SCALE", "1"))


def backoff_policy(max_retries: int, delay_s: float) -> RetryPolicy:
    """Exponential backoff from ``delay_s`` (scaled by DELAY_SCALE), spread by +/- jitter."""
    return RetryPolicy(max_retries=max_retries, delay=delay_s * DELAY_SCALE, backoff=Backoff.EXPONENTIAL,
                       jitter=Jitter.PLUS_MINUS)


# Hub reads: a rate limit (HTTP 429) usually clears within a minute or two.
MIRROR_RETRY = backoff_policy(3, 30)
# Hub writes: commits are slower to recover (a busy repo, a 5xx on the LFS upload).
HUB_PUSH_RETRY = backoff_policy(3, 60)
# LLM steps: the client retries single requests itself; a step retry covers an outage longer
# than that. Cached calls are not paid again, so a retry costs only what had not finished.
LLM_RETRY = backoff_policy(2, 60)
# Trainer launch (and the checkpoint push after it): one more try, after a node is likely back;
# the trainer resumes from its last uploaded checkpoint rather than starting over.
TRAINER_RETRY = backoff_policy(1, 300)

# asset name (or "*_suffix" for a family) -> its policy
RETRY_POLICIES: dict[str, RetryPolicy] = {
    "source_rows": MIRROR_RETRY,
    "helper_rows": MIRROR_RETRY,
    "*_hub": HUB_PUSH_RETRY,  # curation.mixtures.hub_asset_name
    "synth_scenarios": LLM_RETRY,
    "orchestrator_traces": LLM_RETRY,
    "*_checkpoint": TRAINER_RETRY,
}


def expected_policy(asset: str) -> RetryPolicy | None:
    """The policy `RETRY_POLICIES` gives an asset name, None when it has none."""
    if asset in RETRY_POLICIES:
        return RETRY_POLICIES[asset]
    for pattern, policy in RETRY_POLICIES.items():
        if pattern.startswith("*") and asset.endswith(pattern[1:]):
            return policy
    return None
