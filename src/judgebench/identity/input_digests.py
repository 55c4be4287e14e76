"""SHA-256 of every input file a job reads, for the resume key: an input edited in place must rerun its cell.

What is hashed is what the components opened, resolved as they resolved it (``identity/files_read.py``), never a
guess from config values: the dataset's files as its loader read them (qrels, topics, pool, passages, the
files a ``data_dir`` implies, id maps), the prompt templates a judge, ranker or rewriter loaded when it was
built, and the files a component declares it reads later (``input_files()``: a qrels file judge's
``root``/``path``, a ``runfile`` ranker's run). Loading the dataset and building the components is cheap
(model weights load lazily), so the key is known before any ranking or judging. Directories (model weights)
are not hashed.

Entries are named ``<component>/<file name>`` (``dataset/qrels.txt``, ``judge/umbrela_bing.txt``): the key
does not depend on where the files lie, so one store resumes the same study from a laptop or a cluster.
Digests are cached in ``<cache_dir>/input_digests.json`` by (path, size, mtime_ns, ctime_ns), so a
multi-gigabyte passages file is read once, not by every job of a sweep; an edit changes mtime/ctime and
the file is hashed again. The cache is written atomically (temp file + rename); a broken one is ignored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from judgebench.identity.files_read import declared, recording

log = logging.getLogger("judgebench")
CACHE_FILE = "input_digests.json"
_WARNED: set[str] = set()
MISSING = "missing"  # a declared file that is not there (yet): its component reports that when it runs


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _load(path: Path | None) -> dict:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, indent=0, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:  # digests are computed again next time: nothing is lost but time
        if str(path) not in _WARNED:
            _WARNED.add(str(path))
            log.warning(
                "input digests not cached in %s ([Errno %s] %s): large input files are hashed again by every job",
                path,
                e.errno,
                e.strerror or e,
            )
        try:
            tmp.unlink()
        except OSError:
            pass


class JobInputs:
    """The input files of one job, per component (``dataset``, ``ranker``, ``judge``, ``rewriter``)."""

    def __init__(self) -> None:
        self.files: dict[str, list[Path]] = {}

    def add(self, role: str, paths: Iterable[Path]) -> None:
        have = self.files.setdefault(role, [])
        seen = {_real(p) for p in have}
        for p in paths:
            if _real(p) not in seen:
                seen.add(_real(p))
                have.append(Path(p))

    def build(self, role: str, node: Any) -> Any:
        """``hydra.utils.instantiate(node)``, recording the files it opens and the ones it declares."""
        from hydra.utils import instantiate
        from omegaconf import DictConfig, OmegaConf

        if isinstance(node, dict) and not isinstance(node, DictConfig):  # a resolved tree's part (jobs/cell.py):
            node = OmegaConf.create({role: node})[role]  # as a node under its role, errors name `judge.backend`
        with recording() as opened:
            component = instantiate(node)
        self.add(role, [*opened, *declared(component)])
        return component

    def named(self, roles: Iterable[str] | None = None) -> dict[str, Path]:
        """{``<role>/<file name>``: path}, a ``#2`` suffix for a second file of the same name."""
        out: dict[str, Path] = {}
        for role in sorted(self.files if roles is None else set(roles) & set(self.files)):
            for p in self.files[role]:
                name, n = f"{role}/{p.name}", 1
                while name in out:
                    n += 1
                    name = f"{role}/{p.name}#{n}"
                out[name] = p
        return out

    def digests(self, cache_dir: str | os.PathLike[str] | None, roles: Iterable[str] | None = None) -> dict[str, str]:
        """{name: sha256 hex} of the files (:meth:`named`), cached by (size, mtime, ctime) under ``cache_dir``."""
        return file_digests(self.named(roles), cache_dir)

    def artifact(self, cache_dir: str | os.PathLike[str] | None) -> str:
        """``input_digests.json``: each file's digest and the path it was read from."""
        named = self.named()
        digests = file_digests(named, cache_dir)
        return json.dumps(
            {k: {"sha256": digests[k], "path": str(p)} for k, p in named.items()}, indent=1, sort_keys=True
        )


def _real(p: Path) -> str:
    try:
        return str(Path(p).resolve())
    except OSError:
        return str(p)


def file_digests(files: dict[str, Path], cache_dir: str | os.PathLike[str] | None) -> dict[str, str]:
    """{name: sha256 hex} of ``files`` ({name: path}); a file that is not there is ``"missing"``."""
    store = Path(str(cache_dir)).expanduser() / CACHE_FILE if cache_dir else None
    known = _load(store)
    out, changed = {}, False
    for key, path in sorted(files.items()):
        try:
            st = path.stat()
        except OSError:
            out[key] = MISSING
            continue
        if not path.is_file():
            out[key] = MISSING
            continue
        real = _real(path)
        stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        entry = known.get(real)
        if not (isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str)):
            try:
                entry = {"stamp": stamp, "sha256": _sha256_file(path)}
            except OSError:
                out[key] = MISSING
                continue
            known[real], changed = entry, True
        out[key] = entry["sha256"]
    if changed and store is not None:
        _save(store, known)
    return out


def stamps(paths: Iterable[Path]) -> tuple:
    """(size, mtime, ctime) of each file, None where it is gone: whether a file changed since it was read."""
    out = []
    for p in paths:
        try:
            st = Path(p).stat()
            out.append((st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        except OSError:
            out.append(None)
    return tuple(out)
