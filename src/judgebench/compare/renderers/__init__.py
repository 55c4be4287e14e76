"""How the report looks in each format: Markdown pieces, report.html (rendered from report.md), LaTeX, the shared
table formatting and views, the figures (with their fonts and label layout) and the findings panel; an analysis's own
renderings live in its section (compare/sections/)."""
