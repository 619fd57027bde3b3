"""The settings the docs name are the settings Dory has.

The template's dory.toml says "Every setting is optional; the values shown are the defaults", and the
README says it "lists every setting with its default". Both are checked against dory/config.py's
models and the job registry: every setting it shows (commented out) loads, with the value shown,
which is the default (or, for a setting that is unset by default, an example); every setting of
every section is shown. And every setting named anywhere in the README or the template, as
`[section] key`, `section.key` or `DORY_SECTION_KEY`, exists.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dory.config import SECTIONS, WakeProfile
from dory.jobs.registry import JOBS
from dory.service.settings import open_settings

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "corpus-template"
TEMPLATE_TOML = TEMPLATE / "dory.toml"
README = REPO / "README.md"

# `# key = value` and `# [section]` / `# [[section.sub]]` lines: settings shown commented out.
SHOWN_SETTING = re.compile(r"^#\s?(?P<key>[A-Za-z_][\w-]*)\s*=\s*(?P<value>.+)$")
SHOWN_TABLE = re.compile(r"^#?\s?(?P<table>\[\[?[\w.-]+\]\]?)\s*$")
# Examples, not defaults: a ranking rule and a wake profile (their keys are checked as such).
EXAMPLE_TABLES = {"[[search.policy]]", "[wake.profiles.coding]"}
POLICY_RULE_KEYS = {"name", "path", "field", "value", "factor"}

# Mentions in prose: `[section] key`, `section.key`, DORY_SECTION_KEY.
BRACKETED = re.compile(r"\[(?P<section>[a-z]+)\]\s+(?P<key>[a-z][a-z0-9_-]*)")
DOTTED = re.compile(r"(?<![\w./-])(?P<section>[a-z]+)\.(?P<key>[a-z][a-z0-9_]*)(?![\w./(-])")
ENV_NAME = re.compile(r"\bDORY_(?P<name>[A-Z][A-Z0-9_]*[A-Z0-9])\b")
# `index.sqlite` is a file, not a setting.
FILE_EXTENSIONS = {"md", "sqlite", "faiss", "toml", "json", "jsonl", "py", "lock", "sock", "txt", "log"}


def shown_settings(text: str) -> Iterator[tuple[int, str, str, str]]:
    """(line, table, key, value text) for every setting the template shows, commented out or not."""
    table = ""
    for number, line in enumerate(text.splitlines(), 1):
        if found := SHOWN_TABLE.match(line.strip()):
            table = found.group("table")
        elif found := SHOWN_SETTING.match(line.strip()) or re.match(
            r"^(?P<key>[a-z][\w-]*)\s*=\s*(?P<value>.+)$", line
        ):
            yield number, table, found.group("key"), found.group("value")


def uncommented(text: str) -> str:
    """The template with every setting and table it shows switched on."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if SHOWN_TABLE.match(stripped) or SHOWN_SETTING.match(stripped):
            lines.append(stripped.lstrip("#").strip())
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def section_of(table: str) -> str:
    return table.strip("[]").split(".")[0]


def test_every_setting_the_template_shows_loads_with_the_value_shown(tmp_path: Path) -> None:
    (tmp_path / "dory.toml").write_text(uncommented(TEMPLATE_TOML.read_text(encoding="utf-8")), encoding="utf-8")
    settings = open_settings(tmp_path, env={})  # unknown keys and bad values are a ConfigError
    assert settings.wake.profiles["coding"].sections and settings.search.policy[0]["name"] == "inbox"


def test_the_values_shown_are_the_defaults() -> None:
    wrong = []
    for number, table, key, raw in shown_settings(TEMPLATE_TOML.read_text(encoding="utf-8")):
        if table in EXAMPLE_TABLES:
            continue
        value = tomllib.loads(f"v = {raw}")["v"]
        section = section_of(table)
        if section == "jobs":
            default: Any = JOBS[key].default_schedule
        else:
            field = SECTIONS[section].model_fields[key]
            default = field.get_default(call_default_factory=True)
        if default is not None and value != default:
            wrong.append(f"dory.toml:{number}: {table} {key} = {raw}, but the default is {default!r}")
    assert not wrong, "\n".join(wrong)


def test_the_template_shows_every_setting() -> None:
    text = TEMPLATE_TOML.read_text(encoding="utf-8")
    shown = {(section_of(table), key) for _, table, key, _ in shown_settings(text) if table not in EXAMPLE_TABLES}
    tables = {found.group("table") for line in text.splitlines() if (found := SHOWN_TABLE.match(line.strip()))}
    missing = []
    for section, model in SECTIONS.items():
        if section == "jobs":
            keys = {name for name, spec in JOBS.items() if spec.driven is None}
        else:
            keys = set(model.model_fields)
        for key in sorted(keys):
            # A table of its own: search.policy rules, wake profiles (shown as examples).
            if (section, key) not in shown and not any(t.strip("[]").startswith(f"{section}.{key}") for t in tables):
                missing.append(f"[{section}] {key}")
    assert not missing, "settings the template's dory.toml does not show: " + ", ".join(missing)


def test_the_example_tables_use_real_keys() -> None:
    for _, table, key, _ in shown_settings(TEMPLATE_TOML.read_text(encoding="utf-8")):
        if table == "[[search.policy]]":
            assert key in POLICY_RULE_KEYS, key
        elif table == "[wake.profiles.coding]":
            assert key in WakeProfile.model_fields, key


def doc_texts() -> list[tuple[str, str]]:
    files = [README, *sorted(p for p in TEMPLATE.rglob("*") if p.is_file() and p.suffix in (".md", ".toml"))]
    return [(p.relative_to(REPO).as_posix(), p.read_text(encoding="utf-8")) for p in files]


def setting_exists(section: str, key: str) -> bool:
    if section == "jobs":
        return key.replace("_", "-") in JOBS
    model = SECTIONS[section]
    return key in model.model_fields


def mentions(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, section, key) for every setting a text names."""
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in (BRACKETED, DOTTED):
            for found in pattern.finditer(line):
                if found.group("section") in SECTIONS and found.group("key") not in FILE_EXTENSIONS:
                    yield number, found.group("section"), found.group("key").replace("-", "_")
        for found in ENV_NAME.finditer(line):  # DORY_CORPUS, DORY_URL …: not DORY_<SECTION>_<KEY>
            name = found.group("name")
            section = next((s for s in SECTIONS if name.lower().startswith(s + "_")), None)
            if section is not None:
                yield number, section, name.lower()[len(section) + 1 :]


@pytest.mark.parametrize("name,text", doc_texts(), ids=lambda value: value if "/" in value or "." in value else "")
def test_settings_named_in_the_docs_exist(name: str, text: str) -> None:
    unknown = [f"{name}:{n}: {s}.{k}" for n, s, k in mentions(text) if not setting_exists(s, k)]
    assert not unknown, "settings the docs name that Dory does not have:\n" + "\n".join(unknown)


def test_the_mention_scan_finds_and_rejects_settings() -> None:
    text = (
        "Set `[write] max_bytes` and `daemon.debounce_ms`; `DORY_EMBEDDER_BACKEND=none`.\n"
        "`[capture] nope`, `search.nope`, DORY_DAEMON_NOPE, DORY_CORPUS, `dory.toml`, `index.sqlite`\n"
        "[jobs] daily-digest\n"
    )
    found = list(mentions(text))
    assert found == [
        (1, "write", "max_bytes"),
        (1, "daemon", "debounce_ms"),
        (1, "embedder", "backend"),
        (2, "capture", "nope"),
        (2, "search", "nope"),
        (2, "daemon", "nope"),
        (3, "jobs", "daily_digest"),
    ]
    assert [setting_exists(s, k) for _, s, k in found] == [True, True, True, False, False, False, True]
