"""The human-budget planner end to end in-process on toy: a plan per strategy, its qrels template labelled from the
held-back human qrels, read back, and checked against a computation by hand; k needed by hand; bad label files."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import normal_power  # noqa: F401  (k needed is checked against the formula below)

from budget_labels import label_from_human
from judgebench.compare.budget import files as budget_files
from judgebench.compare.budget import plan as budget_plan
from judgebench.evaluation import HUMAN_JUDGED
from judgebench.exceptions import CompareError


def _by_hand(strategy, y, f, sel, pi, strata):
    """The estimate and 95 % half width of one system, written out from the formulas of docs/protocol.md."""
    n, k, d = len(y), int(sel.sum()), y - f
    if strategy == "uniform":
        s2 = np.var(d[sel], ddof=1)
        return f.mean() + d[sel].mean(), stats.t.ppf(0.975, k - 1) * np.sqrt((1 - k / n) * s2 / k)
    if strategy == "active":  # Hajek: 1/pi weights, pi scaled to the realised k (capped at 1)
        k = sel.sum()
        pit = np.minimum(pi * k / pi.sum(), 1.0)
        c = sum(d[i] / pit[i] for i in range(n) if sel[i]) / sum(1 / pit[i] for i in range(n) if sel[i])
        var = sum((1 - pit[i]) / pit[i] ** 2 * (d[i] - c) ** 2 for i in range(n) if sel[i])
        return f.mean() + c, stats.t.ppf(0.975, k - 1) * np.sqrt(k / (k - 1) * var / n**2)
    point, parts = 0.0, []
    for h in sorted(set(strata)):
        inside = strata == h
        take = inside & sel
        W, nh, Nh = inside.sum() / n, take.sum(), inside.sum()
        point += W * (f[inside].mean() + d[take].mean())
        parts.append((W**2 * (1 - nh / Nh) * np.var(d[take], ddof=1) / nh, nh))
    var = sum(v for v, _ in parts)
    df = var**2 / sum(v**2 / (nh - 1) for v, nh in parts)  # Satterthwaite
    return point, stats.t.ppf(0.975, df) * np.sqrt(var)


@pytest.mark.parametrize("strategy", ["uniform", "stratified", "active"])
def test_plan_labelled_from_the_held_back_qrels_reads_back_exactly(toy_cell, strategy, tmp_path):
    cell = toy_cell["cell"]
    plan = budget_plan.make(cell, strategy, 6, seed=3)
    files = budget_files.write([plan], toy_cell["labels"], tmp_path)
    rows = budget_files.read_plan(files[0])
    assert len(rows) == len(cell.queries) and rows["selected"].sum() == plan.selected.sum()
    assert rows["inclusion_probability"].sum() == pytest.approx(6)
    labelled = label_from_human(files[1], toy_cell["human"], tmp_path / "labels.txt")
    est = budget_files.readback([cell], rows, budget_files.read_labels(labelled, rows), toy_cell["runs"])
    means = est[est["target"] == "mean"].set_index("system")
    # the resampling code on the same sample, from the human reference the grid logged: the same numbers
    e, half = budget_plan.estimate(plan.design, cell.y, cell.f, plan.selected[None, :], 0.95)
    assert np.allclose(means.loc[cell.systems, "estimate"], e.point[0], rtol=0, atol=1e-12)
    assert np.allclose(
        means.loc[cell.systems, "high"] - means.loc[cell.systems, "estimate"], half[0], rtol=0, atol=1e-12
    )
    # and by hand, from the per-query human values the test computed itself (toy_cell's pq), not from the cell
    pq = toy_cell["pq"]
    strata = rows["stratum"].to_numpy()
    pi = rows["inclusion_probability"].to_numpy()
    for s in cell.systems:
        hv = (
            pq[(pq.system == s) & (pq.judge == "sim") & (pq.role == HUMAN_JUDGED)]
            .set_index("query_id")["value"]
            .loc[cell.queries]
            .to_numpy()
        )
        fv = (
            pq[(pq.system == s) & (pq.judge == "sim") & (pq.role == "judge")]
            .set_index("query_id")["value"]
            .loc[cell.queries]
            .to_numpy()
        )
        point, h = _by_hand(strategy, hv, fv, plan.selected, pi, strata)
        assert means.loc[s, "estimate"] == pytest.approx(point, abs=1e-12)
        assert means.loc[s, "high"] - means.loc[s, "estimate"] == pytest.approx(h, abs=1e-12)
    ranks = stats.rankdata(-means.loc[cell.systems, "estimate"].to_numpy(), method="min")
    assert means.loc[cell.systems, "rank"].tolist() == ranks.tolist()


def test_a_subset_of_the_plan_reads_back_as_a_smaller_sample(toy_cell, tmp_path):
    cell = toy_cell["cell"]
    plan = budget_plan.make(cell, "uniform", 6, seed=1)
    files = budget_files.write([plan], toy_cell["labels"], tmp_path)
    rows = budget_files.read_plan(files[0])
    full = label_from_human(files[1], toy_cell["human"], tmp_path / "all.txt").read_text().splitlines()
    keep = sorted({ln.split()[0] for ln in full})[:4]
    part = tmp_path / "part.txt"
    part.write_text("\n".join(ln for ln in full if ln.split()[0] in keep) + "\n")
    est = budget_files.readback([cell], rows, budget_files.read_labels(part, rows), toy_cell["runs"])
    mask = np.isin(cell.queries, keep)
    e, _ = budget_plan.estimate(plan.design, cell.y, cell.f, mask[None, :], 0.95)
    got = est[est["target"] == "mean"].set_index("system").loc[cell.systems, "estimate"]
    assert np.allclose(got, e.point[0], atol=1e-12) and (est["labelled_queries"] == 4).all()


def test_bad_label_files_name_the_file_and_line(toy_cell, tmp_path):
    cell = toy_cell["cell"]
    plan = budget_plan.make(cell, "active", 4, seed=0)
    rows = budget_files.read_plan(budget_files.write([plan], toy_cell["labels"], tmp_path)[0])
    chosen = rows.loc[rows["selected"] == 1, "query_id"].iloc[0]
    other = rows.loc[rows["selected"] == 0, "query_id"].iloc[0]
    for text, want in (
        (f"{chosen} 0 d1 2\n{other} 0 d2 1\n", f"line 2: query '{other}' is not one the plan selected"),
        (
            f"{chosen} 0 d1\n",
            "line 1: '" + f"{chosen} 0 d1" + "': expected 4 columns 'query_id 0 doc_id label' (the label is empty",
        ),
        (f"{chosen} 0 d1 7\n", "line 1: label '7': expected a whole number 0 to 3"),
        (f"{chosen} 0 d1 1\n{chosen} 0 d1 2\n", "line 2: pair"),
    ):
        bad = tmp_path / "bad.txt"
        bad.write_text(text)
        with pytest.raises(CompareError, match="bad.txt, " + want.replace("(", r"\(").replace("[", r"\[")):
            budget_files.read_labels(bad, rows)
    with pytest.raises(CompareError, match="no plan at"):
        budget_files.read_plan(tmp_path / "nowhere.tsv")


def test_k_needed_against_the_power_formula(toy_cell):
    cell = toy_cell["cell"]
    pairs = budget_plan.pairs_of(cell, None)
    got = budget_plan.k_needed(cell, "uniform", pairs)
    n = len(cell.queries)
    for (a, b), k in zip(pairs, got):
        dy, dd = cell.y[a] - cell.y[b], (cell.y[a] - cell.y[b]) - (cell.f[a] - cell.f[b])

        def power(k):  # the two-sided t-test with k - 1 df, by the noncentral t
            se = np.sqrt((1 - k / n) * np.var(dd, ddof=1) / k + np.var(dy, ddof=1) / n)
            t = stats.t.ppf(0.975, k - 1)
            return stats.nct.sf(t, k - 1, abs(dy.mean()) / se) + stats.nct.cdf(-t, k - 1, abs(dy.mean()) / se)

        ok = [k for k in range(2, n + 1) if power(k) >= 0.8]
        assert k == (ok[0] if ok else budget_plan.UNREACHABLE), (a, b)
    assert budget_plan.UNREACHABLE in got or all(isinstance(k, int) for k in got)


def test_pairs_are_checked(toy_cell):
    cell = toy_cell["cell"]
    assert budget_plan.pairs_of(cell, ["R0:R2"]) == [(0, 2)]
    with pytest.raises(CompareError, match="pairs: 'R0:R9' is not two systems"):
        budget_plan.pairs_of(cell, ["R0:R9"])


def test_measured_widths_follow_the_predictions(toy_cell):
    m = budget_plan.measured(
        toy_cell["cell"], budget_plan.pairs_of(toy_cell["cell"], None), ks=(6,), resamples=300, seed=2
    )
    assert set(m["strategy"]) == {"uniform", "stratified", "active"} and (m["samples"] > 250).all()
    assert ((m["measured_width"] - m["predicted_width"]).abs() < 0.25 * m["predicted_width"]).all(), m


def test_the_planner_options_through_the_schema():
    from judgebench.compare.command import schema, validate

    opts = validate.options(
        schema.parse(["experiment=e", "plan=budget", "budget=12", "strategy=stratified", "pairs=A:B,C:D"])
    )
    assert (opts.plan, opts.budget, opts.strategy, opts.pairs, opts.human_labels) == (
        True,
        12,
        "stratified",
        ["A:B", "C:D"],
        None,
    )
    opts = validate.options(schema.parse(["experiment=e", "calibration.human_labels=l.txt"]))
    assert opts.human_labels == "l.txt" and not opts.plan
    for argv, want in (
        (["plan=budget"], "set budget=K too"),
        (["plan=bud", "budget=3"], "plan='bud': expected budget"),
        (["plan=budget", "budget=1"], "budget='1': expected a whole number >= 2"),
        (["budget=3"], "set plan=budget too"),
        (["plan=budget", "budget=4", "strategy=x"], "strategy='x'"),
        (["calibration_human_labels=l.txt"], "unexpected argument"),
        (["budgte=3"], "unexpected argument"),
        (["plan=budget", "budget=4", "calibration.human_labels=l"], "one at a time"),
    ):
        with pytest.raises(CompareError, match=want.replace("(", r"\(")):
            validate.options(schema.parse(["experiment=e", *argv]))
    assert "calibration.human_labels=FILE" in schema.USAGE and "plan=budget" in schema.USAGE


def test_the_plan_is_built_on_the_chosen_signal(toy_cell, tmp_path):
    from judgebench.compare.base.report_model import Options

    cell, lab = toy_cell["cell"], toy_cell["labels"]
    opt = Options(plan=True, budget=6, strategy="active", signal="labels", resamples=20)
    built = budget_files.build([cell], lab, None, opt)
    plan = built["plans"][0]
    marginal = cell.confusion.sum(axis=2)
    mean = marginal @ np.arange(4) / marginal.sum(axis=1)  # the judge's mean label per query, by hand
    np.testing.assert_allclose(plan.u, mean + 1e-3 * mean.mean())
    np.testing.assert_allclose(
        plan.design.pi, 0.5 * budget_plan.designs.proportional_pi(plan.u, 6) + 0.5 * 6 / len(mean)
    )
    assert set(built["plan"]["signal"]) == {"labels"}
    from judgebench.compare.sections import budget_plan as budget_plan_section

    assert budget_plan_section.console(built)[0].startswith("plan toy/sim: active, budget 6, signal labels, ")
    assert any(
        "### toy / sim: active, budget 6, signal labels" in part for part in budget_plan_section.markdown(built, 0.95)
    )
    with pytest.raises(CompareError, match="signal=entropy: judge sim on toy logged no label probabilities"):
        budget_files.build([cell], lab, None, Options(plan=True, budget=6, signal="entropy", resamples=20))
    with pytest.raises(CompareError, match="signal=judges: toy has one judge"):
        budget_files.build([cell], lab, None, Options(plan=True, budget=6, signal="judges", resamples=20))


def test_the_plan_report_prints_the_alpha_and_power_in_force(toy_cell):
    from judgebench.compare.base.report_model import Options
    from judgebench.compare.sections import budget_plan as budget_plan_section

    cell, lab = toy_cell["cell"], toy_cell["labels"]
    built = budget_files.build([cell], lab, None, Options(plan=True, budget=6, alpha=0.1, resamples=20))
    lines = budget_plan_section.console(built)
    assert "  k needed for power 0.8 at alpha 0.1 (two-sided t-test)" in lines
    # the toy's 12 queries and 6 labels are below what benchmarks/calibration.py finds on target: said where reported
    assert any(
        ln.startswith("  warning: 6 human labels (fewer than 10) and 12 queries (fewer than 20)") for ln in lines
    )
    text = "\n".join(budget_plan_section.markdown(built, 0.95))
    assert "(alpha 0.1, power 0.8, two-sided t-test" in text and "**warning: 6 human labels" in text
    assert built["predictions"]["strategy"].iloc[0] == "uniform"  # the default: active did not beat it
    assert set(built["measured"]["flagged"]) == {"yes"}  # every k of the toy's 12 queries is flagged
    # and k needed follows alpha: a laxer alpha never needs more labels
    pairs = budget_plan.pairs_of(cell, None)
    lax, strict = budget_plan.k_needed(cell, "uniform", pairs, 0.1), budget_plan.k_needed(cell, "uniform", pairs, 0.01)
    assert all(a <= b for a, b in zip(lax, strict) if isinstance(a, int) and isinstance(b, int))


def test_read_back_warns_of_an_unlabelled_query_whose_judge_value_is_outlying(toy_cell, tmp_path):
    """An unlabelled query whose judge value lies far from the others: the read-back names it in the rows of the
    targets where it is outlying and prints the warning beside the intervals (text and markdown); labelled, it is not
    named."""
    import dataclasses

    from judgebench.compare.sections import budget_plan as budget_plan_section

    cell = toy_cell["cell"]
    plan = budget_plan.make(cell, "uniform", 6, seed=3)
    files = budget_files.write([plan], toy_cell["labels"], tmp_path)
    rows = budget_files.read_plan(files[0])
    labels = budget_files.read_labels(label_from_human(files[1], toy_cell["human"], tmp_path / "labels.txt"), rows)
    quiet = budget_files.readback([cell], rows, labels, toy_cell["runs"])
    free = [q for q, s in zip(cell.queries, plan.selected) if not s]
    f = cell.f.copy()
    far, taken = cell.queries.index(free[0]), int(np.flatnonzero(plan.selected)[0])
    f[0, far] = f[0, far] - 25 * (np.abs(f[0] - np.median(f[0])).max() + 0.1)  # system 0's judge value far out
    loud = budget_files.readback([dataclasses.replace(cell, f=f)], rows, labels, toy_cell["runs"])
    named = loud.set_index(["target", "system", "other"])["unlabelled_outliers"]
    assert named[("mean", cell.systems[0], "")] == free[0]
    assert all(v == "" for (t, s, o), v in named.items() if t == "mean" and s != cell.systems[0])
    assert all(
        v == (free[0] if cell.systems[0] in (s, o) else "") for (t, s, o), v in named.items() if t == "difference"
    )
    assert (quiet["unlabelled_outliers"] == "").all()
    warn = f"warning: the judge's value on unlabelled query {free[0]} lies more than 5 robust sd from its median"
    for plan_dict in ({"readback": loud, "plan": rows},):
        assert any(warn in line for line in budget_plan_section.console(plan_dict))
        assert any(warn in part for part in budget_plan_section.markdown(plan_dict, 0.95))
    assert not any("robust sd" in line for line in budget_plan_section.console({"readback": quiet, "plan": rows}))
    f[0, taken] = f[0, taken] - 25 * (np.abs(f[0] - np.median(f[0])).max() + 0.1)  # a labelled one: not named
    again = budget_files.readback([dataclasses.replace(cell, f=f)], rows, labels, toy_cell["runs"])
    assert cell.queries[taken] not in ",".join(again["unlabelled_outliers"])
