"""The labelled prompt-injection phrasings (tests/memory/fixtures) and how the filter does on them.

Two sets: `tuning` (injection_phrasings.yaml), which the filter was tuned on, and `holdout`
(injection_holdout.yaml), written before tuning and measured, not tuned on. A hostile phrasing is
caught when it scores in the suspect band or above (quarantined or refused); a benign one is a
false positive when it does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from dory.memory.injection import Assessment, assess

FIXTURES = Path(__file__).resolve().parents[1] / "memory" / "fixtures"
SETS = {"tuning": FIXTURES / "injection_phrasings.yaml", "holdout": FIXTURES / "injection_holdout.yaml"}


@dataclass(frozen=True)
class Phrasing:
    text: str
    label: str  # hostile | benign
    lang: str
    split: str


@dataclass
class Rates:
    hostile: int = 0
    benign: int = 0
    caught: int = 0  # hostile, quarantined or refused
    refused: int = 0  # hostile, refused
    flagged: int = 0  # benign, quarantined or refused
    wrong: list[tuple[Phrasing, Assessment]] = field(default_factory=list)

    @property
    def detection(self) -> float:
        return self.caught / self.hostile if self.hostile else 0.0

    @property
    def refusal(self) -> float:
        return self.refused / self.hostile if self.hostile else 0.0

    @property
    def false_positives(self) -> float:
        return self.flagged / self.benign if self.benign else 0.0


def load(split: str) -> list[Phrasing]:
    with SETS[split].open(encoding="utf-8") as handle:
        rows = yaml.safe_load(handle)[split]
    return [Phrasing(row["text"], row["label"], row["lang"], split) for row in rows]


def measure(phrasings: list[Phrasing]) -> Rates:
    rates = Rates()
    for phrasing in phrasings:
        found = assess(phrasing.text)
        flagged = found.verdict != "clean"
        if phrasing.label == "hostile":
            rates.hostile += 1
            rates.caught += flagged
            rates.refused += found.verdict == "reject"
        else:
            rates.benign += 1
            rates.flagged += flagged
        if flagged != (phrasing.label == "hostile"):
            rates.wrong.append((phrasing, found))
    return rates
