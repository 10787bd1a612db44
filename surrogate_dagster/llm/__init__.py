"""LLM access: the Anthropic client core, its cache, ledger, breaker and a local stand-in."""
