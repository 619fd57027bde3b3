"""Dory's Claude Code hooks in a `settings.json`: wake at session start, capture the transcript
before compaction and when a turn or the session ends.

Each hook is one handler in a matcher group of its own, appended after the person's groups, so
theirs run as before. A handler is recognised as Dory's by its command (the `dory` executable
running `wake --hook` or `sessions hook …`), which is how `disconnect` finds them even without the
record `connect` keeps.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dory.errors import ConfigError
from dory.surfaces.connect.jsonfile import child_object, dump, load_object, style_of

HOOKS_KEY = "hooks"


@dataclass(frozen=True)
class HookSpec:
    event: str
    matcher: str | None  # None: every occurrence of the event
    args: tuple[str, ...]  # the dory command it runs
    timeout_s: int  # Claude Code's own limit; the hook gives up earlier (fail open)
    background: bool  # Claude Code does not wait for it ("async")


HOOKS = (
    # The wake block again after /clear and after a compaction, which dropped it with the rest.
    HookSpec("SessionStart", "startup|resume|clear|compact", ("wake", "--hook"), 10, False),
    HookSpec("PreCompact", None, ("sessions", "hook", "precompact"), 60, False),
    # Stop fires after every answer: capture in the background so the prompt comes back at once.
    HookSpec("Stop", None, ("sessions", "hook", "ingest"), 60, True),
    HookSpec("SessionEnd", None, ("sessions", "hook", "ingest"), 60, False),
)


def is_dory_handler(handler: Any) -> bool:
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    try:
        words = shlex.split(handler["command"])
    except ValueError:
        return False
    if len(words) < 3 or Path(words[0]).name != "dory":
        return False
    return words[-2:] == ["wake", "--hook"] or words[-3:-1] == ["sessions", "hook"]


@dataclass(frozen=True)
class HooksEdit:
    path: Path
    command: tuple[str, ...]  # the dory executable and its global options
    what: str = "hooks " + ", ".join(spec.event for spec in HOOKS)

    def handler(self, spec: HookSpec) -> dict[str, Any]:
        handler: dict[str, Any] = {
            "type": "command",
            "command": shlex.join([*self.command, *spec.args]),
            "timeout": spec.timeout_s,
        }
        if spec.background:
            handler["async"] = True
        return handler

    def add(self, text: str | None) -> str:
        config = load_object(text, self.path)
        hooks = child_object(config, HOOKS_KEY, self.path) or {}
        changed = [self._place(self._groups(hooks, spec.event), spec) for spec in HOOKS]
        if not any(changed) and text is not None:
            return text
        config[HOOKS_KEY] = hooks
        return dump(config, style_of(text))

    def _groups(self, hooks: dict[str, Any], event: str) -> list[Any]:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{self.path}: hooks.{event} is not a list; Dory changed nothing", path=str(self.path))
        return groups

    def _place(self, groups: list[Any], spec: HookSpec) -> bool:
        """Put Dory's handler for this event in place; False when it already is, exactly."""
        wanted = self.handler(spec)
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                continue
            if wanted in handlers:
                return False
            for index, handler in enumerate(handlers):
                if is_dory_handler(handler):  # an older Dory handler (another corpus, another path)
                    handlers[index] = wanted
                    return True
        group = {"matcher": spec.matcher} if spec.matcher is not None else {}
        groups.append({**group, "hooks": [wanted]})
        return True

    def remove(self, text: str) -> str:
        """The file without any Dory handler; groups, events and `hooks` that this empties go too."""
        config = load_object(text, self.path)
        hooks = child_object(config, HOOKS_KEY, self.path)
        if not hooks:
            return text
        removed = 0
        for event, groups in list(hooks.items()):
            if not isinstance(groups, list):
                continue
            kept = []
            for group in groups:
                left, dropped = _without_dory(group)
                removed += dropped
                if left is not None:
                    kept.append(left)
            if groups and not kept:
                del hooks[event]
            else:
                hooks[event] = kept
        if not removed:
            return text
        if not hooks:
            del config[HOOKS_KEY]
        return dump(config, style_of(text))


def _without_dory(group: Any) -> tuple[Any | None, int]:
    """The group without Dory's handlers (None when it held nothing else), and how many went."""
    handlers = group.get("hooks") if isinstance(group, dict) else None
    if not isinstance(handlers, list):
        return group, 0
    kept = [handler for handler in handlers if not is_dory_handler(handler)]
    dropped = len(handlers) - len(kept)
    if dropped and not kept:
        return None, dropped
    return ({**group, "hooks": kept} if dropped else group), dropped
