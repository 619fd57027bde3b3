"""Token counting and the MiniLM wordpiece tokenizer.

Two counters exist:

* the real MiniLM wordpiece tokenizer (`tokenizer.json` from the model package), used whenever the
  model is installed, because it matches the embedder's real 256-token window;
* a deterministic approximation for when it is not installed. It splits text the way BERT's basic
  tokenizer does (words, digit runs, each punctuation mark and each CJK character) and charges long
  words extra pieces. Calibrated on ~2,000 samples of Python source and English markdown it is within
  about 6 % on average and errs slightly on the high side, which keeps chunks inside the window.
  Its rules are frozen: changing them must change APPROX_COUNTER_ID.
"""

from __future__ import annotations

import math
import os
import re
import threading
from pathlib import Path

from tokenizers import Tokenizer

from dory.errors import ModelUnavailable

from .base import NamedCounter
from .model_files import EXPECTED_SHA256, locate_model_dir, verify_files

MAX_TOKENS = 256  # all-MiniLM-L6-v2 was trained with 256-token inputs (special tokens included)

APPROX_COUNTER_ID = "approx:v1"
MINILM_COUNTER_ID = "wordpiece:all-MiniLM-L6-v2@" + EXPECTED_SHA256["tokenizer.json"][:12]

# One match per piece BERT's basic tokenizer would produce: a CJK character, a run of letters, a run
# of digits, or a single punctuation/symbol character (underscore counts as punctuation for BERT).
_PIECE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W\d_]+|\d+|[^\w\s]|_")
_SHORT_WORD = 6  # letters; words up to this length are usually one wordpiece
_EXTRA_LETTERS_PER_PIECE = 4
_DIGITS_PER_PIECE = 2

# The exact wordpiece count of ASCII text, word by word (see MiniLMTokenizer.count). ASCII control
# characters other than tab, LF and CR are deleted by BERT's normalizer, which can join two words, so
# text holding one takes the tokenizer's own path.
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# BERT's pre-tokenizer on ASCII: runs of letters and digits, and every other visible character alone.
_ASCII_WORD = re.compile(r"[a-z0-9]+|[^a-z0-9 \t\n\r]")
# Where other text is cut: whitespace BERT splits at and never deletes.
_ASCII_SPACE = re.compile(r"[ \t\n\r]+")
_WORD_CACHE_MAX = 500_000  # distinct words remembered; a few tens of MB at most
_WORD_MAX_CHARS = 64  # longer words (hashes, base64) are counted every time, never remembered


def approx_token_count(text: str) -> int:
    """Deterministic estimate of the MiniLM wordpiece count of `text` (no special tokens)."""
    count = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        if piece[0].isdigit():
            count += math.ceil(len(piece) / _DIGITS_PER_PIECE)
        elif len(piece) <= _SHORT_WORD:
            count += 1
        else:
            count += 1 + math.ceil((len(piece) - _SHORT_WORD) / _EXTRA_LETTERS_PER_PIECE)
    return count


# One tokenizer per tokenizer.json (by path, size and mtime) for the whole process.
_loaded: dict[tuple[str, int, int], MiniLMTokenizer] = {}
_loaded_lock = threading.Lock()


class MiniLMTokenizer:
    """The model's wordpiece tokenizer, set up twice: once for counting, once for encoding.

    The bundled tokenizer.json has truncation to 128 and fixed padding to 128 baked in. Counting
    needs neither (a chunker must see the full length); encoding needs truncation to 256 and no
    fixed padding (the encoder pads each length-sorted micro-batch to its own longest sequence).
    """

    def __init__(self, tokenizer_json: Path) -> None:
        self._path = tokenizer_json
        self._counter = Tokenizer.from_file(str(tokenizer_json))
        self._counter.no_truncation()
        self._counter.no_padding()
        self._word_counts: dict[str, int] = {}
        self._encoder: Tokenizer | None = None  # loaded on the first encode: counting alone never needs it
        self._encoder_lock = threading.Lock()

    @classmethod
    def from_model_dir(cls, model_dir: Path) -> MiniLMTokenizer:
        """Verify tokenizer.json (cheap; cached) and load it once per process: every service of a
        process (a server's corpora, a test run) shares one tokenizer and its memory of word counts.
        Loading takes ~16 ms, which each write of a fresh service paid before."""
        verify_files(model_dir, ["tokenizer.json"])
        path = model_dir / "tokenizer.json"
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        with _loaded_lock:
            if key not in _loaded:
                _loaded[key] = cls(path)
            return _loaded[key]

    def count(self, text: str) -> int:
        """Wordpieces in `text`, no special tokens: exactly what encoding it would give.

        Counting is most of the lexical pass's time, so ASCII text (nearly all of a typical corpus)
        is counted without running the whole tokenizer over it: BERT's normaliser only lowercases
        ASCII (no accents, no CJK), its pre-tokenizer cuts at whitespace and around each punctuation
        mark, and wordpiece then works on each word alone. So the count is the sum of the words'
        counts, and each distinct word is sent through the real tokenizer once and remembered.
        Other text is cut at ASCII whitespace only, and each piece (as written) is counted and
        remembered the same way.
        """
        if not text.isascii() or _ASCII_CONTROL.search(text):
            # Cut only where BERT cuts too (ASCII whitespace); each piece is counted whole.
            words = _ASCII_SPACE.split(text)
        else:
            words = _ASCII_WORD.findall(text.lower())
        try:
            return sum(map(self._word_counts.__getitem__, words))
        except KeyError:
            return self._count_new_words(words)

    def _count_new_words(self, words: list[str]) -> int:
        """The count of `words` when some have not been seen yet: those go through the tokenizer. Works
        on a local copy, so a thread clearing the shared memory meanwhile is harmless."""
        known = self._word_counts
        counts = {word: known.get(word, -1) for word in words}
        new = [word for word, n in counts.items() if n < 0]
        for word in new:  # one by one: a batch call wakes a thread pool, costlier for single words
            counts[word] = len(self._counter.encode(word, add_special_tokens=False))
        if len(known) + len(new) > _WORD_CACHE_MAX:
            known.clear()
        known.update((word, counts[word]) for word in new if len(word) <= _WORD_MAX_CHARS)
        return sum(map(counts.__getitem__, words))

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Token ids with [CLS]/[SEP], truncated to MAX_TOKENS, unpadded."""
        with self._encoder_lock:
            if self._encoder is None:
                encoder = Tokenizer.from_file(str(self._path))
                encoder.enable_truncation(MAX_TOKENS)
                encoder.no_padding()
                self._encoder = encoder
        return [encoding.ids for encoding in self._encoder.encode_batch(texts)]


def default_token_counter(model_path: str | os.PathLike[str] | None = None) -> NamedCounter:
    """The MiniLM tokenizer's counter if the model is installed, else the approximation.

    "Not installed" falls back quietly; an installed but corrupt tokenizer raises ModelUnavailable,
    because silently switching counters would re-cut every chunk.
    """
    try:
        model_dir = locate_model_dir(model_path)
    except ModelUnavailable:
        if model_path is not None:
            raise  # an explicit folder that does not exist is a settings mistake, not "not installed"
        return NamedCounter(approx_token_count, APPROX_COUNTER_ID)
    tokenizer = MiniLMTokenizer.from_model_dir(model_dir)
    return NamedCounter(tokenizer.count, MINILM_COUNTER_ID)
