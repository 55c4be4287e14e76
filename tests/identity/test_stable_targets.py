"""Classes named by ``_target_`` in the configs moved (llm/ in four packages), yet every hash that keys a finished cell
stays: identity/__init__.py hashes a moved class by the path it had when stores were written (``STABLE_TARGETS``)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import judgebench
from judgebench.identity import STABLE_TARGETS, stable_targets
from judgebench.jobs import common

CONF = Path(judgebench.__file__).parent / "conf"
# Packages created by a move: a class configured from one of them must have its old path in STABLE_TARGETS.
MOVED_PACKAGES = (
    "judgebench.llm.remote.",
    "judgebench.llm.batch_api.",
    "judgebench.llm.local.",
    "judgebench.llm.estimate.",
)


def _targets(node) -> list[str]:
    if isinstance(node, dict):
        own = [node["_target_"]] if isinstance(node.get("_target_"), str) else []
        return own + [t for v in node.values() for t in _targets(v)]
    if isinstance(node, list):
        return [t for v in node for t in _targets(v)]
    return []


def _configured_targets() -> set[str]:
    found = set()
    for path in CONF.rglob("*.yaml"):
        found.update(_targets(yaml.safe_load(path.read_text(encoding="utf-8"))))
    return found


def _resolve(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_configured_target_imports_and_every_moved_one_has_its_stable_name():
    targets = _configured_targets()
    assert "judgebench.llm.remote.api.GeminiBackend" in targets  # the configs were read (the backends are in them)
    for target in sorted(targets):
        assert callable(_resolve(target)), target
        if target.startswith(MOVED_PACKAGES):
            assert target in STABLE_TARGETS, f"{target} moved but has no stable name in identity.STABLE_TARGETS"


def test_each_stable_name_is_the_old_path_of_the_same_class():
    """Today's path imports; the old one does not (it is a name, not a place), and ends with the same class name."""
    for today, old in STABLE_TARGETS.items():
        assert _resolve(today).__name__ == old.rpartition(".")[2] == today.rpartition(".")[2]
        assert old != today
        with pytest.raises((ImportError, AttributeError)):
            _resolve(old)


def test_stable_targets_rewrites_nested_targets_only():
    node = {
        "_target_": "judgebench.llm.remote.api.GeminiBackend",
        "model": "judgebench.llm.remote.api.GeminiBackend",
        "inner": [{"_target_": "judgebench.llm.remote.api.OpenAIBackend"}, {"_target_": "x.Y"}],
    }
    out = stable_targets(node)
    assert out["_target_"].endswith(".api.GeminiBackend") and ".remote." not in out["_target_"]
    assert out["model"] == node["model"]  # only a `_target_` value is a class path
    assert ".remote." not in out["inner"][0]["_target_"] and out["inner"][1]["_target_"] == "x.Y"


# The hashes of every config whose backend moved, as the code before the move computed them (commit c779587):
# (judge_hash, system_hash, rewriter_hash, resume key). A finished cell of any of them is found again only if they stay.
BEFORE_THE_MOVE = {
    "judge=gemini_flash": ("fa3d18dc79", "2bfc7f1677", "139681f7ee", "26cb878f75f91ba8"),
    "judge=gemini_nano": ("5bf4a56dac", "2bfc7f1677", "139681f7ee", "37f89a1c2ca33f75"),
    "judge=gemini_pro": ("676942cdff", "2bfc7f1677", "139681f7ee", "aae811d2db557cd8"),
    "judge=gpt_4o": ("2c8b3c7c8a", "2bfc7f1677", "139681f7ee", "b25ee1efcb39cf0e"),
    "judge=gpt_4o_mini": ("765606208a", "2bfc7f1677", "139681f7ee", "4d757bbdd2ded5e4"),
    "judge=llama_cpp": ("c339341bf0", "2bfc7f1677", "139681f7ee", "56cc6cb1ebdeb604"),
    "judge=ollama judge.backend.model=m": ("bfa7fac2f6", "2bfc7f1677", "139681f7ee", "6415bf04743f66ef"),
    "judge=vllm judge.backend.model=m": ("6e8cef877c", "2bfc7f1677", "139681f7ee", "dd8c777924079c8d"),
    "ranker=prp_gemini_flash": ("d2567f88e4", "3212295b75", "139681f7ee", "b807173f4a8668c6"),
    "rewriter=gemini_flash": ("d2567f88e4", "2bfc7f1677", "18924ebb0e", "21140ce9b0132f5e"),
    "rewriter=openai": ("d2567f88e4", "2bfc7f1677", "2ad84497e8", "f27c25c80fa5661e"),
}


def _tree(*overrides: str) -> dict:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[
                "tracking_uri=sqlite:////nowhere/m.db",
                "artifact_root=/nowhere/a",
                "cache_dir=/nowhere/c",
                "experiment_name=unit",
                *overrides,
            ],
        )
    return OmegaConf.to_container(cfg, resolve=True)


@pytest.mark.parametrize("overrides", sorted(BEFORE_THE_MOVE))
def test_hashes_are_those_from_before_the_move(overrides):
    tree = _tree(*overrides.split())
    assert ".remote." in str(tree)  # the config names the backend by its new path
    tags = common.identity_tags(tree)
    now = (tags["judge_hash"], tags["system_hash"], tags["rewriter_hash"], common.config_hash(tree, {}))
    assert now == BEFORE_THE_MOVE[overrides]
