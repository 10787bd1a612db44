"""Quality filters as curation blocks: OpenCoder-style heuristic rules (``heuristics``, one block per
rule in the family modules ``lines``, ``composition``, ``markers``, ``encoded``, ``prose``) and
educational value (``edu_classifier``); ``filter_stage`` runs them with AST validity per chunk."""
