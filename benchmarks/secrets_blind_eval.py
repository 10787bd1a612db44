"""Blind secrets eval: run the sanitizer (NER off) over benchmarks/data/secrets_blind.jsonl.

    .venv/bin/python benchmarks/secrets_blind_eval.py [--show-misses N] [--regen]

Positive row = caught when every listed secret substring is absent from the sanitized text.
Negative row (secrets == []) = false positive when the sanitized text differs from the input.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "benchmarks" / "data" / "secrets_blind.jsonl"
GEN = ROOT / "benchmarks" / "data" / "secrets_blind_gen.py"

from surrogate_dagster.sanitize import Sanitizer, SanitizerConfig  # noqa: E402

TARGET = 0.95  # per-class recall target


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--show-misses", type=int, default=0, help="print up to N misses / false positives per class")
    ap.add_argument("--regen", action="store_true", help="regenerate the dataset first")
    a = ap.parse_args()
    if a.regen or not a.data.exists():
        subprocess.run([sys.executable, str(GEN), "--out", str(a.data)], check=True)
    rows = [json.loads(line) for line in a.data.open() if line.strip()]
    san = Sanitizer(SanitizerConfig(ner_model=None))

    pos = defaultdict(lambda: [0, 0])  # class -> [caught, total]
    neg = defaultdict(lambda: [0, 0])  # class -> [changed, total]
    bad = defaultdict(list)
    for r in rows:
        res = san.sanitize(r["text"])
        out = res.text
        if r["secrets"]:
            ok = all(s not in out for s in r["secrets"])
            pos[r["class"]][0] += ok
            pos[r["class"]][1] += 1
            if not ok:
                bad[r["class"]].append((r, out))
        else:
            changed = out != r["text"]
            neg[r["class"]][0] += changed
            neg[r["class"]][1] += 1
            if changed:
                bad[r["class"]].append((r, out))

    print(f"{'class':<22} {'recall':>8} {'caught/n':>10}  target >= {TARGET:.0%}")
    tc = tn = 0
    below = []
    for c in sorted(pos):
        k, n = pos[c]
        tc += k
        tn += n
        if k / n < TARGET:
            below.append(c)
        print(f"{c:<22} {k / n:>8.1%} {f'{k}/{n}':>10}  {'met' if k / n >= TARGET else 'NOT MET'}")
    print(f"{'ALL POSITIVES':<22} {tc / max(tn, 1):>8.1%} {f'{tc}/{tn}':>10}  "
          f"{'met' if tc / max(tn, 1) >= TARGET else 'NOT MET'}")
    print(f"classes below target: {', '.join(below) if below else 'none'}")
    print()
    print(f"{'negative kind':<22} {'changed':>8} {'chg/n':>10}")
    fc = fn = 0
    for c in sorted(neg):
        k, n = neg[c]
        fc += k
        fn += n
        print(f"{c:<22} {k / n:>8.1%} {f'{k}/{n}':>10}")
    print(f"{'ALL NEGATIVES':<22} {fc / max(fn, 1):>8.1%} {f'{fc}/{fn}':>10}")

    if a.show_misses:
        for c, items in sorted(bad.items()):
            print(f"\n=== {c}: {len(items)} ===")
            for r, out in items[: a.show_misses]:
                print("--- in:  " + repr(r["text"][:400]))
                print("    out: " + repr(out[:400]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
