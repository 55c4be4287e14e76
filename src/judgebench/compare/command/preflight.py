"""What compare checks before it builds a report that can take minutes: the output folder and the MLflow store.

An output directory that cannot be written, or a tracking server that does not answer, is one line within
seconds, not an error after the report was computed or MLflow's minutes of retries.
"""

from __future__ import annotations

import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from judgebench.exceptions import CompareError
from judgebench.secrets import mask_url


def default_tracking_uri() -> str:
    """The store compare reads when tracking_uri= is not given: MLFLOW_TRACKING_URI, else ./mlruns/mlflow.db."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlruns' / 'mlflow.db'}"


def check_out(out: Path, given: str | None) -> None:
    """The output directory must be usable before the report is built (building it can take minutes)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".probe-"):
            pass
    except OSError as e:
        raise CompareError(f"out={given or out}: cannot write the report there ({e.strerror or e})") from None


def probe_tracking_server(uri: str, timeout_s: float = 3.0) -> None:
    """An http(s) tracking server that does not answer is one line within seconds, not MLflow's minutes of retries."""
    if not uri.startswith(("http://", "https://")):
        return
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
    parts = urllib.parse.urlsplit(uri)
    bare = urllib.parse.urlunsplit(
        (parts.scheme, parts.hostname + (f":{parts.port}" if parts.port else ""), parts.path, "", "")
    )
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            bare.rstrip("/") + "/health", timeout=timeout_s
        ):
            pass
    except urllib.error.HTTPError:
        return  # it answers (an auth proxy, an older server without /health): MLflow will tell the rest
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise CompareError(
            f"the MLflow tracking server {mask_url(uri)} cannot be reached ({reason}); start it or pass "
            "tracking_uri=..."
        ) from None
