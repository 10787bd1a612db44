"""A scripted inference client for the evals tests: each request gets the answer the test chose."""

from __future__ import annotations

from surrogate_dagster.inference import GenResult, InferenceClient, ModelRef


class ScriptedModel(InferenceClient):
    """A test double: answers each request with the text the test chose for it (no model)."""

    def __init__(self, answers) -> None:
        """``answers``: a list (one per request, in order) or a function of the request."""
        super().__init__(ModelRef("scripted", "none"))
        self.answer = answers if callable(answers) else (lambda req, it=iter(list(answers)): next(it))
        self.seen = []

    @property
    def tokenizer(self):
        raise AssertionError("not used")

    @property
    def max_context(self) -> int:
        return 10**6

    def _generate(self, prompts, reqs):
        raise AssertionError("not used")

    def generate(self, requests):
        self.seen += list(requests)
        return [GenResult(self.answer(r), 10, 10, "stop") for r in requests]
