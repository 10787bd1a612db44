"""Names of the assets a phase depends on that a later phase defines.

A phase imports only the phases before it, so an asset it waits for from a later phase cannot be
imported; its name lives here, below every phase (Dagster-free: consumers wrap it in an
``AssetKey``). A dependency on an earlier phase's asset imports that asset instead. Every name here
is checked against the definitions by a unit test.
"""

# evals/assets.py: the canaries sanitized_rows (curation) plants into its shadow audit copies.
EVAL_CANARIES = "eval_canaries"
# training/mixture_views.py: holds the token-length check each mixture's Hub push (curation) waits for.
MIXTURE_VIEWS = "mixture_views"
# evals/assets.py (assets/evals.yaml ``smoke_gate.asset``): carries the blocking check that the
# smoke-gated stage (training) and exec_graded_pairs (synth) wait for, runbook Day 14.
SMOKE_GATE = "stage1_6_smoke_gate"
# training (assets/training.yaml): the checkpoint asset that waits for the smoke gate.
SMOKE_GATED_STAGE = "stage2_checkpoint"
# training (assets/training.yaml): the agent checkpoint exec_graded_pairs (synth) samples from.
AGENT_CHECKPOINT = "stage1_6_checkpoint"
