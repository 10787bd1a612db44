"""Synthesis: orchestrator traces (Anthropic) and execution-graded preference pairs."""
