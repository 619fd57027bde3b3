"""HTML, and Evernote's ENML (`<en-note>` XHTML), as markdown.

The markup is parsed by the standard library's forgiving `html.parser` (no DTD, no entity
definitions, no network: only HTML's fixed set of named characters), into a small tree that is
then written out: headings, paragraphs, lists, tables (the first row is the header, as markdown
tables need one), links, images, quotes, code, bold/italic/strikethrough. Each `<div>`/`<p>` is
its own paragraph. Evernote's own elements are handed to the caller (`Hooks`): `<en-media>`
(an attachment), `<en-crypt>` (an encrypted block), a data-URL image, a task group; `<en-todo>`
becomes a `- [ ]`/`- [x]` checkbox. Markup nested deeper than MAX_DEPTH is flattened rather than
recursed into (a web clip can nest thousands deep).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser

from dory.migrate.text import fence

MAX_DEPTH = 60
VOID = frozenset({"br", "hr", "img", "col", "en-media", "en-todo", "input", "meta", "link", "area", "base", "wbr"})
SKIPPED = frozenset({"style", "script", "title", "noscript", "template"})
BLOCK = frozenset(
    {
        "div", "p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "table", "blockquote", "pre",
        "hr", "en-note", "body", "html", "section", "article", "header", "footer", "center", "dl", "dt",
        "dd", "figure", "figcaption", "en-crypt", "address", "aside", "main", "nav", "details", "summary",
    }
)  # fmt: skip
TODO = "\x00"  # marks where an <en-todo> stood until its paragraph is written
_SPACES = re.compile(r"[ \t\n\r\f\v\xa0]+")


@dataclass
class Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Node | str] = field(default_factory=list)


@dataclass
class Hooks:
    """What the caller renders itself; each returns markdown (an empty string drops the element)."""

    media: Callable[[dict[str, str]], str] = lambda attrs: ""
    data_image: Callable[[str, str], str] = lambda src, alt: ""  # a `data:` URL image
    crypt: Callable[[dict[str, str], str], str] = lambda attrs, text: ""
    task_group: Callable[[str], str] = lambda group_id: ""  # Evernote 10's task placeholder


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("root")
        self.stack = [self.root]
        self.skipped = ""  # the element whose content is left out (style, script), and how deep
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skipping:
            self.skipping += tag == self.skipped
            return
        if tag in SKIPPED:
            self.skipped, self.skipping = tag, 1
            return
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID and len(self.stack) < MAX_DEPTH:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self.skipping and tag not in SKIPPED:
            self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            self.skipping -= tag == self.skipped
            return
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.stack[-1].children.append(data.replace(TODO, ""))


def parse(html: str) -> Node:
    try:
        return _build(html)
    except AssertionError:  # html.parser refuses some `<![name[` sections (Word's markup): read them as text
        return _build(html.replace("<![", "&lt;!["))


def _build(html: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def to_markdown(html: str, hooks: Hooks | None = None) -> str:
    return render(parse(html), hooks)


def render(root: Node, hooks: Hooks | None = None, tight: bool = False) -> str:
    """Blocks apart by a blank line; checkbox lines together, and everything in a list item (`tight`)."""
    blocks = [(kind, text) for kind, text in _Writer(hooks or Hooks()).blocks(root) if text.strip()]
    out: list[str] = []
    for n, (kind, text) in enumerate(blocks):
        close = tight or (n > 0 and kind == "task" and blocks[n - 1][0] == "task")
        out.append(("\n" if close else "\n\n") + text if out else text)
    return "".join(out).strip("\n")


Block = tuple[str, str]  # (kind, markdown): kind "task" lines sit together, others apart


class _Writer:
    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    def blocks(self, node: Node) -> list[Block]:
        """A container's children as blocks; inline runs between block elements become paragraphs."""
        out: list[Block] = []
        run: list[str] = []
        for child in node.children:
            if isinstance(child, str):
                run.append(_SPACES.sub(" ", child))
            elif child.tag in BLOCK:
                out += _paragraph("".join(run))
                run = []
                out += self.block(child)
            else:
                run.append(self.inline(child))
        return out + _paragraph("".join(run))

    def block(self, node: Node) -> list[Block]:
        tag, style = node.tag, node.attrs.get("style", "").replace(" ", "")
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            text = _one_line(self.text(node))
            return [("para", "#" * int(tag[1]) + " " + text)] if text else []
        if tag in ("ul", "ol"):
            text = self.list(node, ordered=tag == "ol")
            return [("list", text)] if text else []
        if tag == "table":
            text = self.table(node)
            return [("table", text)] if text else []
        if tag == "pre" or "-en-codeblock:true" in style:
            code = _code_text(node).strip("\n")
            return [("code", fence(code))] if code.strip() else []
        if tag == "blockquote":
            inner = render(Node("root", children=list(node.children)), self.hooks)
            return [("quote", "\n".join(f"> {line}".rstrip() for line in inner.splitlines()))] if inner else []
        if tag == "hr":
            return [("para", "---")]
        if tag == "en-crypt":
            return [("crypt", self.hooks.crypt(node.attrs, _plain(node)))]
        if "--en-task-group:true" in style:
            group = re.search(r"--en-id:([^;]+)", style)
            text = self.hooks.task_group(group.group(1).strip() if group else "")
            return [("list", text)] if text else []
        return self.blocks(node)

    def inline(self, node: Node) -> str:
        tag = node.tag
        if tag == "br":
            return "\n"
        if tag == "en-todo":
            return TODO + ("x" if node.attrs.get("checked", "").lower() == "true" else " ")
        if tag == "en-media":
            return self.hooks.media(node.attrs)
        if tag == "img":
            return self.image(node.attrs)
        if tag == "input" and node.attrs.get("type") == "checkbox":
            return TODO + ("x" if "checked" in node.attrs else " ")
        text = self.text(node)
        if tag == "a":
            return _link(text, node.attrs.get("href", "").strip())
        if tag in ("b", "strong"):
            return _wrap(text, "**")
        if tag in ("i", "em"):
            return _wrap(text, "*")
        if tag in ("s", "strike", "del"):
            return _wrap(text, "~~")
        if tag == "code":
            return _wrap(text, "`") if "\n" not in text and "`" not in text else text
        return text

    def text(self, node: Node) -> str:
        """A node's content as inline markdown (block children joined by line breaks)."""
        parts: list[str] = []
        for child in node.children:
            if isinstance(child, str):
                parts.append(_SPACES.sub(" ", child))
            elif child.tag in BLOCK:
                parts.append("\n" + "\n".join(text for _, text in self.block(child)) + "\n")
            else:
                parts.append(self.inline(child))
        return "".join(parts)

    def image(self, attrs: dict[str, str]) -> str:
        src, alt = attrs.get("src", "").strip(), _one_line(attrs.get("alt", ""))
        if src.lower().startswith("data:"):
            return self.hooks.data_image(src, alt)
        return f"![{_label(alt)}]({_target(src)})" if src else ""

    def list(self, node: Node, ordered: bool) -> str:
        lines: list[str] = []
        number = _int(node.attrs.get("start"), 1)
        for child in node.children:
            if isinstance(child, str) or child.tag not in ("li", "ul", "ol"):
                continue
            if child.tag != "li":  # a list directly inside a list: it belongs to the item before
                nested = self.list(child, ordered=child.tag == "ol")
                lines += ["  " + line if line else line for line in nested.splitlines()]
                continue
            marker = f"{number}." if ordered else "-"
            number += 1
            lines += _item(marker, render(Node("root", children=list(child.children)), self.hooks, tight=True))
        return "\n".join(lines)

    def table(self, node: Node) -> str:
        rows: list[list[str]] = []
        for row in _rows(node):
            cells: list[str] = []
            for cell in row.children:
                if isinstance(cell, Node) and cell.tag in ("td", "th"):
                    text = render(Node("root", children=list(cell.children)), self.hooks)
                    cells.append(_cell(text))
                    cells += [""] * (_int(cell.attrs.get("colspan"), 1) - 1)
            if cells:
                rows.append(cells)
        if not rows:
            return ""
        width = max(len(row) for row in rows)
        rows = [row + [""] * (width - len(row)) for row in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows[1:]])


def _rows(table: Node) -> list[Node]:
    """The table's own rows (through thead/tbody/tfoot, not into nested tables)."""
    rows: list[Node] = []
    for child in table.children:
        if isinstance(child, Node):
            if child.tag == "tr":
                rows.append(child)
            elif child.tag in ("thead", "tbody", "tfoot"):
                rows += [r for r in child.children if isinstance(r, Node) and r.tag == "tr"]
    return rows


def _paragraph(raw: str) -> list[Block]:
    lines = [" ".join(line.split()) for line in raw.split("\n")]
    text = "\n".join(line for line in lines if line)
    if not text:
        return []
    if text.startswith(TODO):
        return [("task", f"- [{text[1]}] " + _checks(text[2:]).strip())]
    return [("para", "\n".join(_escape_start(line) for line in _checks(text).split("\n")))]


def _item(marker: str, inner: str) -> list[str]:
    """One list item: its first line after the marker, the rest indented under it."""
    if not inner:
        return [marker]
    first, *rest = inner.split("\n")
    if first.startswith("- [") and marker == "-":  # a checkbox item is already a list line
        head = first
    else:
        head = f"{marker} {first.removeprefix('- ') if first.startswith('- [') else first}"
    pad = " " * (len(marker) + 1)
    return [head] + [pad + line if line else "" for line in rest]


def _checks(text: str) -> str:
    return text.replace(TODO + "x", "[x] ").replace(TODO + " ", "[ ] ").replace(TODO, "")


def _escape_start(line: str) -> str:
    """A line of text that markdown would read as a heading, quote or list keeps its text."""
    number = re.match(r"\d+(?=[.)](\s|$))", line)
    if number:
        return line[: number.end()] + "\\" + line[number.end() :]
    if re.match(r"(#{1,6}(\s|$)|>|[-+*](\s|$))", line):
        return "\\" + line
    return line


def _wrap(text: str, mark: str) -> str:
    core = text.strip()
    if not core or "\n" in core:
        return text
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    return f"{lead}{mark}{core}{mark}{trail}"


def _link(text: str, href: str) -> str:
    label = _one_line(text)
    if not href or href.startswith("#") or href.lower().startswith("javascript:"):
        return text
    if not label or label == href:
        return f"<{href}>" if " " not in href and ">" not in href else _target(href)
    return f"[{_label(label)}]({_target(href)})"


def _label(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")


def _target(url: str) -> str:
    return f"<{url}>" if any(c in url for c in " ()") and "<" not in url and ">" not in url else url


def _cell(text: str) -> str:
    return "<br>".join(line.strip() for line in text.splitlines() if line.strip()).replace("|", "\\|")


def _one_line(text: str) -> str:
    return " ".join(_checks(text).split())


def _plain(node: Node) -> str:
    return "".join(c if isinstance(c, str) else _plain(c) for c in node.children)


def _code_text(node: Node) -> str:
    """Code keeps its spaces: text as written, a line per <div>/<p>/<br> (Evernote's code blocks)."""
    parts: list[str] = []
    for child in node.children:
        if isinstance(child, str):
            parts.append(child.replace("\xa0", " "))
        elif child.tag == "br":
            parts.append("\n")
        else:
            inner = _code_text(child)
            parts.append(inner + "\n" if child.tag in ("div", "p") and not inner.endswith("\n") else inner)
    return "".join(parts)


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, min(int(value or ""), 1000))
    except ValueError:
        return default
