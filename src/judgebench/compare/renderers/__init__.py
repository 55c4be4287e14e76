"""How the report looks in each format: Markdown pieces, report.html (rendered from report.md), LaTeX, the shared
table formatting and views, the figures (with their fonts and label layout), and the two analyses' own renderers."""
