"""Detection by looking inside files: does any of the first few candidate files parse as this format?

Typed exports (an MCP memory graph, a mem0 dump) have no telltale file name, so their readers read a
bounded number of bounded files to decide. `sniff` is that loop, shared.
"""

from __future__ import annotations

from collections.abc import Callable

from dory.migrate.model import SourceFile, SourceTreeLike

MAX_BYTES = 64 * 1024 * 1024  # larger files are not opened just to guess the format
MAX_FILES = 50


def sniff(tree: SourceTreeLike, suffixes: tuple[str, ...], parses: Callable[[SourceFile], bool]) -> bool:
    """True when one of the first MAX_FILES files with these suffixes (each under MAX_BYTES) parses."""
    checked = 0
    for file in tree.files():
        if file.suffix not in suffixes or file.size > MAX_BYTES:
            continue
        if parses(file):
            return True
        checked += 1
        if checked >= MAX_FILES:
            return False
    return False
