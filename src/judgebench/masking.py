"""What counts as a secret in a config, and masking it: shared by MLflow logging, the CLI and the sweep summary.

Kept free of heavy imports so the command line can check overrides before anything starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# A key *named* like a secret (…api_key, …token, …password, …secret, …credentials, auth, key), matched on
# its last word so that max_output_tokens or api_key_env (the name of a variable, not its value) stay readable.
SECRET_KEY = re.compile(r"(?:^|[_.-])(?:api[_-]?key|key|secret|token|password|passwd|credentials?|auth|bearer)$", re.I)
MASK = "***"


def mask_secrets(value: Any, key: str = "") -> Any:
    """Replace every value whose key names a secret, at any depth."""
    if isinstance(value, Mapping):
        return {k: mask_secrets(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_secrets(v, key) for v in value]
    if key and SECRET_KEY.search(key) and value not in (None, ""):
        return MASK
    return value


