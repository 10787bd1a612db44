"""A synth run as the synth assets do it, for the spend-durability tests: the scenario writer,
then trace batches, one client per batch with its spend journal (batch key, attempt id) and the
attempt's ledger summary recorded when the batch ends, all against one Messages server.

Run as a process (``python -m tests.support.llm_spend_run STORE URL ATTEMPT``) so that a test can
SIGKILL it anywhere; it prints ``START`` once imported and ``DONE`` at the end.
"""

from __future__ import annotations

import errno
import sys
from typing import Any

from surrogate_dagster.llm.batches import MessageBatchRunner
from surrogate_dagster.llm.client import LLMClient
from surrogate_dagster.llm.ledger import record_batch_spend, spent_in_store
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.synth.config import SCENARIOS_LEDGER_KEY, synth_catalog
from surrogate_dagster.synth.scenarios import expand_scenarios
from surrogate_dagster.synth.volume import synthesize_until_accepted

CAT = synth_catalog()
TRACE_BATCHES = ("batch-000",)
SCENARIOS = 40
PER_BATCH = 12
LEDGER_KEYS = [SCENARIOS_LEDGER_KEY, *TRACE_BATCHES]


class FullDiskStore(LocalObjectStore):
    """A local object store whose disk fills up after ``capacity`` bytes: every later write
    raises ENOSPC, as a full filesystem does (reads keep working)."""

    def __init__(self, root: Any, capacity: int) -> None:
        super().__init__(root, fsync=False)
        self.capacity, self.written = capacity, 0

    def _replace(self, key, chunks, content_type):
        data = b"".join(chunks)
        if self.written + len(data) > self.capacity:
            raise OSError(errno.ENOSPC, "No space left on device", key)
        self.written += len(data)
        return super()._replace(key, [data], content_type)


def _client(store: Any, url: str, batch: str, attempt: str) -> LLMClient:
    return LLMClient(models=CAT["models"], prices=CAT["prices_per_mtok"], max_tokens=CAT["max_tokens"],
                     base_url=url, api_key_env=None, cache_store=store, backoff_base_s=0.001,
                     sleep=lambda s: None, spent_before_usd=spent_in_store(store, LEDGER_KEYS),
                     spend_batch=batch, spend_attempt=attempt)


def run_synth(store: Any, url: str, attempt: str) -> None:
    """Scenarios, then each trace batch; a batch's summary is recorded however it ends."""
    c = _client(store, url, SCENARIOS_LEDGER_KEY, attempt)
    try:
        scenarios, _ = expand_scenarios(c, CAT["seeds"], target=SCENARIOS, per_request=25,
                                        batch_runner=MessageBatchRunner(c, store, poll_s=0.01, poll_max_s=0.05),
                                        batch_job="scenarios")
    finally:
        record_batch_spend(store, SCENARIOS_LEDGER_KEY, attempt, c.ledger.summary())
    for i, batch in enumerate(TRACE_BATCHES):
        c = _client(store, url, batch, attempt)
        part = scenarios[i * PER_BATCH:(i + 1) * PER_BATCH]
        try:
            synthesize_until_accepted(c, part, target=len(part), batch_key=batch, max_attempts_per_scenario=2,
                                      n_samples=1,
                                      batch_runner=MessageBatchRunner(c, store, poll_s=0.01, poll_max_s=0.05))
        finally:
            record_batch_spend(store, batch, attempt, c.ledger.summary())


if __name__ == "__main__":
    root, url, attempt = sys.argv[1:4]
    print("START", flush=True)
    run_synth(LocalObjectStore(root, fsync=False), url, attempt)
    print("DONE", flush=True)
