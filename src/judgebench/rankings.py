"""Rank once, judge many: every ranking is computed once and read back by every cell that needs it.

A grid cell ranks and then judges. With two judges, the two cells of one system on one dataset would
each compute the ranking: twice the GPU hours (all 425,700 PRP prompts of DL19, twice, on two GPUs), and
PRP's half-point ties could break differently in bf16 on the two GPUs, so "one system" would have two run
files under two judges. A ranking depends on the dataset (its fingerprint; the passage texts when the
ranker reads them), the system (ranker + perturbation, by their config hash), the text view (the
rewriter's hash) and the ranking code's version, never on the judge. It is stored under that key in
``<cache_dir>/rankings/<key>.trec`` (TREC format, written atomically) and every cell reads it back from
there, so every judge scores the same bytes. A cell that finds another job computing it waits under a lock
(``locks.exclusive``), as label sets do. ``job=rank`` (``jobs/rank_job.py``) computes and logs rankings alone,
so a cluster can rank on its GPU partition and judge on CPU nodes; a store that lacks a ranking another
machine logged to MLflow gets it from that run's artifact.

A stored ranking is trusted only as far as its digest: the SHA-256 of its exact bytes is written into
``<key>.json`` (and tagged on the rank run as ``ranking_sha256``) and every read, from the store or from an
MLflow artifact, checks it. A file edited, cut short or with garbage appended would otherwise be scored as
if it were the ranking (silently, and a rerun would skip it as done); it is instead one line naming the
stored file and saying ``force=true`` recomputes it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from judgebench import __version__
from judgebench.data.corpus import require_texts
from judgebench.data.fingerprint import fingerprint
from judgebench.data.trec import read_run, write_run
from judgebench.evaluation import cut
from judgebench.exceptions import DataError
from judgebench.identity import component_hash
from judgebench.identity.run_tags import RunTags
from judgebench.locks import exclusive
from judgebench.progress import StageSettings

log = logging.getLogger("judgebench")
RANK_VERSION = "1"  # bump when a change to the ranking code changes a ranking: stored ones are then recomputed
KIND = "ranking"  # the MLflow run kind of job=rank
RECOMPUTE = "rerun with force=true to compute it again (it is then overwritten)"


class StoredRankingError(DataError):
    """A stored ranking that fails its digest check (edited, truncated, undecodable, stored without one)."""


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _metrics_digest(metrics: object) -> str:
    """SHA-256 of the stored metrics' canonical JSON (sorted keys)."""
    return digest(json.dumps(metrics, sort_keys=True))


def checked_text(data: bytes, expected: str | None, where: str) -> str:
    """The text of stored ranking bytes whose SHA-256 is ``expected``; else :class:`StoredRankingError`."""
    if not expected:
        raise StoredRankingError(
            where, f"stored without a digest (by an older judgebench), so it cannot be checked; {RECOMPUTE}"
        )
    found = hashlib.sha256(data).hexdigest()
    if found != expected:
        raise StoredRankingError(
            where,
            f"does not match its digest (sha256 {found[:12]}..., stored {expected[:12]}...): "
            f"it was edited, cut short or damaged since it was stored; {RECOMPUTE}",
        )
    return data.decode("utf-8")


@dataclass
class Ranking:
    """A system's final run (perturbed and cut), its TREC text (the bytes every judge's cell logs) and key."""

    key: str
    run: pd.DataFrame
    text: str
    computed: bool  # ranked by this job (False: read back)
    scored: int = 0  # prompts a model ranker scored in this job (0 when read back or cached)
    metrics: dict = field(default_factory=dict)  # the ranker's statistics of this ranking (stored with it)

    @property
    def sha256(self) -> str:
        return digest(self.text)


FILE_ROLES = ("ranker", "rewriter")  # components whose input files (a run file, a prompt) decide a ranking


def _plain(node):
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def ranking_key(
    components, dataset, reads_texts: bool, files: dict[str, str] | None = None, ranker_inputs: dict | None = None
) -> str | None:
    """What decides a ranking: dataset identity, system and rewriter config hashes (``components``: a job's
    config, or its resolved ``ranker``, ``perturbation`` and ``rewriter`` nodes), the digests of the files
    the ranker and rewriter read (``files``: a runfile ranker's run edited in place is another ranking), what
    else of the dataset the ranker depends on (``ranker_inputs``, ``Ranker.key_inputs``: BM25's whole corpus and
    whether the pool is declared BM25), the ranking code's version.

    None when the key cannot be computed: the ranking reads passage texts that are not available. Such a
    ranking is never read back (it would be whatever the store holds under a key that leaves the texts out)."""
    node = lambda key: _plain(components[key]) if key in components else None  # noqa: E731
    fp = fingerprint(dataset)
    if reads_texts and fp.texts is None:
        return None
    tree = {
        "dataset": fp.hash,
        "texts": fp.texts if reads_texts else None,
        "system": component_hash(node("ranker"), node("perturbation")),
        "rewriter": component_hash(node("rewriter")),
        "rank_version": RANK_VERSION,
        "judgebench": __version__,
    }
    if files:  # absent when they read none: the keys of stored rankings of such systems stay what they were
        tree["files"] = dict(files)
    if ranker_inputs:  # likewise absent for rankers that depend on nothing more
        tree["ranker_inputs"] = dict(ranker_inputs)
    return hashlib.sha256(json.dumps(tree, sort_keys=True).encode()).hexdigest()[:20]


def refuse_unkeyed(dataset) -> None:
    """A ranking whose key cannot be computed (it reads passage texts that are not here) is never served from the
    store: the corpus's own error (where, how to get the texts), as an empty store gives."""
    require_texts(dataset)
    raise DataError(
        f"dataset {dataset.name}", "the ranking reads passage texts but the pool has none, so it has no key"
    )


class RankingStore:
    """``<cache_dir>/rankings``: one TREC file per ranking key, with its provenance beside it as JSON."""

    def __init__(self, cache_dir: str | Path) -> None:
        self.root = Path(cache_dir) / "rankings"
        self.locks = Path(cache_dir) / "locks"

    def path(self, key: str) -> Path:
        return self.root / f"{key}.trec"

    def warn_unless_writable(self, what: str) -> None:
        """Before computing a ranking: say now, not after hours of scoring, when it cannot be stored."""
        from judgebench.cache.probe import probe_dir
        from judgebench.exceptions import CacheError

        try:
            probe_dir(self.root, "rankings")
        except CacheError as e:
            log.warning(
                "%s: %s; the ranking is computed and used (and logged), but other cells will compute it again", what, e
            )

    def read(self, key: str) -> str | None:
        """The stored ranking, checked against the digest in ``<key>.json``; None when not stored.
        Raises :class:`StoredRankingError` when the check fails."""
        try:
            data = self.path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:  # an unreadable store: the ranking is computed again, not a lost cell
            log.warning("ranking %s cannot be read from %s (%s); it is computed again", key, self.root, e)
            return None
        return checked_text(data, self._meta(key).get("sha256"), str(self.path(key)))

    def _meta(self, key: str) -> dict:
        try:
            meta = json.loads((self.root / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return meta if isinstance(meta, dict) else {}

    def metrics(self, key: str) -> dict:
        """The ranker's statistics stored beside the ranking (``<key>.json``'s "metrics"; {} when none), checked
        against their own digest (``metrics_sha256``; a ranking stored before it had none and is read as it is):
        an edited figure (a run file's documents outside the pool, PRP's consistency) is refused, not reported."""
        meta = self._meta(key)
        found = meta.get("metrics", {})
        where = str(self.root / f"{key}.json")
        expected = meta.get("metrics_sha256")
        if expected is not None and expected != _metrics_digest(found):
            raise StoredRankingError(
                where, f"its metrics do not match their digest: the file was edited or damaged; {RECOMPUTE}"
            )
        try:
            return {str(k): float(v) for k, v in found.items()}
        except (AttributeError, TypeError, ValueError):
            raise StoredRankingError(where, f"its metrics are not a mapping of names to numbers; {RECOMPUTE}") from None

    def write(self, key: str, text: str, meta: dict) -> None:
        """Atomically (a temp file renamed into place): a reader never sees half a ranking. An unwritable store
        is a warning, not a lost cell: the ranking is still used, only not shared. The digest goes into the JSON."""
        meta = {**meta, "sha256": digest(text), "metrics_sha256": _metrics_digest(meta.get("metrics", {}))}
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            for name, content in ((f"{key}.json", json.dumps(meta, indent=1, sort_keys=True)), (f"{key}.trec", text)):
                tmp = self.root / f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
                tmp.write_text(content, encoding="utf-8")
                os.replace(tmp, self.root / name)
        except OSError as e:
            log.warning("ranking %s not stored in %s (%s); other cells will compute it again", key, self.root, e)


def trec_text(run: pd.DataFrame, system: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.trec"
        write_run(run, path, tag=system.replace(" ", "_"))
        return path.read_text(encoding="utf-8")


def parse(text: str, source: str = "ranking") -> pd.DataFrame:
    """The run of a stored TREC text, in its rank order (a perturbed oracle's scores need not follow its ranks).
    A problem names ``source`` (the stored file), not the temp file it is parsed from."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.trec"
        path.write_text(text, encoding="utf-8")
        try:
            return read_run(path, order_by="rank")
        except DataError as e:
            raise StoredRankingError(source, f"{e.message}; {RECOMPUTE}", e.line) from None


JOB_METRICS = frozenset({"ranking_computed", "ranker_prompts_scored", "n_queries", "wall_time_s"})  # a rank job's own


def from_mlflow(client, experiment_id: str, key: str) -> tuple[str, dict] | None:
    """(run.trec, the ranker's statistics) of a FINISHED ``job=rank`` run with this key, when this store lacks it
    (another machine ranked); the artifact is checked against the run's ``ranking_sha256`` tag."""
    if client is None:
        return None
    filt = RunTags.where(kind=KIND, ranking_key=key, status="FINISHED")
    for r in client.search_runs([experiment_id], filter_string=filt, max_results=5):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                data = Path(client.download_artifacts(r.info.run_id, "run.trec", tmp)).read_bytes()
            except Exception as e:  # noqa: BLE001 - an unreadable artifact: rank instead
                log.warning("ranking %s: run %s has no readable run.trec (%s)", key, r.info.run_id, e)
                continue
        where = f"run.trec of MLflow run {r.info.run_id} (job=rank, ranking {key})"
        text = checked_text(data, RunTags.from_tags(r.data.tags).ranking_sha256, where)
        return text, {k: v for k, v in r.data.metrics.items() if k not in JOB_METRICS}
    return None


def check_logged(client, experiment_id, key: str, text: str, where: str) -> None:
    """A stored ranking edited together with its digest file passes its own check; it must still be the ranking a
    ``job=rank`` run of the experiment logged under this key (its ``ranking_sha256`` tag), else
    :class:`StoredRankingError`."""
    if client is None or experiment_id is None:
        return
    found = digest(text)
    filt = RunTags.where(kind=KIND, ranking_key=key, status="FINISHED")
    for r in client.search_runs(
        [experiment_id], filter_string=filt, max_results=1, order_by=["attributes.start_time DESC"]
    ):
        logged = RunTags.from_tags(r.data.tags).ranking_sha256  # the latest: force=true may have ranked it again since
        if logged and logged != found:
            raise StoredRankingError(
                where,
                f"is not the ranking MLflow run {r.info.run_id} (job=rank) logged under key {key} "
                f"(sha256 {found[:12]}..., logged {logged[:12]}...): the stored file and its digest "
                f"were changed since; {RECOMPUTE}",
            )


def _stored(
    store: RankingStore, key: str, client, experiment_id, system: str, dataset, repair: bool
) -> tuple[str, str] | None:
    """(text, where it was read) of the stored ranking (this store, else an MLflow rank run's artifact), checked
    against its digest; None when none is stored. A failed check raises, unless ``repair`` (force=true): then
    it is logged and the ranking is computed again."""
    try:
        text = store.read(key)
        if text is not None:
            check_logged(client, experiment_id, key, text, str(store.path(key)))
            return text, str(store.path(key))
        found = from_mlflow(client, experiment_id, key) if client is not None else None
    except StoredRankingError as e:
        if not repair:
            raise
        log.warning("%s; force=true: computing it again", e)
        return None
    if found is None:
        return None
    store.write(key, found[0], {"system": system, "dataset": dataset.name, "source": "mlflow", "metrics": found[1]})
    return found[0], str(store.path(key))


@dataclass(frozen=True)
class RankSettings:
    """What :func:`rank_once` reads of a job's config, read once: the components that decide the ranking key
    (the resolved ``ranker``, ``perturbation`` and ``rewriter`` nodes), the cache directory holding the
    rankings, ``force`` and how its stage shows progress."""

    components: dict
    cache_dir: str
    force: bool = False
    stages: StageSettings = StageSettings()

    @classmethod
    def from_config(cls, cfg) -> RankSettings:
        parts = {k: _plain(cfg[k]) for k in ("ranker", "perturbation", "rewriter") if k in cfg}
        return cls(parts, str(cfg["cache_dir"]), bool(cfg.get("force")), StageSettings.from_config(cfg))


def rank_once(
    settings: RankSettings,
    dataset,
    ranker,
    perturbation,
    texts,
    system: str,
    reads_texts: bool,
    client=None,
    experiment_id: str | None = None,
    files: dict[str, str] | None = None,
    recompute: bool = False,
) -> Ranking:
    """The cell's ranking: read back when stored (here, or in a ``job=rank`` run of the experiment), else
    computed under the ranking's lock (a job already computing it is waited for), stored, and read back.
    ``files``: digests of the ranker's and rewriter's input files (see :func:`ranking_key`). ``recompute``
    (``job=rank force=true``): computed again, never read back. A stored ranking that fails its digest check
    stops the cell with one line, or with ``force=true`` is computed again."""
    key = ranking_key(settings.components, dataset, reads_texts, files, ranker.key_inputs(dataset))
    if key is None:
        refuse_unkeyed(dataset)
    store = RankingStore(settings.cache_dir)
    repair = settings.force
    found = None
    if not recompute:
        try:
            found = _stored(store, key, client, experiment_id, system, dataset, repair=False)
        except StoredRankingError:
            found = None  # checked again under the lock: a writer may have been between its two files
    if found is not None:
        log.info("%s / %s: ranking %s read back (computed once for every judge)", dataset.name, system, key)
        return Ranking(key, parse(found[0], found[1]), found[0], computed=False, metrics=store.metrics(key))
    with exclusive(
        store.locks,
        f"ranking-{key}",
        f"{dataset.name} / {system}: another job is computing this ranking; waiting for it",
    ):
        found = None if recompute else _stored(store, key, client, experiment_id, system, dataset, repair)
        if found is not None:
            return Ranking(key, parse(found[0], found[1]), found[0], computed=False, metrics=store.metrics(key))
        store.warn_unless_writable(f"{dataset.name} / {system}")
        started = time.perf_counter()
        with settings.stages.stage(f"rank {ranker.name}"):
            run = ranker.rank(dataset, texts)
        if ranker.perturbable:
            judged = set(zip(dataset.qrels["query_id"].tolist(), dataset.qrels["doc_id"].tolist()))
            run = perturbation.apply(run, judged)
        text = trec_text(cut(run, ranker.depth), system)
        scored = int(getattr(ranker, "scored_now", 0) or 0)
        metrics = {k: float(v) for k, v in ranker.ranking_metrics().items() if v == v}  # undefined (nan) ones left out
        store.write(
            key,
            text,
            {
                "system": system,
                "dataset": dataset.name,
                "ranker": ranker.name,
                "scored": scored,
                "seconds": round(time.perf_counter() - started, 3),
                "judgebench": __version__,
                "metrics": metrics,
            },
        )
    return Ranking(key, parse(text, str(store.path(key))), text, computed=True, scored=scored, metrics=metrics)
