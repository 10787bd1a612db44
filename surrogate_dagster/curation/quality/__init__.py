"""Quality filters as curation blocks: OpenCoder-style heuristic rules (``heuristics``, one block per
rule in the family modules ``lines``, ``composition``, ``markers``, ``encoded``, ``prose``) and
educational value (``edu_classifier``). The filter step (``filtered_rows``) runs them after AST
validity through the block seam, ``curation.executor.apply_blocks``."""
