"""The items of a JSON export, one at a time: the elements of a top-level array, or one top-level value.

Chat exports are one big JSON array (`conversations.json` runs to hundreds of megabytes). Parsing it
whole would hold every conversation as Python objects at once, and even decoding it whole to one
`str` can take four times its size (one emoji widens every character of a Python string). So the
bytes are decoded a chunk at a time into a small text buffer and each element is parsed as soon as
the buffer holds all of it: memory holds the file's bytes, a chunk and the element being read.

An element that is not valid JSON stops the walk with `BrokenJson`, after the elements before it
were handed out (a truncated export still gives every conversation it holds in full). An element
cut by the end of the buffer is told apart from a broken one by where the parser stopped: at the end
of the text, or inside a string that never closes.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator

CHUNK_BYTES = 1024 * 1024
NEAR_END = 16
# strict=False: raw control characters inside strings are tolerated (the session cleaner removes them).
_DECODER = json.JSONDecoder(strict=False)
_SPACE = " \t\r\n"


class BrokenJson(ValueError):
    """The text stopped being JSON after `count` items; `truncated` when it simply ended too soon."""

    def __init__(self, message: str, count: int, truncated: bool) -> None:
        super().__init__(message)
        self.count = count
        self.truncated = truncated


class _Text:
    """The text of `data`, decoded on demand: `buf[at:]` is what is decoded and not yet consumed."""

    def __init__(self, data: bytes) -> None:
        encoding, start = _encoding(data)
        self.data = data
        self.read = start
        self.decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self.buf = ""
        self.at = 0

    def more(self) -> bool:
        """Decode the next chunk into the buffer; False once the bytes are all decoded."""
        if self.read >= len(self.data):
            return False
        chunk = self.data[self.read : self.read + CHUNK_BYTES]
        self.read += len(chunk)
        final = self.read >= len(self.data)
        if self.at:  # drop what was consumed, so the buffer stays about one chunk long
            self.buf, self.at = self.buf[self.at :], 0
        self.buf += self.decoder.decode(chunk, final=final)
        return True

    def skip_space(self) -> bool:
        """Move past white space; False when the text ends first."""
        while True:
            while self.at < len(self.buf) and self.buf[self.at] in _SPACE:
                self.at += 1
            if self.at < len(self.buf):
                return True
            if not self.more():
                return False

    def value(self, count: int) -> object:
        """The JSON value starting here (reading more text while the buffer's end may cut it)."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.at)
            except json.JSONDecodeError as exc:
                unterminated = exc.msg.startswith("Unterminated string")
                if (unterminated or self._near_end(exc.pos)) and self.more():
                    continue
                cut = unterminated or not self.buf[exc.pos :].strip(_SPACE)
                why = "the file ends inside it" if cut else f"{exc.msg} at line {exc.lineno} column {exc.colno}"
                raise BrokenJson(f"item {count + 1} is not valid JSON: {why}", count, truncated=cut) from None
            except RecursionError:
                raise BrokenJson(f"item {count + 1} is nested too deeply", count, truncated=False) from None
            if self._near_end(end) and self.more():
                continue  # a number or literal at the end may go on in the next chunk
            self.at = end
            return value

    def _near_end(self, at: int) -> bool:
        """Whether `at` is so close to the buffer's end that a token there may be cut (a `\\uXXXX`
        escape, `false`, a number: none is longer than NEAR_END characters that matter)."""
        return len(self.buf) - at <= NEAR_END


def json_items(data: bytes) -> Iterator[object]:
    """Each element of a top-level array, or the one top-level value when it is not an array."""
    text = _Text(data)
    del data  # `text` keeps the bytes; the caller's reference may go
    if not text.skip_space():
        raise BrokenJson("the file is empty", 0, truncated=True)
    if text.buf[text.at] != "[":
        value = text.value(0)
        _expect_end(text, 1)
        yield value
        return
    text.at += 1
    count = 0
    if not text.skip_space():
        raise BrokenJson("the file ends inside the list, after 0 items", 0, truncated=True)
    if text.buf[text.at] == "]":
        text.at += 1
        _expect_end(text, 0)
        return
    while True:
        value = text.value(count)
        count += 1
        yield value
        if not text.skip_space():
            raise BrokenJson(f"the file ends inside the list, after {count} items", count, truncated=True)
        char = text.buf[text.at]
        text.at += 1
        if char == "]":
            _expect_end(text, count)
            return
        if char != ",":
            raise BrokenJson(f"expected ',' or ']' after item {count}, found {char!r}", count, truncated=False)
        if not text.skip_space():
            raise BrokenJson(f"the file ends inside the list, after {count} items", count, truncated=True)


def _encoding(data: bytes) -> tuple[str, int]:
    """The codec and where the text starts: UTF-8 (a BOM skipped) unless a UTF-16 BOM says otherwise."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8", len(codecs.BOM_UTF8)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16", 0
    return "utf-8", 0


def _expect_end(text: _Text, count: int) -> None:
    if text.skip_space():
        raise BrokenJson("unexpected text after the end of the JSON value", count, truncated=False)
