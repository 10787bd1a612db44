"""RULER-style long-context tasks, generated here at a target length in the checkpoint's own tokens.

RULER (NVIDIA) synthesizes its tasks; so does this module, after RULER's task families and
templates (its code is not a dependency). Eight families, each sized so that the chat-rendered
prompt plus the answer budget fits the target length exactly as the model's tokenizer counts it:

- ``niah_single`` (noise haystack, number), ``niah_single_uuid`` (noise haystack, UUID),
  ``niah_multikey`` (haystack of distractor needles), ``niah_multivalue`` (4 values, one key),
  ``niah_multiquery`` (4 keys asked at once): needle in a haystack, depths spread evenly;
- ``vt``: variable tracking (a chain of assignments hidden in noise; name every variable that
  holds the value);
- ``cwe``: common words extraction (the 10 most frequent words of a list);
- ``fwe``: frequent words extraction (the 3 most frequent "coded" words of a Zipf-distributed text).
RULER's QA families need SQuAD/HotpotQA, not available offline: omitted, and the report says so.
Words and keys are pronounceable pseudo-words from a fixed syllable table (no word list needed).
Metric: RULER's ``string_match_all`` (share of expected strings found in the answer, case-insensitive),
mean per family, then mean over families.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from dataclasses import dataclass
from typing import Callable, Sequence

from ...inference import GenRequest, InferenceClient, render_prompt
from .common import EvalReport, Timer

BENCHMARK = "ruler"
FAMILIES = ("niah_single", "niah_single_uuid", "niah_multikey", "niah_multivalue", "niah_multiquery", "vt",
            "cwe", "fwe")
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
NIAH_INTRO = ("Some special magic {kind} are hidden within the following text. Make sure to memorize it. "
              "I will quiz you about the {kind} afterwards.\n")
_SYLL = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ba", "de", "fi", "go", "hu", "ja", "ke", "lu", "ma", "no",
         "pi", "qu", "re", "so", "ta", "ve", "wi", "xo", "ya", "zu", "bri", "cla", "dro", "fle", "gri", "plo", "stu"]
GEN_TOKENS = {"niah_single": 32, "niah_single_uuid": 48, "niah_multikey": 32, "niah_multivalue": 96,
              "niah_multiquery": 96, "vt": 64, "cwe": 128, "fwe": 64}


@dataclass
class Sample:
    family: str
    index: int
    request: GenRequest
    expected: list[str]
    prompt_tokens: int
    depth: float | None = None


def word(rng: random.Random, syllables: int = 3) -> str:
    return "".join(rng.choice(_SYLL) for _ in range(syllables))


def key(rng: random.Random) -> str:
    return f"{word(rng, 2)}-{word(rng, 3)}"


def number(rng: random.Random) -> str:
    return str(rng.randint(1_000_000, 9_999_999))


def _insert(units: list[str], needles: list[str], depth: float, rng: random.Random) -> list[str]:
    out = list(units)
    pos = int(round(depth * len(out)))
    for n in needles:
        out.insert(min(pos, len(out)), n)
        pos = min(len(out), pos + rng.randint(0, max(1, len(out) // 10)))
    return out


def _compose(family: str, n_units: int, rng_seed: int, depth: float) -> tuple[str, str, list[str]]:
    """(user text, answer prefix, expected strings) with ``n_units`` haystack units."""
    rng = random.Random(rng_seed)
    if family.startswith("niah"):
        uuid_vals = family == "niah_single_uuid"
        kind = "uuids" if uuid_vals else "numbers"

        def val() -> str:
            return str(uuid.UUID(int=rng.getrandbits(128))) if uuid_vals else number(rng)

        n_keys = 4 if family == "niah_multiquery" else 1
        keys = [key(rng) for _ in range(n_keys)]
        values = [[val() for _ in range(4 if family == "niah_multivalue" else 1)] for _ in keys]
        needles = [f"One of the special magic {kind} for {k} is: {v}." for k, vs in zip(keys, values) for v in vs]
        if family == "niah_multikey":
            units = [f"One of the special magic numbers for {key(rng)} is: {number(rng)}. " for _ in range(n_units)]
        else:
            units = [NOISE] * n_units
        context = " ".join(_insert(units, needles, depth, rng))
        intro = NIAH_INTRO.format(kind=kind)
        if family == "niah_multivalue":
            q = f"What are all the special magic {kind} for {keys[0]} mentioned in the provided text?"
            prefix = f"The special magic {kind} for {keys[0]} mentioned in the provided text are"
        elif family == "niah_multiquery":
            q = f"What are all the special magic {kind} for {', '.join(keys[:-1])} and {keys[-1]} mentioned in the provided text?"
            prefix = f"The special magic {kind} for {', '.join(keys[:-1])} and {keys[-1]} mentioned in the provided text are"
        else:
            q = f"What is the special magic {kind[:-1]} for {keys[0]} mentioned in the provided text?"
            prefix = f"The special magic {kind[:-1]} for {keys[0]} mentioned in the provided text is"
        return f"{intro}{context}\n{q}", prefix, [v for vs in values for v in vs]
    if family == "vt":
        value = str(rng.randint(10000, 99999))
        names = ["".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(5)) for _ in range(5)]
        chain = [f"VAR {names[0]} = {value}."] + [f"VAR {names[i]} = VAR {names[i - 1]}." for i in range(1, 5)]
        context = " ".join(_insert([NOISE] * n_units, chain, depth, rng))
        q = (f"Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\n"
             f"Question: Find all variables that are assigned the value {value} in the text above.")
        return q, f"Answer: According to the chain(s) of variable assignment in the text above, {len(names)} " \
                  f"variables are assigned the value {value}, they are:", names
    if family == "cwe":
        common = list(dict.fromkeys(word(rng) for _ in range(40)))[:10]
        # RULER: common words 30x, the rest rarer; scaled down so short contexts still fit
        freq = min(30, 3 + n_units // 20)
        words = common * freq + [word(rng, 4) for _ in range(n_units)]
        rng.shuffle(words)
        listing = " ".join(f"{i + 1}. {w}" for i, w in enumerate(words))
        q = (f"Below is a numbered list of words. In these words, some appear more often than others. Memorize the "
             f"ones that appear most often.\n{listing}\nQuestion: What are the 10 most common words in the above list?")
        return q, "Answer: The top 10 words that appear most often in the list are:", common
    if family == "fwe":
        vocab = list(dict.fromkeys(word(rng, 2) + word(rng, 2) for _ in range(200)))
        weights = [1.0 / (r + 1) ** 2.0 for r in range(len(vocab))]  # Zipf, alpha 2
        text = rng.choices(vocab, weights=weights, k=max(30, n_units * 8))
        counts: dict[str, int] = {}
        for w in text:
            counts[w] = counts.get(w, 0) + 1
        top = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]]
        q = ("Read the following coded text and track the frequency of each coded word. Find the three most "
             f"frequently appeared coded words.\n{' '.join(text)}\nQuestion: Do not provide any explanation. "
             "Please ignore the dots '....'. What are the three most frequently appeared words in the above coded text?")
        return q, "Answer: According to the coded text above, the three most frequently appeared words are:", top
    raise ValueError(f"unknown RULER family {family!r}")


def make_sample(client: InferenceClient, family: str, length: int, index: int, n_samples: int, seed: int) -> Sample:
    """One sample whose rendered prompt + answer budget fits ``length`` tokens, filled to >= 97% when
    the haystack's granularity allows (bracket from a two-point estimate, then bisect)."""
    budget = length - GEN_TOKENS[family]
    depth = (index + 0.5) / n_samples if family.startswith("niah") or family == "vt" else None
    # stable across processes (str hash() is salted per process)
    rng_seed = int(hashlib.sha256(f"{family}|{length}|{index}|{seed}".encode()).hexdigest()[:8], 16)
    tok = client.tokenizer

    def build(n: int) -> tuple[GenRequest, list[str], int]:
        text, prefix, expected = _compose(family, n, rng_seed, depth or 0.0)
        req = GenRequest(messages=({"role": "user", "content": text},), assistant_prefix=prefix + " ",
                         max_new_tokens=GEN_TOKENS[family])
        return req, expected, client.count_tokens(render_prompt(tok, req))

    # size from one probe (tokens per unit), then bracket and bisect: a few tokenizations per sample
    first = build(1)
    t1 = first[2]
    if t1 > budget:
        raise ValueError(f"RULER {family}: target length {length} is too small for the task's template")
    _, _, t40 = build(41)
    per_unit = max((t40 - t1) / 40, 1e-3)
    n = max(1, int((budget - t1) / per_unit))
    best = (1, *first)
    lo, hi = 1, None
    for _ in range(12):
        cur = build(n)
        if cur[2] <= budget:
            if cur[2] > best[3]:
                best = (n, *cur)
            lo = n
            if cur[2] >= 0.97 * budget:
                break
        else:
            hi = n
        n = (lo + hi) // 2 if hi is not None else max(lo + 1, int(lo * 1.15))
        if hi is not None and hi - lo <= 1:
            break
    _, req, expected, t = best
    return Sample(family, index, req, expected, t, depth)


def string_match_all(output: str, expected: Sequence[str]) -> float:
    low = output.lower()
    return sum(e.lower() in low for e in expected) / len(expected)


def run(client: InferenceClient, *, length: int, label: str, families: Sequence[str] = FAMILIES,
        samples_per_family: int = 10, seed: int = 0, log: Callable[[str], None] | None = None) -> EvalReport:
    """Generate and score every family at one target length."""
    if length > client.max_context:
        raise ValueError(f"RULER {label}: length {length} exceeds the model's context {client.max_context}")
    with Timer() as tb:
        samples = [make_sample(client, f, length, i, samples_per_family, seed)
                   for f in families for i in range(samples_per_family)]
    with Timer() as tg:
        gens = client.generate([s.request for s in samples])
    rows, per_family = [], {}
    for s, g in zip(samples, gens):
        score = string_match_all(g.text, s.expected) if g.finish_reason != "prompt_too_long" else 0.0
        per_family.setdefault(s.family, []).append(score)
        rows.append({"family": s.family, "index": s.index, "depth": s.depth, "prompt_tokens": s.prompt_tokens,
                     "expected": s.expected, "output": g.text, "score": score, "finish_reason": g.finish_reason})
    fam = {f: round(100 * sum(v) / len(v), 3) for f, v in per_family.items()}
    overall = round(sum(fam.values()) / len(fam), 3)
    n = len(rows)
    if log:
        log(f"RULER {label}: {overall}")
    return EvalReport(
        benchmark=BENCHMARK, variant=f"RULER-style synthetic, {len(fam)} families at {length} tokens ({label})",
        version=f"ruler-synth-v1-{length}", status="ok", score=overall,
        score_name="string_match_all, mean over families", n_items=n, samples=rows,
        dataset={"source": "generated here", "seed": seed, "length": length, "families": list(families),
                 "samples_per_family": samples_per_family},
        metrics={"score_by_family": fam, "length": length, "label": label,
                 "prompt_tokens_max": max(r["prompt_tokens"] for r in rows),
                 "prompt_tokens_min": min(r["prompt_tokens"] for r in rows), "inference": client.describe()},
        timings={"build_s": round(tb.s, 3), "generate_s": round(tg.s, 3),
                 "samples_per_s": round(n / (tb.s + tg.s), 3) if n else 0.0},
        notes=["QA families (SQuAD/HotpotQA) omitted: their data is not available offline"])
