"""Hugging Face hub models on compute nodes without a network: where a model is on disk, and fetching it beforehand.

Why: every cell that loads ``google/flan-ul2`` by name asks the hub first, compute nodes are often offline, and
a first load there would put 20-40 GB into each node's ``~/.cache``. So models are fetched once, on a machine
with internet, into a shared ``HF_HOME`` (``judgebench models download ...``, :func:`download`), and the jobs
run with ``HF_HUB_OFFLINE=1``: loading then passes ``local_files_only=True`` and a model that is not there is
one error line naming it and the command that fetches it (:class:`~judgebench.exceptions.ModelNotDownloaded`).

A download takes the files transformers reads and one weight format: the root-level safetensors when the
repository has them, else its ``pytorch_model*.bin`` (a repository often holds the same weights as PyTorch,
TensorFlow and Flax files; fetching all of them would triple the download).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from judgebench.exceptions import ConfigError, ModelNotDownloaded

OFFLINE_ENV = "HF_HUB_OFFLINE"
WEIGHT_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".h5",
    ".msgpack",
    ".ckpt",
    ".pt",
    ".pth",
    ".onnx",
    ".onnx_data",
    ".gguf",
    ".ot",
    ".tflite",
    ".mlmodel",
    ".pb",
    ".npz",
)


def offline() -> bool:
    """HF_HUB_OFFLINE set to a true value (huggingface_hub's own reading of it)."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def endpoint() -> str:
    """The hub's address now (HF_ENDPOINT, e.g. a mirror)."""
    return os.environ.get("HF_ENDPOINT") or "https://huggingface.co"


def hub_cache_dir() -> Path:
    """Where the hub cache is now: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def is_hub_id(name: str) -> bool:
    """A hub repository id (``owner/name`` or ``name``), not a local path."""
    text = str(name)
    if not text or text.startswith(("/", "./", "../", "~")) or Path(text).expanduser().exists():
        return False
    return text.count("/") <= 1 and " " not in text


def download_hint(name: str) -> str:
    return f"judgebench models download {name}"


def not_downloaded(name: str, detail: str = "") -> ModelNotDownloaded:
    what = "is not complete in" if detail else "is not in"
    extra = f" ({detail})" if detail else ""
    return ModelNotDownloaded(
        f"model {name} {what} the Hugging Face cache {hub_cache_dir()}{extra}, and {OFFLINE_ENV}=1 forbids "
        "fetching it: "
        f"on a machine with internet and the same HF_HOME run `{download_hint(name)}` (or `judgebench models download` "
        "with this run's ranker=/judge= overrides)"
    )


def require_local(name: str, gguf_file: str | None = None) -> None:
    """When offline, raise ModelNotDownloaded unless the hub cache holds the model's config (or its GGUF file)."""
    if not offline() or not is_hub_id(name):
        return
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(name, gguf_file or "config.json", cache_dir=str(hub_cache_dir()))
    if not isinstance(found, str):
        raise not_downloaded(name)


def load_kwargs(name: str) -> dict:
    """from_pretrained arguments for a hub id: the cache as the environment says now, and off the network when
    offline."""
    if not is_hub_id(name):
        return {}
    return {"cache_dir": str(hub_cache_dir()), **({"local_files_only": True} if offline() else {})}


# ----- fetching, on a machine with internet ---------------------------------------------------------------
@dataclass
class DownloadPlan:
    """The files of one repository a download fetches, with their sizes in bytes."""

    repo_id: str
    files: dict[str, int] = field(default_factory=dict)
    revision: str | None = None

    @property
    def size(self) -> int:
        return sum(self.files.values())


def choose_files(repo_id: str, listing: dict[str, int], gguf_file: str | None = None) -> dict[str, int]:
    """Root-level files transformers reads: every non-weight file, and one weight format (see the module docstring)."""
    root = {p: s for p, s in listing.items() if "/" not in p}
    keep = {p: s for p, s in root.items() if not p.endswith(WEIGHT_SUFFIXES)}
    if gguf_file:
        if gguf_file not in listing:
            raise ConfigError(f"model {repo_id}: the repository has no file {gguf_file!r} (model_spec.gguf_file)")
        return {**keep, gguf_file: listing[gguf_file]}
    safetensors = {p: s for p, s in root.items() if p.endswith(".safetensors")}
    torch_bins = {p: s for p, s in root.items() if p.startswith("pytorch_model") and p.endswith(".bin")}
    weights = safetensors or torch_bins
    if not weights:
        raise ConfigError(
            f"model {repo_id}: the repository holds no PyTorch weights (*.safetensors or pytorch_model*.bin) "
            "at its top level, which transformers needs"
        )
    return {**keep, **weights}


def plan_download(repo_id: str, gguf_file: str | None = None, revision: str | None = None) -> DownloadPlan:
    """List the repository (one hub call) and choose what to fetch."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    listing = {
        f.path: int(f.size or 0)
        for f in HfApi().list_repo_tree(repo_id, recursive=True, revision=revision)
        if isinstance(f, RepoFile)
    }
    return DownloadPlan(repo_id, choose_files(repo_id, listing, gguf_file), revision)


def download(plan: DownloadPlan) -> Path:
    """Fetch the planned files into the hub cache (files already there are not fetched again); the snapshot folder."""
    from huggingface_hub import snapshot_download

    return Path(
        snapshot_download(
            plan.repo_id, revision=plan.revision, allow_patterns=sorted(plan.files), cache_dir=str(hub_cache_dir())
        )
    )
