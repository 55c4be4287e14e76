"""SHA-256 of every input file a job reads, for the resume key: an input edited in place must rerun its cell.

The config names its files by path (qrels, topics, pool, passages, a ``runfile`` ranker's run, a custom
prompt); a hash over paths would call a cell done after its qrels changed. Covered: every string config
entry that names an existing file, the four TREC DL files a ``dataset.data_dir`` implies, the bundled toy
files and packaged prompt templates named by ``prompt``. Directories (model weights) are not hashed.

Digests are cached in ``<cache_dir>/input_digests.json`` by (path, size, mtime_ns, ctime_ns), so a
multi-gigabyte passages file is read once, not by every job of a sweep; an edit changes mtime/ctime and
the file is hashed again. The cache is written atomically (temp file + rename); a broken one is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

CACHE_FILE = "input_digests.json"
SKIP = ("hydra", "tracking_uri", "artifact_root", "cache_dir", "sweep_id", "experiment_name")


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            if not prefix and k in SKIP:
                continue
            yield from _leaves(v, f"{prefix}{k}.")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, f"{prefix}{i}.")
    else:
        yield prefix[:-1], node


def input_files(tree: dict) -> dict[str, Path]:
    """{config key: file} for every file the config names or implies."""
    files: dict[str, Path] = {}
    for key, value in _leaves(tree):
        if isinstance(value, str) and value and len(value) < 4096 and "\n" not in value:
            path = Path(value).expanduser()
            try:
                if path.is_file():
                    files[key] = path
            except OSError:
                pass
    dataset = tree.get("dataset") if isinstance(tree.get("dataset"), dict) else {}
    target = str(dataset.get("_target_", ""))
    if target.endswith("load_trec_dl") and dataset.get("data_dir"):
        from judgebench.data.trec_dl import DEFAULT_FILES

        for name, rel in DEFAULT_FILES.get(dataset.get("year"), {}).items():
            path = Path(str(dataset["data_dir"])).expanduser() / rel
            if not dataset.get(name) and path.is_file():
                files[f"dataset.{name}"] = path
    elif target.endswith("load_toy"):
        from judgebench.data.datasets import TOY_DIR

        for path in sorted(Path(str(TOY_DIR)).glob("*.*")):
            files[f"dataset.toy/{path.name}"] = path
    for key, value in _leaves(tree):
        if key.endswith(".prompt") and isinstance(value, str) and key not in files:
            from judgebench.llm.prompts import PACKAGED

            packaged = Path(str(PACKAGED / f"{value}.txt"))
            if packaged.is_file():
                files[key] = packaged
    return files


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
    except OSError:  # an unusable cache dir (reported by the call cache): digests are recomputed next time
        try:
            tmp.unlink()
        except OSError:
            pass


def input_digests(cfg: DictConfig | dict) -> dict[str, str]:
    """{config key path: sha256 hex} of every input file of the job (see the module docstring)."""
    tree = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
    cache_dir = tree.get("cache_dir")
    store = Path(str(cache_dir)).expanduser() / CACHE_FILE if cache_dir else None
    known = _load(store)
    out, changed = {}, False
    for key, path in sorted(input_files(tree).items()):
        real = str(path.resolve())
        st = path.stat()
        stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        entry = known.get(real)
        if not (isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str)):
            entry = {"stamp": stamp, "sha256": _sha256_file(path)}
            known[real], changed = entry, True
        out[key] = entry["sha256"]
    if changed and store is not None:
        _save(store, known)
    return out
