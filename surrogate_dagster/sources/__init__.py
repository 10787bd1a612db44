"""Sources phase: mirror each catalog source and normalize it to ChatML / Hermes / DPO rows."""
