"""Curation phase: sanitize, dedup, decontaminate, validate and filter, then build the mixtures."""
