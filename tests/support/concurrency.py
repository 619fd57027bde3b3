"""Running several CLI calls at the same moment (races between writers, readers and imports)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def parallel(run: Callable[..., Any], *calls: tuple[Any, ...]) -> list[Any]:
    """Run independent commands at once and return their results in order. A call ending in a dict
    passes it to `run` as keyword arguments (e.g. {"input": text} for stdin)."""

    def one(call: tuple[Any, ...]) -> Any:
        if call and isinstance(call[-1], dict):
            return run(*call[:-1], **call[-1])
        return run(*call)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(one, calls))
