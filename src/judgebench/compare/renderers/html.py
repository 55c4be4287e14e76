"""report.html: the whole report in one self-contained file a reader opens anywhere (or in MLflow's UI).

It is report.md rendered (markdown-it, with tables), so every table of the Markdown report is in it and
the two cannot drift apart; the figures report.md links (relative paths) are embedded as base64 PNG.
The style is inline CSS: no server, no CDN, no script, nothing fetched. Names are escaped before they reach
the Markdown (names.py); whatever a name holds, the page still loads nothing: its Content-Security-Policy
allows inline styles and data: images only, and an image that is not a figure file beside the report is
written as text, never as an ``<img>``.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping
from pathlib import Path

import jinja2
from markdown_it import MarkdownIt

from judgebench.compare.base import names
from judgebench.compare.renderers import markdown as report_markdown

FINDINGS_ID = "findings"  # the anchor of markdown.py's "## Findings"
# No network, no script, no form, no plugin: the browser refuses every load a name could smuggle in.
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
PAGE = jinja2.Template(
    """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{ policy }}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1250px; \
padding: 0 1em;
       color: #222; line-height: 1.4; overflow-wrap: anywhere; }  /* a name of 2,500 characters wraps, never runs off */
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; margin-top: 1.6em; } \
h3 { font-size: 1.05em; }
/* A wide table fits the page: headers wrap (at spaces and after the underscores of a column name), never cut; a table
   still wider than the page scrolls inside its own box, the page does not. */
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.86em; font-variant-numeric: tabular-nums;
        display: block; max-width: 100%; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 2px 7px; } tr:nth-child(even) td { background: #fafafa; }
th { background: #f0f3f7; white-space: normal; overflow-wrap: anywhere; vertical-align: bottom; font-size: 0.95em; }
td[style*="right"] { overflow-wrap: normal; }  /* a number never breaks; "0.875 [0.853, 0.898]" may, at its spaces */
section.findings { background: #fffbea; border: 1px solid #e6d28a; border-radius: 4px; padding: 2px 16px 10px; \
margin: 0.8em 0; }
section.findings h2 { margin-top: 0.5em; border: none; } section.findings ul { margin: 0.2em 0 0.6em; }
section.findings p { margin: 0.6em 0 0.1em; }
nav.toc { border: 1px solid #ddd; padding: 4px 16px 8px; margin: 0.8em 0; columns: 2 22em; font-size: 0.92em; }
nav.toc h2 { column-span: all; font-size: 1.05em; border: none; margin: 0.4em 0; } \
nav.toc ul { margin: 0; padding-left: 1.1em; }
nav.toc li { break-inside: avoid; } nav.toc li li { font-size: 0.95em; }
dl.header { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; background: #f6f8fa; \
padding: 8px 12px;
            border: 1px solid #ddd; } dl.header dt { font-weight: 600; } dl.header dd { margin: 0; min-width: 0; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.4em 0; }
/* per-judge figures (one paragraph of several images) in a grid, not one column */
p:has(> img + img) { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); gap: 8px; }
code { background: #f3f3f3; padding: 0 3px; }
</style></head>
<body>
{{ h1 }}
{{ findings }}
{{ toc }}
<dl class="header">
{% for key, value in header.items() %}<dt>{{ key }}</dt><dd>{{ value }}</dd>
{% endfor %}</dl>
{{ body }}
</body></html>
""",
    autoescape=False,
)


def _figure(embed_from: Path, src: str) -> Path | None:
    """The PNG file beside the report that ``src`` names, or None (a URL, a path elsewhere, no such file)."""
    if not src.endswith(".png") or Path(src).name != src or src.startswith("."):
        return None
    path = embed_from / src
    return path if path.is_file() else None


def _slug(text: str, taken: set[str]) -> str:
    """A heading's anchor: its words in lower case joined by "-", made unique in the page."""
    base = "-".join(re.findall(r"[a-z0-9]+", text.lower()))[:60] or "section"
    slug, n = base, 1
    while slug in taken:
        n += 1
        slug = f"{base}-{n}"
    taken.add(slug)
    return slug


def _heading_ids(state) -> None:
    """Give every h2/h3 an id and list it in ``env["toc"]`` as (level, text, id): the contents link to them."""
    taken = state.env.setdefault("ids", set())
    toc = state.env.setdefault("toc", [])
    for n, token in enumerate(state.tokens):
        if token.type == "heading_open" and token.tag in ("h2", "h3"):
            text = "".join(c.content for c in state.tokens[n + 1].children or [] if c.type in ("text", "code_inline"))
            slug = _slug(text, taken)
            token.attrSet("id", slug)
            toc.append((int(token.tag[1]), text, slug))


def _markdown(embed_from: Path) -> MarkdownIt:
    """CommonMark with tables, raw HTML off; an image naming a figure file beside the report is replaced by the
    file's bytes (data URI), any other image is its alt text; h2/h3 get ids for the contents."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.core.ruler.push("heading_ids", _heading_ids)

    def image(renderer, tokens, idx, options, env):
        token = tokens[idx]
        alt = "".join(t.content for t in token.children or [])
        path = _figure(embed_from, str(token.attrGet("src") or ""))
        if path is None:
            return html.escape(f"[image: {alt}]")
        token.attrSet("src", "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii"))
        token.attrSet("alt", alt)
        token.attrSet("title", alt)
        return renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("image", image)
    return md


def _contents(toc: list[tuple[int, str, str]], skip: str) -> str:
    """The table of contents: every h2 with its h3s nested (the tables per dataset, the figures)."""
    tree: list[tuple[str, list[str]]] = []
    for level, text, slug in toc:
        if slug == skip:
            continue
        link = f'<a href="#{slug}">{html.escape(text)}</a>'
        if level == 2 or not tree:
            tree.append((link, []))
        else:
            tree[-1][1].append(link)
    if not tree:
        return ""
    items = "".join(
        f"<li>{h2}" + (f"<ul>{''.join(f'<li>{x}</li>' for x in h3s)}</ul>" if h3s else "") + "</li>" for h2, h3s in tree
    )
    return f'<nav class="toc"><h2 id="contents">Contents</h2><ul>{items}</ul></nav>'


_TH = re.compile(r"(<t[hd](?:\s[^>]*)?>)(.*?)(</t[hd]>)", re.S)  # a cell, not <thead>/<tbody>


def _breakable_headers(body: str) -> str:
    """A long column name (kappa_query_median) or judge name (simulated_unbiased) may break after each underscore:
    the header or cell wraps, the table fits the page. (Cells hold escaped text: an underscore is never markup.)"""
    return _TH.sub(lambda m: m.group(1) + m.group(2).replace("_", "_<wbr>") + m.group(3), body)


def render(markdown_text: str, out: Path, header: Mapping[str, str], title: str) -> str:
    """The page for ``markdown_text`` (relative image links resolved against ``out``): its title, the findings
    section as a panel, the contents, the header box, then the rest of the report."""
    md, env = _markdown(out), {}
    body = _breakable_headers(md.renderer.render(md.parse(markdown_text, env), md.options, env))
    h1 = ""
    if body.startswith("<h1"):
        end = body.index("</h1>") + len("</h1>")
        h1, body = body[:end], body[end:]
    found, start = "", body.find(f'<h2 id="{FINDINGS_ID}">')
    if start >= 0:
        end = body.find("<h2", start + 1)
        end = len(body) if end < 0 else end
        close = body.find(
            report_markdown.PANEL_END, start, end
        )  # a panel by kind ends with its link to the per-judge findings
        if close >= 0:
            end = body.find("</p>", close) + len("</p>")
        else:
            end = (
                body.rfind("</ul>", start, end) + len("</ul>") if "</ul>" in body[start:end] else end
            )  # the prose after stays
        found = '<section class="findings">' + body[start:end] + "</section>"
        body = body[:start] + body[end:]
    return PAGE.render(
        title=html.escape(names.visible(title)),
        policy=POLICY,
        body=body,
        h1=h1,
        findings=found,
        toc=_contents(env.get("toc", []), FINDINGS_ID),
        header={html.escape(k): html.escape(names.visible(v)) for k, v in header.items()},
    )


def write(markdown_text: str, out: Path, header: Mapping[str, str], title: str) -> Path:
    path = out / "report.html"
    path.write_text(render(markdown_text, out, header, title), encoding="utf-8")
    return path


PER_JUDGE = {"figure_confusion_": "label confusion per judge"}  # file-name prefix of per-judge figures -> their heading


def figure_links(files: list[Path], captions: Mapping[str, str] | None = None, note: str = "") -> str:
    """A Markdown "Figures" section linking each PNG by its relative name (report.md shows them beside it);
    ``note`` (plain text: what the figures leave out) opens it. Per-judge figures (PER_JUDGE) share one heading
    and one paragraph, which report.html lays out as a grid."""
    pngs = [f for f in files if f.suffix == ".png"]
    if not pngs:
        return ""
    captions = captions or {}
    parts = ["\n## Figures\n", *([f"{note}\n"] if note else [])]
    grouped: dict[str, list[Path]] = {}
    for f in pngs:
        prefix = next((p for p in PER_JUDGE if f.name.startswith(p)), None)
        if prefix is not None:
            if prefix not in grouped:
                grouped[prefix] = []
                parts.append(prefix)  # placeholder, filled below
            grouped[prefix].append(f)
            continue
        caption = captions.get(f.name, f.stem.replace("figure_", "").replace("_", " "))
        parts.append(f"### {names.markdown(caption)}\n\n![{names.markdown(caption)}]({f.name})\n")
    for prefix, group in grouped.items():
        images = "\n".join(f"![{names.markdown(f.stem[len(prefix) :].replace('_', ' '))}]({f.name})" for f in group)
        parts[parts.index(prefix)] = f"### {names.markdown(PER_JUDGE[prefix])}\n\n{images}\n"
    return "\n".join(parts)
