"""The report's opening: its title, the findings (what the report found comes first; report.html makes it a panel),
the selection in one sentence and the human reference every statistic is measured against; the same opening as
report.html's header box (``box``) and as the terminal's first lines."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from judgebench import __version__
from judgebench.compare.base import dataset_identity, names
from judgebench.compare.base.section import Section
from judgebench.compare.renderers.markdown import REFERENCE_TEXT, findings_section, listed, quoted, report_title

if TYPE_CHECKING:
    from judgebench.compare.base.findings import Finding
    from judgebench.compare.base.report_model import Report


def _virtual(r: Report) -> list[str]:
    return [v.name for v in r.virtual] + [f"{a} = {b} here" for a, b in r.aliases.items()]


def plain_title(experiment: str, sweep: str | None) -> str:
    """The terminal's first words (the labels-only summary's too)."""
    return f"judgebench compare: experiment {names.plain(quoted(experiment))}" + (
        f", sweep {names.plain(quoted(sweep))}" if sweep else ""
    )


def _plain_list(items: Iterable[str]) -> str:
    return ", ".join(names.plain(i) for i in items)


def box(r: Report) -> dict[str, str]:
    """The few lines a reader of report.html needs first (its header box; the compare run's note reads them too)."""
    real, virtual = r.real_judges, _virtual(r)
    return {
        "experiment": r.experiment,
        "selection": f"sweep {r.sweep}"
        if r.sweep
        else f"latest finished run of every cell ({len(set(r.read.get('sweeps', [])))} sweeps)",
        "datasets": ", ".join(dataset_identity.describe(r.jobs).get(d, d) for d in r.table1),
        "judges": ", ".join(real) + (f" (virtual: {', '.join(virtual)})" if virtual else ""),
        "reference": r.options.reference,
        "runs read": f"{len(r.read.get('job_runs', []))} job runs, "
        f"{len(r.read.get('judge_summary_runs', []))} judge summaries",
        "versions": "; ".join(f"{k} {', '.join(v)}" for k, v in r.versions.items())
        + f"; report by judgebench {__version__}",
    }


class Header(Section):
    name = "header"

    def __init__(self, found: Callable[[Report], list[Finding]]):
        """``found``: the report's findings, from every section (compare/sections/__init__.py's ``findings``)."""
        self.found = found

    def markdown(self, r: Report) -> list[str]:
        o = r.options
        real = r.real_judges
        versions = names.markdown("; ".join(f"{k} {', '.join(v)}" for k, v in r.versions.items()))
        return [
            report_title(r.experiment, r.sweep),
            *findings_section(self.found(r), r.table2),
            "",
            f"{len(r.jobs)} job runs; datasets: {listed(r.table1)}; judges: {listed(real) or 'none'}"
            f"{'; virtual judges: ' + listed(v.name for v in r.virtual) if r.virtual else ''}. "
            f"alpha={o.alpha}, correction={o.correction}, bootstrap={o.bootstrap} resamples (seed {o.seed}, "
            f"self-preference's bootstrap-t); {o.level:.0%} intervals.",
            "",
            f"Reference for every judge-vs-human statistic: **{o.reference}** ({REFERENCE_TEXT[o.reference]}). "
            f"Runs read: {versions}.",
        ]

    def console(self, r: Report) -> list[str]:
        o, real, virtual = r.options, r.real_judges, _virtual(r)
        return [
            plain_title(r.experiment, r.sweep) + f": {len(r.jobs)} job runs, datasets {_plain_list(r.table1)}",
            f"judges: {_plain_list(real) or 'none'}"
            + (
                f"; virtual: {_plain_list(virtual)}"
                if virtual
                else "; No ensembles or panel (fewer than 2 non-human judges)"
            ),
            f"reference: {o.reference}; bootstrap={o.bootstrap}; alpha={o.alpha}, correction={o.correction}",
        ]
