"""Tricky notes whose chunking is pinned (tests/index/test_chunk_pins.py): the indexer's speed work
must leave every chunk's id, text, line range, token count and heading path exactly as they were."""

from __future__ import annotations

LONG_PARAGRAPH = " ".join(f"word{i} lorem ipsum dolor sit amet, consectetur adipiscing" for i in range(120))
LONG_LINES = "\n".join(f"- item {i}: the quick brown fox jumps over the lazy dog {i * 7}" for i in range(90))
CODE = "\n".join(f"    result_{i} = compute(value_{i}, factor={i}) # step {i}" for i in range(80))

NOTES: dict[str, str | bytes] = {
    "frontmatter.md": (
        "---\ntitle: Pinned Title\ntags: [alpha, beta]\naliases: Pin\ndate: 2024-03-01\n---\n"
        "# Heading One\n\nFirst paragraph under the heading.\n\n## Sub heading\n\nSecond paragraph.\n"
    ),
    "fences.md": (
        "# Code notes\n\nIntro text before the fence.\n\n```python\n"
        + CODE
        + "\n# not a heading inside a fence\n```\n\nAfter the fence.\n\n~~~\ntilde fence\n~~~\n\n"
        "    indented code line one\n    indented code line two\n\nTail paragraph.\n"
    ),
    "long-paragraph.md": "# Long\n\n" + LONG_PARAGRAPH + "\n\n## Next\n\nshort\n",
    "long-list.md": "Intro line.\n\n" + LONG_LINES + "\n\n# After list\n\n" + LONG_PARAGRAPH[:900] + "\n",
    "one-long-line.md": "x" * 3000 + "\n",
    "cjk.md": (
        "# 日本語のノート\n\n"
        + "これは日本語の文章です。東京は日本の首都です。" * 30
        + "\n\n## 中文\n\n"
        + "这是一个中文段落，用于测试分块。" * 40
        + "\n\n### 한국어\n\n"
        + "한국어 문장입니다. " * 50
        + "\n"
    ),
    "emoji.md": "# Emoji 🎉\n\n"
    + "Party 🎉🥳 with family 👨‍👩‍👧‍👦 and flags 🇫🇷🇯🇵. " * 40
    + "\n\n- ✅ done\n- ❌ not done\n",
    "crlf.md": "---\r\ntitle: Windows\r\n---\r\n# CRLF heading\r\n\r\nline one\r\nline two\r\n\r\n## Second\r\n\r\n"
    + "crlf words here " * 80
    + "\r\n",
    "broken-frontmatter.md": "---\ntitle: [unclosed\nother: : :\n---\n# Still indexed\n\nbody text\n",
    "frontmatter-only.md": "---\ntitle: Person\naliases: [Bob, Robert]\ntags: people\n---\n",
    "plain.md": "just some plain words\nwith no markdown structure at all\nover three lines\n",
    "structure.md": (
        "Setext heading\n==============\n\nText under setext.\n\nSecond setext\n-------------\n\n"
        "> a quote\n> continues here\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n"
        "<div>\nraw html block\n</div>\n\n[ref]: https://example.com\n\n"
        "1. first\n   - nested\n     - deeper\n2. second\n\n***\n\n#### Level four\n\n###### Level six ######\n\n"
        "#NotAHeading\n\n# \n\nafter empty heading\n"
    ),
    "headings-only.md": "# A\n## B\n### C\n# D\n## E\n",
    "many-sections.md": "\n\n".join(
        f"## Section {i}\n\n" + " ".join(f"s{i}w{j}" for j in range(30 + i * 7)) for i in range(25)
    )
    + "\n",
    "bom.md": "\ufeff# BOM note\n\nbody after a byte order mark\n".encode(),
    "utf16.md": "# UTF-16 note\n\nbody in utf-16\n".encode("utf-16"),
    "trailing-blank.md": "# T\n\ntext\n\n\n\n   \n",
    "tabs-and-spaces.md": "#\tTab heading\n\n\tTabbed code\n\n  two-space para\n",
}
