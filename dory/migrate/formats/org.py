"""Basic Org mode as Logseq writes it, turned into Logseq's markdown (then read like any page).

Logseq graphs may hold `.org` pages and journals. What is converted: `* headings` become outline
bullets nested by their level (their text lines follow, indented under them); `#+TITLE:` and other
`#+KEY:` lines before the first heading become page properties; `:PROPERTIES:` drawers become
`key:: value` lines (so block ids are found like markdown ones), other drawers (`:LOGBOOK:` clock
entries) are dropped; `[[url][label]]` becomes a markdown link, `[[Page][label]]` a labelled page
link, a bare `[[https://…]]` an autolink; `*bold*` becomes `**bold**` and `~code~`/`=verbatim=`
inline code. `#+BEGIN_…` blocks are left for the markdown reader, which already knows them.
What is not: tables, footnotes, `/italic/` (indistinguishable from paths), timestamps, priorities.
Their text stays as written.
"""

from __future__ import annotations

import re

from dory.migrate.formats.prose import code_span

_HEADING = re.compile(r"^(\*+)\s+(.*)$")
_KEYWORD = re.compile(r"^#\+(\w+):\s*(.*)$")
_DRAWER = re.compile(r"^:([A-Za-z]+):\s*$")
_DRAWER_PROPERTY = re.compile(r"^:([^:\s]+):\s*(.*)$")
_VERBATIM_BLOCK = re.compile(r"^#\+BEGIN_(SRC|EXAMPLE|QUERY|EXPORT)\b", re.IGNORECASE)
_INLINE = re.compile(
    r"(?<![\w~])~(?P<code>[^~\n]+?)~(?![\w~])"
    r"|(?<![\w=])=(?P<verbatim>[^=\n]+?)=(?![\w=])"
    r"|\[\[(?P<target>[^\[\]\n]+)\]\[(?P<label>[^\[\]\n]+)\]\]"
    r"|\[\[(?P<url>[A-Za-z][A-Za-z0-9+.-]*:[^\[\]\n]+)\]\]"
    r"|(?<![\w*])\*(?P<bold>\S(?:[^*\n]*?\S)?)\*(?![\w*])"
)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:|/|\./|\.\./)")


def to_markdown(text: str) -> str:
    out: list[str] = []
    level = 0  # the current heading's level; 0 before the first heading
    drawer: str | None = None
    block: str | None = None  # the `#+END_X` of the open verbatim block
    block_indent = 0
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        stripped = line.strip()
        cont = "\t" * (level - 1) + "  " if level else ""
        if block is not None:  # code keeps its own indentation past the block's
            shift = min(len(line) - len(line.lstrip()), block_indent)
            out.append((cont + line[shift:]).rstrip())
            if stripped.upper().startswith(block):
                block = None
            continue
        if drawer is not None:
            if stripped.upper() == ":END:":
                drawer = None
            elif drawer == "PROPERTIES" and (prop := _DRAWER_PROPERTY.match(stripped)):
                out.append(f"{cont}{prop.group(1).lower()}:: {prop.group(2)}".rstrip())
            continue
        heading = _HEADING.match(line)
        if heading is not None:
            level = len(heading.group(1))
            out.append("\t" * (level - 1) + "- " + inline(heading.group(2)))
            continue
        keyword = _KEYWORD.match(stripped)
        if keyword is not None and level == 0 and not keyword.group(1).upper().startswith(("BEGIN_", "END_")):
            out.append(f"{keyword.group(1).lower()}:: {keyword.group(2)}".rstrip())
            continue
        if (opened := _DRAWER.match(stripped)) and opened.group(1).upper() != "END":
            drawer = opened.group(1).upper()
            continue
        if (verbatim := _VERBATIM_BLOCK.match(stripped)) is not None:
            block, block_indent = f"#+END_{verbatim.group(1).upper()}", len(line) - len(line.lstrip())
            out.append(cont + stripped)
            continue
        out.append(cont + inline(stripped) if stripped else "")
    return "\n".join(out)


def inline(text: str) -> str:
    return _INLINE.sub(_inline, text)


def _inline(match: re.Match[str]) -> str:
    if match.group("code") is not None:
        return code_span(match.group("code"))
    if match.group("verbatim") is not None:
        return code_span(match.group("verbatim"))
    if match.group("target") is not None:
        target, label = match.group("target"), match.group("label")
        return f"[{label}]({target})" if _SCHEME.match(target) else f"[{label}]([[{target}]])"
    if match.group("url") is not None:
        return f"<{match.group('url')}>"
    return f"**{match.group('bold')}**"
