"""The NER prefilter of the sanitize step: the model runs only on prose that can hold an accepted finding."""

from __future__ import annotations

import re

from surrogate_dagster.sanitize import ner as ner_mod


def test_ner_prefilter_is_a_superset_of_the_acceptance_rules():
    worthy = ner_mod.ner_worthy
    # accepted shapes: two Capitalised tokens, a cue then one, an initial, a house number then a place
    for text in ["Ask Ada Lovelace.", "thanks,Ada", "Hi Bob", "by J. Smith", "call me Ishmael",
                 "O'Brien Kelly", "iPhone Pro owner", "at 221B Baker Street", "lives at 12 Downing"]:
        assert worthy(text), text
    # prose the model never needs to see
    for text in ["Here is how to sort a list in Python.", "It runs in O(n) per step.", "See the README.",
                 "use 3 workers and 2 retries", "Python. The end", "goes to <PERSON_1>, <ADDRESS_1>.",
                 "Thanks, <PERSON_2>!", "from HTTP", "sent by AWS"]:
        assert not worthy(text), text


def test_prose_segments_match_the_fence_regex_they_replace():
    fence = re.compile(r"```.*?(?:```|\Z)", re.S)  # the definition: a block runs to the next ``` or the end

    def reference(text):
        segs, pos = [], 0
        for m in fence.finditer(text):
            if m.start() > pos:
                segs.append((pos, text[pos:m.start()]))
            pos = m.end()
        if pos < len(text):
            segs.append((pos, text[pos:]))
        return [(o, s) for o, s in segs if s.strip()]

    import random
    rng = random.Random(7)
    pieces = ["`", "``", "```", "````", "a", " ", "\n", "b c"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert ner_mod.prose_segments(text) == reference(text), repr(text)


def test_ner_reads_only_the_sentences_that_hold_a_trigger():
    seg = "Write a function to sort tokens (12). My teammate Sofia Brown wrote it.\nIt runs in O(n)."
    (ws, we), = ner_mod.ner_windows(seg)
    assert seg[ws:we].strip() == "My teammate Sofia Brown wrote it."
    # initials and titles do not end a sentence; adjacent trigger sentences merge
    assert ner_mod.ner_windows("Richard M. Nixon") == [(0, 16)]
    assert ner_mod.ner_windows("They call me Mr. Mayers. Ada Lovelace too. Done.") == [(0, 43)]
    assert ner_mod.ner_windows("Nothing to see here.") == []
