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
from collections.abc import Mapping
from pathlib import Path

import jinja2
from markdown_it import MarkdownIt

from judgebench.compare import names

# No network, no script, no form, no plugin: the browser refuses every load a name could smuggle in.
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
PAGE = jinja2.Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{ policy }}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1250px; padding: 0 1em;
       color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; margin-top: 1.6em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.86em; font-variant-numeric: tabular-nums;
        display: block; max-width: 100%; overflow-x: auto; }  /* a wide table scrolls, the page does not */
th, td { border: 1px solid #ccc; padding: 2px 7px; } th { background: #f0f3f7; } tr:nth-child(even) td { background: #fafafa; }
td[style*="right"] { white-space: nowrap; }
dl.header { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; background: #f6f8fa; padding: 8px 12px;
            border: 1px solid #ddd; } dl.header dt { font-weight: 600; } dl.header dd { margin: 0; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.4em 0; }
code { background: #f3f3f3; padding: 0 3px; }
</style></head>
<body>
<dl class="header">
{% for key, value in header.items() %}<dt>{{ key }}</dt><dd>{{ value }}</dd>
{% endfor %}</dl>
{{ body }}
</body></html>
""", autoescape=False)


def _figure(embed_from: Path, src: str) -> Path | None:
    """The PNG file beside the report that ``src`` names, or None (a URL, a path elsewhere, no such file)."""
    if not src.endswith(".png") or Path(src).name != src or src.startswith("."):
        return None
    path = embed_from / src
    return path if path.is_file() else None


def _markdown(embed_from: Path) -> MarkdownIt:
    """CommonMark with tables, raw HTML off; an image naming a figure file beside the report is replaced by the
    file's bytes (data URI), any other image is its alt text."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def image(renderer, tokens, idx, options, env):
        token = tokens[idx]
        alt = "".join(t.content for t in token.children or [])
        path = _figure(embed_from, str(token.attrGet("src") or ""))
        if path is None:
            return html.escape(f"[image: {alt}]")
        token.attrSet("src", "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii"))
        token.attrSet("alt", alt)
        return renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("image", image)
    return md


def render(markdown_text: str, out: Path, header: Mapping[str, str], title: str) -> str:
    """The page for ``markdown_text`` (relative image links resolved against ``out``)."""
    body = _markdown(out).render(markdown_text)
    return PAGE.render(title=html.escape(names.visible(title)), policy=POLICY, body=body,
                       header={html.escape(k): html.escape(names.visible(v)) for k, v in header.items()})


def write(markdown_text: str, out: Path, header: Mapping[str, str], title: str) -> Path:
    path = out / "report.html"
    path.write_text(render(markdown_text, out, header, title), encoding="utf-8")
    return path


def figure_links(files: list[Path], captions: Mapping[str, str] | None = None, note: str = "") -> str:
    """A Markdown "Figures" section linking each PNG by its relative name (report.md shows them beside it);
    ``note`` (plain text: what the figures leave out) opens it."""
    pngs = [f for f in files if f.suffix == ".png"]
    if not pngs:
        return ""
    captions = captions or {}
    parts = ["\n## Figures\n", *([f"{note}\n"] if note else [])]
    for f in pngs:
        caption = captions.get(f.name, f.stem.replace("figure_", "").replace("_", " "))
        parts.append(f"### {names.markdown(caption)}\n\n![{names.markdown(caption)}]({f.name})\n")
    return "\n".join(parts)
