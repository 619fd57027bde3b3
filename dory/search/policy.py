"""The ranking policy: one declarative table deciding what rises, what sinks and what is left out.

Each rule matches a note by path glob or by a frontmatter field and multiplies its fused score by
`factor` (a factor of 0 removes the note from results). All matching rules apply.

Boosts are deliberately small: with reciprocal rank fusion (rrf_k = 20) neighbouring ranks among the
first 40 differ by 1.6-4.5%, so a larger boost would lift a weakly related canonical page over the
best match.
The built-in boosts (together at most ~1.4%) therefore break ties between equally ranked results,
while demotions and exclusions (inbox, logs, superseded) act with full force. `dory.toml` can
override a rule by name or add new ones:

    [[search.policy]]
    name = "inbox"          # same name as a built-in rule: replaces it
    path = "inbox/*"
    factor = 0.5
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dory.errors import ConfigError

FIELDS = ("status", "type", "canonical", "source_kind", "superseded_by", "visibility")


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    factor: float
    path: str | None = None
    field: str | None = None
    values: tuple[str, ...] = ()  # "*" matches any non-empty value

    def matches(self, path: str, fields: Mapping[str, Any]) -> bool:
        if self.path is not None and not fnmatch.fnmatchcase(path, self.path):
            return False
        if self.field is not None:
            value = fields.get(self.field)
            if value in (None, "", False, []):
                return False
            text = str(value).lower()
            if "*" not in self.values and text not in self.values:
                return False
        return self.path is not None or self.field is not None


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("canonical", 1.006, field="canonical", values=("true",)),
    Rule("canonical-source", 1.003, field="source_kind", values=("canonical",)),
    Rule("core", 1.003, path="core/*"),
    Rule("project-state", 1.003, path="projects/*/state.md"),
    Rule("active", 1.002, field="status", values=("active",)),
    Rule("inbox", 0.8, path="inbox/*"),
    Rule("raw", 0.8, field="status", values=("raw",)),
    Rule("generated", 0.8, field="source_kind", values=("generated",)),
    Rule("wiki", 0.8, path="wiki/*"),
    Rule("digests", 0.85, path="digests/*"),
    Rule("evidence-artifacts", 0.85, path="sources/semantic/*"),
    Rule("logs", 0.75, path="logs/*"),
    Rule("superseded", 0.0, field="status", values=("superseded", "retired", "tombstoned")),
    Rule("superseded-by", 0.0, field="superseded_by", values=("*",)),
    Rule("tombstone", 0.0, field="type", values=("tombstone",)),
    Rule("quarantine", 0.0, path="inbox/quarantine/*"),
)


class RankingPolicy:
    def __init__(self, rules: tuple[Rule, ...] = DEFAULT_RULES) -> None:
        self.rules = rules

    @classmethod
    def from_settings(cls, overrides: list[dict[str, Any]]) -> RankingPolicy:
        rules = {rule.name: rule for rule in DEFAULT_RULES}
        for raw in overrides:
            rule = _parse_rule(raw)
            rules[rule.name] = rule
        return cls(tuple(rules.values()))

    def factor(self, path: str, fields: Mapping[str, Any]) -> tuple[float, list[str]]:
        factor, names = 1.0, []
        for rule in self.rules:
            if rule.matches(path, fields):
                factor *= rule.factor
                names.append(rule.name)
        return factor, names


def _parse_rule(raw: dict[str, Any]) -> Rule:
    known = {"name", "factor", "path", "field", "values"}
    unknown = set(raw) - known
    if unknown:
        raise ConfigError(f"search.policy: unknown keys {sorted(unknown)}")
    name, factor = raw.get("name"), raw.get("factor")
    if not isinstance(name, str) or not name:
        raise ConfigError("search.policy: every rule needs a name")
    if not isinstance(factor, int | float) or factor < 0:
        raise ConfigError(f"search.policy rule {name!r}: factor must be a number ≥ 0")
    field = raw.get("field")
    if field is not None and field not in FIELDS:
        raise ConfigError(f"search.policy rule {name!r}: field must be one of {', '.join(FIELDS)}")
    if raw.get("path") is None and field is None:
        raise ConfigError(f"search.policy rule {name!r}: give a path glob or a field")
    values = raw.get("values", ["*"])
    if isinstance(values, str):
        values = [values]
    return Rule(name, float(factor), raw.get("path"), field, tuple(str(v).lower() for v in values))
