"""Strict JSON out of a model's answer: find the JSON object in the text, then check it against a schema.

Models wrap JSON in ``` fences, put a sentence before it, or think aloud in <think> blocks, even
when asked not to; `extract_json_object` tolerates all of that but never guesses: it returns the
first complete JSON object in the text or raises ValueError.

`schema_errors` checks a small JSON-schema subset, enough for the structured answers Dory asks for:
type (object, array, string, integer, number, boolean, null, or a list of them), properties,
required, items, enum, maxLength, maxItems and additionalProperties: false. Any other keyword
raises ValueError (a programming error), so a schema never claims a constraint nobody checks.
"""

from __future__ import annotations

import json
import re
from typing import Any

from dory.models.common import loads_json

SUPPORTED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "maxLength",
        "maxItems",
        "additionalProperties",
        "description",
        "title",
    }
)
_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
}
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
# Reasoning models (DeepSeek-R1, Qwen3 through Ollama) put their thinking before the answer; it may
# itself contain braces, so it goes before any search for JSON.
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def extract_json_object(text: str) -> dict[str, Any]:
    """The JSON object in `text`: the whole text, else a fenced block, else the first `{...}` that parses."""
    text = _THINK.sub("", text).strip()
    candidates = [text, *(block.strip() for block in _FENCE.findall(text))]
    for candidate in candidates:
        try:
            value = loads_json(candidate, limit=None)  # the schema bounds the shape
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    found = _first_embedded_object(text)
    if found is None:
        raise ValueError("no JSON object found")
    return found


def _first_embedded_object(text: str) -> dict[str, Any] | None:
    """Scan for `{` and decode from there: skips leading prose and ignores whatever follows the object."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # not JSON here, or nested past the parser's limit
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def check_schema(schema: dict[str, Any], path: str = "$") -> None:
    """Raise ValueError if the schema uses a keyword this validator does not enforce."""
    unknown = set(schema) - SUPPORTED_KEYWORDS
    if unknown:
        raise ValueError(f"schema at {path} uses unsupported keywords: {', '.join(sorted(unknown))}")
    types = schema.get("type", [])
    for name in [types] if isinstance(types, str) else types:
        if name not in _TYPES:
            raise ValueError(f"schema at {path} names an unsupported type {name!r}")
    if "items" in schema and not isinstance(schema["items"], dict):
        raise ValueError(f"schema at {path}: items must be one schema (tuple forms are not supported)")
    for key, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{path}.{key}")
    if "items" in schema:
        check_schema(schema["items"], f"{path}[]")


def schema_errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[tuple[str, str]]:
    """Every (path, problem) where `value` breaks `schema`; paths look like `$.claims[0].kind`."""
    expected = schema.get("type")
    if expected is not None:
        types = [expected] if isinstance(expected, str) else list(expected)
        if not any(_is_type(value, name) for name in types):
            return [(path, f"expected {' or '.join(types)}, got {_json_type(value)}")]
    problems: list[tuple[str, str]] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append((path, f"{value!r} is not one of {schema['enum']!r}"))
    if isinstance(value, str) and "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append((path, f"is {len(value)} characters long, at most {schema['maxLength']} allowed"))
    if isinstance(value, list):
        problems.extend(_array_errors(value, schema, path))
    if isinstance(value, dict):
        problems.extend(_object_errors(value, schema, path))
    return problems


def _array_errors(value: list[Any], schema: dict[str, Any], path: str) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        problems.append((path, f"has {len(value)} items, at most {schema['maxItems']} allowed"))
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            problems.extend(schema_errors(item, items, f"{path}[{index}]"))
    return problems


def _object_errors(value: dict[str, Any], schema: dict[str, Any], path: str) -> list[tuple[str, str]]:
    properties: dict[str, Any] = schema.get("properties") or {}
    problems = [(f"{path}.{key}", "is required but missing") for key in schema.get("required", []) if key not in value]
    for key, item in value.items():
        if key in properties:
            problems.extend(schema_errors(item, properties[key], f"{path}.{key}"))
        elif schema.get("additionalProperties") is False:
            problems.append((f"{path}.{key}", "is not an allowed field"))
    return problems


def _is_type(value: Any, name: str) -> bool:
    # bool is a subclass of int in Python but never a number in JSON.
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _TYPES[name])


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _is_type(value, name):
            return name
    return type(value).__name__
