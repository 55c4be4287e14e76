"""Per-query nDCG read back from the job artifacts, and the paired t-tests built on it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

from judgebench.compare.tables import HUMAN
from judgebench.metrics import classify_decisions, pairwise_ttests


def load_per_query(client: MlflowClient, jobs: pd.DataFrame) -> pd.DataFrame:
    """Rows (dataset, system, judge, query_id, value); the human rows come from every job's human column."""
    frames = []
    with tempfile.TemporaryDirectory() as tmp:
        for _, job in jobs.iterrows():
            path = Path(client.download_artifacts(job["run_id"], "per_query.csv", tmp))
            pq = pd.read_csv(path, dtype={"query_id": str})
            base = {"dataset": job["dataset"], "system": job["system"]}
            frames.append(pq.assign(**base, judge=HUMAN).rename(columns={"ndcg10_human": "value"})[["dataset", "system", "judge", "query_id", "value"]])
            if job["judge"] != HUMAN:
                frames.append(pq.assign(**base, judge=job["judge"]).rename(columns={"ndcg10_judge": "value"})[["dataset", "system", "judge", "query_id", "value"]])
            path.unlink()
    out = pd.concat(frames, ignore_index=True)
    return out.drop_duplicates(["dataset", "system", "judge", "query_id"], keep="last")


def ttests(per_query: pd.DataFrame, systems: dict[str, list[str]], alpha: float = 0.05) -> pd.DataFrame:
    """Every pair of the given systems per dataset and judge: raw p and Holm-adjusted p."""
    rows = []
    for (dataset, judge), g in per_query.groupby(["dataset", "judge"], sort=False):
        chosen = systems.get(dataset, [])
        g = g[g["system"].isin(chosen)].copy()
        g["system"] = pd.Categorical(g["system"], chosen)
        g = g.sort_values("system").assign(system=lambda f: f["system"].astype(str))
        if g["system"].nunique() < 2:
            continue
        raw = pairwise_ttests(g[["system", "query_id", "value"]], alpha=alpha)
        holm = pairwise_ttests(g[["system", "query_id", "value"]], alpha=alpha, correction="holm")
        raw = raw.assign(p_holm=holm["p_adj"].to_numpy(), significant_holm=holm["significant"].to_numpy())
        rows.append(raw.assign(dataset=dataset, judge=judge))
    if not rows:
        return pd.DataFrame()
    out = pd.concat(rows, ignore_index=True)
    return out[["dataset", "judge", "system_a", "system_b", "mean_a", "mean_b", "t", "p", "significant", "p_holm", "significant_holm", "better"]]


def decision_agreement(tests: pd.DataFrame, use_holm: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per judge: how many pairwise conclusions agree with the human ones, and which pairs do not."""
    if tests.empty:
        return pd.DataFrame(), pd.DataFrame()
    sig = "significant_holm" if use_holm else "significant"
    counts, pairs = [], []
    for dataset, d in tests.groupby("dataset", sort=False):
        human = d[d["judge"] == HUMAN]
        for judge, j in d[d["judge"] != HUMAN].groupby("judge", sort=False):
            cls = classify_decisions(
                j.assign(significant=j[sig]).drop(columns=["dataset", "judge"]),
                human.assign(significant=human[sig]).drop(columns=["dataset", "judge"]),
            )
            row = {"dataset": dataset, "judge": judge, **{k: int((cls["agreement"] == k).sum()) for k in ("agree", "missed", "spurious", "reversed")}}
            counts.append(row)
            pairs.append(cls.assign(dataset=dataset, judge=judge)[["dataset", "judge", "system_a", "system_b", "agreement"]])
    return pd.DataFrame(counts), pd.concat(pairs, ignore_index=True)
