"""One config-tree masker (secrets.mask_secrets with a rule) in place of three (issue 57): what it returns is what
the maskers it replaced returned. The replaced ones are written out here as they were (commit c779587:
masking.mask_secrets, and errors._mask_saved applied after it to a saved config) and compared on random trees
holding every kind of secret the refusal knows."""

from __future__ import annotations

import random

import pytest

from judgebench import secrets
from judgebench.secrets import MASK, is_secret_key, scrub, secret_in_config, secret_problem

KEY = "sk-proj-0123456789abcdefXYZ"


def old_mask_secrets(value, key=""):
    if isinstance(value, dict):
        return {k: old_mask_secrets(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [old_mask_secrets(v, key) for v in value]
    if key and is_secret_key(key) and value not in (None, ""):
        return MASK
    return scrub(value)


def old_mask_saved(node, prefix=""):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            path = f"{prefix}{k}"
            bad = (
                not isinstance(v, dict)
                and (not isinstance(v, list) or str(k).endswith("_env"))
                and secret_problem(path, v)
            )
            out[k] = MASK if bad else old_mask_saved(v, f"{path}.")
        return out
    if isinstance(node, list):
        return [old_mask_saved(v, prefix) for v in node]
    return scrub(node)


KEYS = ["model", "api_key", "api_key_env", "token", "base_url", "name", "headers", "password", "temperature", "x"]
LEAVES = [
    None,
    "",
    0,
    1.5,
    True,
    "gpt-4o",
    KEY,
    f"prefix {KEY} suffix",
    "https://user:pw@host:1/v1",
    "OPENAI_API_KEY",
    "not a name!",
    "[A,B]",
    MASK,
    "http://host/v1",
]


def tree(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth < 4 and roll < 0.35:
        return {
            rng.choice(KEYS) + ("" if rng.random() < 0.7 else str(rng.randrange(3))): tree(rng, depth + 1)
            for _ in range(rng.randrange(1, 5))
        }
    if depth < 4 and roll < 0.5:
        return [tree(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return rng.choice(LEAVES)


@pytest.fixture
def a_known_secret(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def test_the_default_rule_masks_as_mask_secrets_did(a_known_secret):
    rng = random.Random(57)
    trees = [{"judge": tree(rng), "ranker": tree(rng)} for _ in range(400)]
    assert [secrets.mask_secrets(t) for t in trees] == [old_mask_secrets(t) for t in trees]
    masked = secrets.mask_secrets({"backend": {"api_key": KEY, "model": "m", "tokens": [KEY, None]}, "url": f"x{KEY}"})
    assert masked == {"backend": {"api_key": MASK, "model": "m", "tokens": [MASK, None]}, "url": f"x{MASK}"}


def test_the_saved_config_rule_masks_as_the_two_passes_did(a_known_secret):
    rng = random.Random(2024)
    trees = [{"judge": tree(rng), "rewriter": tree(rng), "api_key_env": rng.choice(LEAVES)} for _ in range(400)]
    assert [secrets.mask_secrets(t, secret_in_config) for t in trees] == [
        old_mask_saved(old_mask_secrets(t)) for t in trees
    ]
    saved = secrets.mask_secrets(
        {"judge": {"api_key_env": "sk-not a name", "base_url": "https://u:p@h/v1", "model": "m", "note": f"key {KEY}"}},
        secret_in_config,
    )
    # the saved config is scrubbed before it is judged: the URL keeps its host, the note its words
    assert saved == {
        "judge": {"api_key_env": MASK, "base_url": "https://***@h/v1", "model": "m", "note": f"key {MASK}"}
    }
    # the rule matters: on some trees it masks more than the default
    assert sum(secrets.mask_secrets(t, secret_in_config) != secrets.mask_secrets(t) for t in trees) > 20
