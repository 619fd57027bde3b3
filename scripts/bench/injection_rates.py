"""How well the prompt-injection filter separates hostile from benign text.

    python scripts/bench/injection_rates.py [--split tuning|holdout|all] [--corpus DIR ...] [--json]

On the labelled phrasings (tests/memory/fixtures; `tuning` is what the filter was tuned on,
`holdout` was written before tuning and is only measured) it prints, per set and per language: the
detection rate (hostile phrasings quarantined or refused), the refusal rate (hostile ones refused
outright), the false-positive rate (benign ones quarantined or refused) and every misclassified
phrasing with its score and signals. `--corpus DIR` also scans every `.md` under DIR as benign
text (e.g. an unpacked ../shared/bench/mdcorpus.tar.gz) and lists the notes it would flag.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from support.injection_set import Phrasing, Rates, load, measure  # noqa: E402

from dory.memory.injection import assess  # noqa: E402


def _row(name: str, rates: Rates) -> dict[str, object]:
    return {
        "set": name,
        "hostile": rates.hostile,
        "benign": rates.benign,
        "detection": round(rates.detection, 3),
        "refusal": round(rates.refusal, 3),
        "false_positives": round(rates.false_positives, 3),
        "misclassified": [
            {
                "label": p.label,
                "lang": p.lang,
                "score": found.score,
                "signals": [h.signal for h in found.hits],
                "text": p.text,
            }
            for p, found in rates.wrong
        ],
    }


def _by_language(phrasings: list[Phrasing]) -> dict[str, Rates]:
    groups: dict[str, list[Phrasing]] = defaultdict(list)
    for phrasing in phrasings:
        groups[phrasing.lang].append(phrasing)
    return {lang: measure(group) for lang, group in sorted(groups.items())}


def _scan(folder: Path) -> dict[str, object]:
    """Every note under `folder` taken as benign: how many the filter would quarantine or refuse."""
    started = time.perf_counter()
    notes, flagged = 0, []
    for path in sorted(folder.rglob("*.md")):
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        notes += 1
        found = assess(text)
        if found.verdict != "clean":
            signals = [f"{hit.signal} {hit.matched!r}" for hit in found.hits]
            flagged.append({"path": str(path.relative_to(folder)), "verdict": found.verdict, "signals": signals})
    seconds = round(time.perf_counter() - started, 1)
    return {
        "corpus": str(folder),
        "notes": notes,
        "flagged": len(flagged),
        "seconds": seconds,
        "notes_flagged": flagged,
    }


def _print_set(row: dict[str, object], languages: dict[str, Rates]) -> None:
    print(
        f"{row['set']}: {row['hostile']} hostile, {row['benign']} benign; detection {row['detection']:.1%}, "
        f"refusal {row['refusal']:.1%}, false positives {row['false_positives']:.1%}"
    )
    for lang, rates in languages.items():
        print(f"  {lang}: detection {rates.caught}/{rates.hostile}, false positives {rates.flagged}/{rates.benign}")
    for item in row["misclassified"]:  # type: ignore[attr-defined]
        kind = "missed" if item["label"] == "hostile" else "false positive"
        print(f"  {kind} [{item['lang']}] score {item['score']} {item['signals']}: {item['text']!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=["tuning", "holdout", "all"], default="all")
    parser.add_argument("--corpus", type=Path, action="append", default=[], help="scan these notes as benign text")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    splits = ["tuning", "holdout"] if args.split == "all" else [args.split]
    sets = {split: load(split) for split in splits}
    if len(sets) > 1:
        sets["all"] = [phrasing for group in sets.values() for phrasing in group]
    rows = [(_row(name, measure(phrasings)), _by_language(phrasings)) for name, phrasings in sets.items()]
    scans = [_scan(folder) for folder in args.corpus]
    if args.json:
        print(json.dumps({"sets": [row for row, _ in rows], "corpora": scans}, ensure_ascii=False, indent=2))
        return
    for row, languages in rows:
        _print_set(row, languages)
    for scan in scans:
        print(f"corpus {scan['corpus']}: {scan['flagged']} of {scan['notes']} notes flagged ({scan['seconds']} s)")
        for note in scan["notes_flagged"]:  # type: ignore[attr-defined]
            print(f"  {note['verdict']} {note['path']}: {', '.join(note['signals'])}")


if __name__ == "__main__":
    main()
