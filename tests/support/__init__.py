"""Helpers shared by the test tiers (tests/unit, tests/integration, tests/env): imported as tests.support.*."""
