"""The wordpiece counter's word-by-word path for ASCII text gives exactly the tokenizer's own count."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tokenizers import Tokenizer

from dory.index.embedders.tokens import MiniLMTokenizer

TEXTS = [
    "",
    "   \t  ",
    "Hello, world!",
    "The QUICK brown fox jumps over the lazy dog.",
    "snake_case and camelCaseWords and kebab-case-words",
    "numbers 3.14159 1,000,000 2024-03-01T12:00:00Z 0x1F",
    "unbelievably antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " " + "d" * 3000,  # over 100 chars: one [UNK]
    "email@example.com https://example.com/path?q=1&r=2#frag",
    "```python\ndef f(x):\n    return x ** 2  # square\n```",
    "line one\r\nline two\r\n\ttabbed\x0bvertical\x0cform feed",
    "joined\x01by\x02controls and del\x7fchar",  # BERT deletes these, joining the words around them
    "| col | col |\n|---|:---:|\n| `code` | **bold** |",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    "zzzqqqxxx xyzzy plugh qwertyuiopasdfghjkl",
    # Not ASCII: cut at ASCII whitespace only, each piece counted by the tokenizer.
    "Café naïve — “quotes” 日本語 🎉 mixed with ascii",
    "これは日本語の文章です。東京は日本の首都です。 中文段落，用于测试。 한국어 문장입니다.",
    "non\u00a0breaking\u2028line\u3000ideographic spaces",  # Unicode whitespace BERT splits at
    "ÉCOLE Ελληνικά ΣΟΦΟΣ İstanbul straße e\u0301te\u0301",  # case mapping, combining accents
    "family 👨\u200d👩\u200d👧 flags 🇫🇷 and\u200bzero-width\x1cjoined\u0085end",
    "\ufeffbom and \ufffd replacement",
]


def test_count_matches_the_tokenizer_exactly(model_dir: Path) -> None:
    counter = MiniLMTokenizer.from_model_dir(model_dir)
    reference = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    for _ in range(2):  # the second round counts from the remembered words
        for text in TEXTS:
            assert counter.count(text) == len(reference.encode(text, add_special_tokens=False).ids), text


def test_remembered_words_are_bounded(model_dir: Path, monkeypatch) -> None:
    monkeypatch.setattr("dory.index.embedders.tokens._WORD_CACHE_MAX", 10)
    counter = MiniLMTokenizer.from_model_dir(model_dir)
    text = " ".join(f"word{i}" for i in range(40))
    assert counter.count(text) == counter.count(text + " ") > 40
    assert len(counter._word_counts) <= 40
    blob = "q" * 65
    assert counter.count(blob) == counter.count(blob) == 65  # q ##q ##q …
    assert blob not in counter._word_counts  # long words are not remembered


def test_one_tokenizer_per_process_and_a_replaced_file_is_loaded_again(model_dir: Path, tmp_path: Path) -> None:
    """Every service of a process shares the tokenizer (loading it took ~16 ms a service); the
    encoding half is loaded only when something is encoded."""
    first = MiniLMTokenizer.from_model_dir(model_dir)
    assert MiniLMTokenizer.from_model_dir(model_dir) is first
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy)
    fresh = MiniLMTokenizer.from_model_dir(copy)
    assert fresh is not first and fresh._encoder is None
    stat = (copy / "tokenizer.json").stat()
    os.utime(copy / "tokenizer.json", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    replaced = MiniLMTokenizer.from_model_dir(copy)
    assert replaced is not fresh
    ids = replaced.encode_batch(["hello world"])
    assert replaced._encoder is not None and ids == first.encode_batch(["hello world"])
    assert ids[0][0] == 101 and ids[0][-1] == 102  # [CLS] … [SEP]
