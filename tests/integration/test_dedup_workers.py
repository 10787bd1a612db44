"""Exact-dedup digests computed in fork workers equal the plain ones (the normalization they hash:
tests/unit/curation/test_dedup.py)."""

from __future__ import annotations

from surrogate_dagster.curation.exact_dedup import digest_texts, sha256_text
from tests.unit.curation.test_dedup import whitespace_texts


def test_digests_in_fork_workers_equal_the_plain_digests() -> None:
    texts = whitespace_texts()
    assert digest_texts(texts, workers=2) == [sha256_text(t) for t in texts]
