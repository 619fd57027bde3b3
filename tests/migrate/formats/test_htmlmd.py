"""HTML/ENML to markdown (the Evernote reader's converter, also Keep's HTML-only notes): the
constructs the Evernote tests do not reach, and markup that is broken or absurdly deep."""

from __future__ import annotations

from dory.migrate.formats.htmlmd import to_markdown


def test_quotes_code_rules_and_text_that_looks_like_markdown() -> None:
    html = (
        "<blockquote><div>first</div><div>second</div></blockquote>"
        "<pre>  x = 1\n  y = `2`</pre>"
        '<div style="-en-codeblock: true"><div>def f():</div><div>&nbsp;&nbsp;return 1</div></div>'
        "<hr/><div># not a heading</div><div>1. not a list</div><div>- nor this</div>"
        "<style>p { color: red }</style><script>alert(1)</script>"
    )
    assert to_markdown(html) == (
        "> first\n>\n> second\n\n"
        "```\n  x = 1\n  y = `2`\n```\n\n"
        "```\ndef f():\n  return 1\n```\n\n"
        "---\n\n\\# not a heading\n\n1\\. not a list\n\n\\- nor this"
    )


def test_links_images_tables_and_checkboxes_in_lists() -> None:
    html = (
        '<p><a href="https://a.org">https://a.org</a> <a href="https://b.org/x y">b [1]</a> '
        '<a href="#top">top</a> <img src="https://c.org/i.png" alt="pic"/></p>'
        '<table><tr><td colspan="2">wide</td></tr><tr><td>a<br/>b</td><td><div>c</div><div>d</div></td></tr></table>'
        '<ol start="3"><li><en-todo checked="true"/>done</li><li>open</li></ol>'
        "<p><s>gone</s> <code>x</code> <strong> </strong></p>"
    )
    assert to_markdown(html) == (
        "<https://a.org> [b \\[1\\]](<https://b.org/x y>) top ![pic](https://c.org/i.png)\n\n"
        "| wide |  |\n| --- | --- |\n| a<br>b | c<br>d |\n\n"
        "3. [x] done\n4. open\n\n"
        "~~gone~~ `x`"
    )


def test_broken_and_deep_markup_is_read_without_failing() -> None:
    assert to_markdown("<div><b>unclosed <i>tags</div><p>next") == "**unclosed *tags***\n\nnext"
    deep = "<div>" * 5000 + "bottom" + "</div>" * 5000
    assert to_markdown(deep) == "bottom"
    assert to_markdown("text with a \x00 NUL") == "text with a NUL"
    assert to_markdown("") == ""
    assert to_markdown("<p>a</p><![foo[ b ]]><p>c</p>") == "a\n\n<![foo[ b ]]>\n\nc"  # html.parser refuses it
