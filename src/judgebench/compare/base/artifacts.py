"""Read the job artifacts compare needs (per-query nDCG, judge labels, run files) into frames.

Each artifact is downloaded once into a temporary directory and parsed; a run whose artifact
cannot be read becomes a listed problem (its cells show "missing"), not a crash of the report.
The files of many runs are read in a few threads (downloading is waiting on files or the network;
problems are listed in run order all the same), and the per-query rows of all runs go into one frame
built from columns, not one small frame per run and reference: at 1,000 runs those were seconds.
"""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from mlflow.tracking import MlflowClient

from judgebench import label_scale
from judgebench.compare.base.reference import OWN, ROLE
from judgebench.data.trec import read_run
from judgebench.evaluation import HUMAN, HUMAN_JUDGED, HUMAN_LABELSET, REFERENCES
from judgebench.tracking import artifact_store

__all__ = ["HUMAN", "HUMAN_LABELSET", "REFERENCES", "Artifacts", "per_query_matrix"]
PER_QUERY = ["dataset", "system", "judge", ROLE, "query_id", "value"]  # role: what a row is (compare/base/reference.py)
READERS = 4  # threads reading artifacts: enough to hide the waiting, few enough for a shared tracking server
# relevance: the judge's label as a human level (its scale's map: what nDCG scores); label: as the judge gave it;
# scale: the judge's label scale as its runs applied it (label_scale.py tag)
LABELS = ["dataset", "judge", "text_view", "query_id", "doc_id", "relevance", "human", "label", "scale"]


def per_query_matrix(rows: pd.DataFrame, systems: list[str], queries: list[str]) -> np.ndarray:
    """(systems, queries) values of PER_QUERY rows of one judge and role, nan where absent."""
    if rows.empty:
        return np.full((len(systems), len(queries)), np.nan)
    wide = rows.pivot_table(index="system", columns="query_id", values="value", aggfunc="first", dropna=False)
    return wide.reindex(index=systems, columns=queries).to_numpy(dtype=float)


@dataclass
class Artifacts:
    """Downloads from one MLflow client; ``problems`` lists what could not be read. ``uris``: the artifact URI of
    each run already read from the store (collect's ``artifact_uri`` column): the client's own download fetches the
    run again (and looks up its logged models) for every file it reads."""

    client: MlflowClient
    problems: list[str] = field(default_factory=list)
    uris: dict[str, str] = field(default_factory=dict)

    def remember(self, jobs: pd.DataFrame) -> None:
        if "artifact_uri" in jobs:
            self.uris.update((r, u) for r, u in zip(jobs["run_id"], jobs["artifact_uri"]) if isinstance(u, str) and u)

    def _uri(self, run_id: str) -> str | None:
        if run_id not in self.uris:
            try:
                self.uris[run_id] = self.client.get_run(run_id).info.artifact_uri
            except Exception:  # noqa: BLE001 - an unknown run: its read reports it
                return None
        return self.uris[run_id]

    def _repo(self, run_id: str):
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        if run_id not in self.uris:
            self.uris[run_id] = self.client.get_run(run_id).info.artifact_uri
        return get_artifact_repository(
            self.uris[run_id], tracking_uri=self.client.tracking_uri
        )  # a server's proxied artifacts

    def _local_file(self, run_id: str, name: str) -> Path | None:
        """The artifact's own file when the run's artifacts are on this machine (a SQLite store's
        ``mlflow-artifacts:/`` folder, a ``file:`` URI or a path), else None: read in place, not copied to a
        temporary folder first (1,500 runs: seconds)."""
        uri = self.uris.get(run_id) or ""
        try:
            if uri.startswith(f"{artifact_store.SCHEME}:") and artifact_store.sqlite_db(self.client.tracking_uri):
                folder = artifact_store.local_path(uri, self.client.tracking_uri)
            elif uri.startswith("file:") or uri.startswith("/"):
                folder = Path(uri.removeprefix("file://").removeprefix("file:"))
            else:
                return None
        except Exception:  # noqa: BLE001 - not resolvable here: the repository's download says why
            return None
        path = folder / name
        return path if path.is_file() else None

    def _fetch(self, run_id: str, name: str, reader):
        """(the parsed artifact, None) or (None, the problem)."""
        local = self._local_file(run_id, name)
        if local is not None:
            try:
                return reader(local), None
            except Exception as e:  # noqa: BLE001 - reported as any unreadable artifact is
                return None, f"run {run_id}: cannot read {name} ({type(e).__name__}: {' '.join(str(e).split())[:300]})"
        with tempfile.TemporaryDirectory() as tmp:
            try:
                path = Path(self._repo(run_id).download_artifacts(name, tmp))
                return reader(path), None
            except Exception as e:  # noqa: BLE001 - any unreadable artifact is reported the same way
                reason = " ".join(str(e).split())  # MLflow's download errors span lines; a problem is one line
                reason = reason if len(reason) <= 300 else reason[:297] + "..."
                return None, f"run {run_id}: cannot read {name} ({type(e).__name__}: {reason})"

    def _read_all(self, read, run_ids: list[str]) -> list:
        """``read(run_id)`` for every run, READERS at a time: its (value, problems) in ``run_ids`` order, not in
        the order the threads finish (the caller lists the problems, so they read as if one run came after another)."""
        if not run_ids:
            return []
        for run_id in run_ids:  # the URIs of runs collect did not list are looked up here, not in the threads
            self._uri(run_id)
        with ThreadPoolExecutor(min(READERS, len(run_ids))) as pool:
            return list(pool.map(read, run_ids))

    def _fetch_table(self, run_id: str, stem: str, **kw) -> tuple[pd.DataFrame | None, list[str]]:
        """``<stem>.csv``, or ``<stem>.tsv`` for runs logged before tables were CSV (same columns)."""
        try:
            names = {a.path for a in self._repo(run_id).list_artifacts()}
        except Exception:  # noqa: BLE001 - an unreadable run: the read below reports it
            names = set()
        if f"{stem}.csv" not in names and f"{stem}.tsv" in names:
            value, problem = self._fetch(run_id, f"{stem}.tsv", lambda p: pd.read_csv(p, sep="\t", **kw))
        else:
            value, problem = self._fetch(run_id, f"{stem}.csv", lambda p: pd.read_csv(p, **kw))
        return value, [problem] if problem else []

    def per_query(self, jobs: pd.DataFrame) -> pd.DataFrame:
        """Rows (dataset, system, judge, role, query_id, value); the rows of the two human references (judge and
        role: the reference's name) come from every job's reference columns (a human-judge run adds nothing else:
        its labels are the reference), each judge's own values have role "judge" and its human_judged values
        role "human_judged" (compare/base/reference.py)."""

        def read(run_id: str):
            value, problem = self._fetch(run_id, "per_query.csv", lambda p: pd.read_csv(p, dtype={"query_id": str}))
            return value, [problem] if problem else []

        tables = self._read_all(read, list(jobs["run_id"]))
        out: dict[str, list] = {c: [] for c in PER_QUERY}
        for job, (pq, problems) in zip(jobs[["run_id", "dataset", "system", "judge"]].itertuples(index=False), tables):
            self.problems.extend(problems)
            if pq is None:
                continue
            pieces = [(ref, ref, f"ndcg10_{ref}") for ref in REFERENCES]
            if job.judge != HUMAN:
                own = f"ndcg10_{HUMAN_JUDGED}"
                if own not in pq.columns:  # a run of metric version < 3: no per-judge reference was logged
                    self.problems.append(
                        f"run {job.run_id} ({job.dataset} / {job.system} / {job.judge}): no "
                        f"{own} column (logged before metric version 3); its human_labelset values stand in"
                    )
                    own = f"ndcg10_{HUMAN_LABELSET}"
                pieces += [(job.judge, OWN, "ndcg10_judge"), (job.judge, HUMAN_JUDGED, own)]
            queries, n = pq["query_id"].tolist(), len(pq)
            for judge, role, column in pieces:
                out["dataset"] += [job.dataset] * n
                out["system"] += [job.system] * n
                out["judge"] += [judge] * n
                out[ROLE] += [role] * n
                out["query_id"] += queries
                out["value"] += pq[column].tolist()
        if not out["value"]:
            return pd.DataFrame(columns=PER_QUERY)
        frame = pd.DataFrame(out, columns=PER_QUERY).astype({"query_id": str, "value": float})
        return frame.drop_duplicates(["dataset", "system", "judge", ROLE, "query_id"], keep="last").reset_index(
            drop=True
        )

    def labels(self, jobs: pd.DataFrame) -> pd.DataFrame:
        """Judge labels per (dataset, judge, text view): judging does not depend on the ranker, so one run each."""
        frames = []
        judged = jobs.drop_duplicates(["dataset", "judge", "text_view"], keep="last")
        judged = judged[judged["judge"] != HUMAN]
        if "imported" in judged:  # an imported cell has labels only where the labels' qrels were given
            judged = judged[judged["imported"].isna() | (judged["imported_labels"] == "true")]
        tables = self._read_all(
            lambda r: self._fetch_table(r, "judge_labels", dtype={"query_id": str, "doc_id": str}),
            list(judged["run_id"]),
        )
        for (_, job), (lab, problems) in zip(judged.iterrows(), tables):
            self.problems.extend(problems)
            if lab is None:
                continue
            lab = lab.dropna(subset=["relevance", "human"]).astype({"relevance": int, "human": int})
            scale = label_scale.from_tag(job.get("judge_scale"))
            lab = lab.assign(
                label=lab["relevance"],
                relevance=scale.human(lab["relevance"]) if len(lab) else lab["relevance"],
                scale=scale.tag(),
            )
            keep = LABELS + (
                ["raw"] if "raw" in lab.columns else []
            )  # raw: the planner's entropy signal reads its probs
            frames.append(lab.assign(dataset=job["dataset"], judge=job["judge"], text_view=job["text_view"])[keep])
        if not frames:
            return pd.DataFrame(columns=LABELS)
        return pd.concat(frames, ignore_index=True)

    def runs(self, jobs: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
        """The run file of every (dataset, system): what the system returned, whoever judged it."""
        out = {}
        chosen = jobs.drop_duplicates(["dataset", "system"], keep="last")

        def read(run_id: str):
            value, problem = self._fetch(
                run_id, "run.trec", lambda p: read_run(p, order_by="rank")
            )  # the pipeline scores by rank
            return value, [problem] if problem else []

        for (_, job), (run, problems) in zip(chosen.iterrows(), self._read_all(read, list(chosen["run_id"]))):
            self.problems.extend(problems)
            if run is not None:
                out[(job["dataset"], job["system"])] = run
        return out
