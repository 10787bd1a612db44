"""LLM access for synthesis: the Anthropic client core (client.py), its request-hash cache,
cost ledger and budget guard, circuit breaker, and the local Messages API server with its
stand-in model for the credential-free local profile.

Submodules are imported explicitly (``from surrogate_dagster.llm.client import LLMClient``) so that
importing the cache or ledger does not pull in the SDK.
"""
