"""Heading-aware, token-bounded chunking with exact line ranges.

A note's body is cut into top-level markdown blocks (markdown-it-py gives each block's line map).
Every line belongs to exactly one block (gaps such as link definitions attach to the block before),
so no text is ever dropped. Blocks are packed greedily into chunks of at most `max_tokens`; a heading
starts a new chunk once the current one has some substance; a fenced code block is never split (an
oversized fence becomes one chunk of its own). A chunk cut for size carries its last small block
into the next one as overlap.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from markdown_it import MarkdownIt

# Bump when chunk boundaries change for the same input: the index re-chunks everything then.
CHUNKER_VERSION = "2"
# A heading starts a new chunk only once the current one has this many tokens.
MIN_TOKENS_BEFORE_HEADING_BREAK = 48

CountMany = Callable[[list[str]], list[int]]

# Only block structure is needed (line maps and raw heading text), so inline parsing, over half of
# markdown-it's time, is switched off.
_MD = MarkdownIt("commonmark").enable("table").disable("inline")


@dataclass(frozen=True, slots=True)
class Chunk:
    ordinal: int
    start_line: int  # 1-based, inclusive, counted in the whole file (frontmatter included)
    end_line: int  # 1-based, inclusive
    heading_path: tuple[str, ...]
    text: str
    tokens: int


@dataclass(slots=True)
class _Block:
    start: int  # 0-based index into body lines
    end: int  # exclusive
    heading: tuple[int, str] | None  # (level, text) for a heading block
    unsplittable: bool  # fenced or indented code
    path: tuple[str, ...] = ()
    tokens: int = 0


def chunk_lines(
    lines: list[str], body_start: int, count_many: CountMany, max_tokens: int = 220, overlap: int = 32
) -> list[Chunk]:
    body = lines[body_start:]
    blocks = _blocks(body)
    if not blocks:
        if not any(line.strip() for line in lines):
            return []
        # Frontmatter-only note: keep it findable by its metadata text.
        text = "\n".join(lines)
        return [Chunk(0, 1, len(lines), (), text, count_many([text])[0])]
    texts = ["\n".join(body[b.start : b.end]) for b in blocks]
    for block, tokens in zip(blocks, count_many(texts), strict=True):
        block.tokens = tokens
    pieces = _split_oversized(blocks, body, count_many, max_tokens)
    groups = _pack(pieces, max_tokens, overlap)
    chunks = []
    for ordinal, group in enumerate(groups):
        start, end = group[0].start, max(b.end for b in group)
        chunk_body = body[start:end]
        while len(chunk_body) > 1 and not chunk_body[-1].strip():
            chunk_body.pop()
            end -= 1
        chunks.append(
            Chunk(
                ordinal=ordinal,
                start_line=body_start + start + 1,
                end_line=body_start + end,
                heading_path=group[0].path,
                text="\n".join(chunk_body),
                tokens=sum(b.tokens for b in group),
            )
        )
    return chunks


def _blocks(body: list[str]) -> list[_Block]:
    """Top-level blocks with their heading context; each spans up to the next block's start."""
    tokens = _MD.parse("\n".join(body))
    found: list[_Block] = []
    for index, token in enumerate(tokens):
        if token.level != 0 or token.map is None or token.nesting == -1:
            continue
        heading = None
        if token.type == "heading_open":
            heading = (int(token.tag[1:]), tokens[index + 1].content.strip())
        found.append(_Block(token.map[0], token.map[1], heading, token.type in ("fence", "code_block")))
    if not found:
        return []
    if found[0].start > 0:
        found.insert(0, _Block(0, found[0].start, None, False))
    for block, following in itertools.pairwise(found):
        block.end = following.start
    found[-1].end = len(body)
    _assign_heading_paths(found)
    return [b for b in found if any(line.strip() for line in body[b.start : b.end])]


def _assign_heading_paths(blocks: list[_Block]) -> None:
    stack: list[tuple[int, str]] = []
    for block in blocks:
        if block.heading is not None:
            level = block.heading[0]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append(block.heading)
        block.path = tuple(text for _, text in stack)


def _split_oversized(blocks: list[_Block], body: list[str], count_many: CountMany, max_tokens: int) -> list[_Block]:
    """Cut blocks over the budget into line groups; code blocks stay whole by design."""
    out: list[_Block] = []
    for block in blocks:
        if block.tokens <= max_tokens or block.unsplittable or block.end - block.start < 2:
            out.append(block)
            continue
        line_tokens = count_many(body[block.start : block.end])
        piece_start, piece_tokens = block.start, 0
        for offset, tokens in enumerate(line_tokens):
            line_no = block.start + offset
            if piece_tokens and piece_tokens + tokens > max_tokens:
                out.append(_Block(piece_start, line_no, None, False, block.path, piece_tokens))
                piece_start, piece_tokens = line_no, 0
            piece_tokens += tokens
        out.append(_Block(piece_start, block.end, None, False, block.path, piece_tokens))
    return out


def _pack(blocks: list[_Block], max_tokens: int, overlap: int) -> list[list[_Block]]:
    groups: list[list[_Block]] = []
    current: list[_Block] = []
    size = 0
    for block in blocks:
        heading_break = block.heading is not None and size >= MIN_TOKENS_BEFORE_HEADING_BREAK
        size_break = bool(current) and size + block.tokens > max_tokens
        if current and (heading_break or size_break):
            # A heading never ends a chunk: it moves on with the text it introduces.
            moved = [current.pop()] if len(current) > 1 and current[-1].heading is not None else []
            groups.append(current)
            if moved:
                current, size = moved, moved[0].tokens
                current.append(block)
                size += block.tokens
                continue
            carried = current[-1]
            carry = (
                size_break
                and not heading_break
                and carried.heading is None
                and not carried.unsplittable
                and 0 < carried.tokens <= overlap
                and carried.tokens + block.tokens <= max_tokens
            )
            current = [carried] if carry else []
            size = carried.tokens if carry else 0
        current.append(block)
        size += block.tokens
    if current:
        groups.append(current)
    return groups
