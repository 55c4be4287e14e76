"""The analyses behind the report's tables: numbers only, from the collected runs (ranker bias, t intervals of the
means,
significance, virtual judges, self-preference, discrimination, PRP order bias). Their presentation is in
``compare/renderers`` and ``compare/sections``."""
