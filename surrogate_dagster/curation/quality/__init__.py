"""Quality filters: OpenCoder-style heuristic rules (heuristics) and educational value (edu_classifier)."""
