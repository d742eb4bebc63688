"""Hidden checks for markdown-to-html: blocks, inline formatting, escaping and the CLI."""

import os
import subprocess
import sys
import tempfile

from mdconv import to_html

ROOT = os.getcwd()


def test_headings_and_paragraphs():
    source = "# Title\n\nSome text\n  continues here.  \n\n### Small *one*\n"
    assert to_html(source) == (
        "<h1>Title</h1>\n<p>Some text continues here.</p>\n<h3>Small <em>one</em></h3>"
    )


def test_heading_ends_a_paragraph_without_blank_line():
    assert to_html("para one\n## Next\npara two") == (
        "<p>para one</p>\n<h2>Next</h2>\n<p>para two</p>"
    )


def test_lists():
    source = "- apples\n* pears\n\n1. first\n2. second\n10. tenth\nafter"
    assert to_html(source) == (
        "<ul>\n<li>apples</li>\n<li>pears</li>\n</ul>\n"
        "<ol>\n<li>first</li>\n<li>second</li>\n<li>tenth</li>\n</ol>\n"
        "<p>after</p>"
    )


def test_inline_formatting():
    source = "Use **bold**, *em* and `x = 1` or [the docs](https://example.com/a?b=1)."
    assert to_html(source) == (
        "<p>Use <strong>bold</strong>, <em>em</em> and <code>x = 1</code> or "
        '<a href="https://example.com/a?b=1">the docs</a>.</p>'
    )


def test_escaping_and_code_spans_are_literal():
    source = "a < b && c > d, `**not bold**` and `<tag>`"
    assert to_html(source) == (
        "<p>a &lt; b &amp;&amp; c &gt; d, <code>**not bold**</code> and "
        "<code>&lt;tag&gt;</code></p>"
    )


def test_fenced_code_block_is_verbatim():
    source = "Intro\n```python\ndef f(x):\n    return x < 2 and **x\n\n# not a heading\n```\nend"
    assert to_html(source) == (
        "<p>Intro</p>\n"
        "<pre><code>def f(x):\n    return x &lt; 2 and **x\n\n# not a heading</code></pre>\n"
        "<p>end</p>"
    )


def test_empty_input():
    assert to_html("") == ""
    assert to_html("\n   \n\n") == ""


def test_cli_prints_html():
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "doc.md")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("# Hi\n\n- one\n- **two**\n")
        proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "mdconv.py"), path],
            capture_output=True,
            text=True,
            timeout=20,
            cwd=ROOT,
        )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "<h1>Hi</h1>\n<ul>\n<li>one</li>\n<li><strong>two</strong></li>\n</ul>\n"
