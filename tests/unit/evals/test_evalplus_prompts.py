"""evalplus' prompt and sanitize steps without the sandbox: the entry point kept and chatter dropped, the
chat request as evalplus builds it (the sandboxed checks: tests/integration/test_evals_evalplus.py)."""

from __future__ import annotations

from surrogate_dagster.evals.harness.evalplus_core import chat_request, sanitize_solution


def test_sanitize_keeps_the_entry_point_and_drops_chatter():
    code = sanitize_solution("import math\n\ndef f(x):\n    return math.floor(x)\n\nprint(f(2.5))\n```\nThat's it.", "f")
    assert "def f(x)" in code and "print(" not in code and "That's it" not in code


def test_chat_request_matches_evalplus_prompt():
    req = chat_request("def f():\n    pass\n", 100)
    assert req.messages[0]["content"].endswith("```\ndef f():\n    pass\n```\n")
