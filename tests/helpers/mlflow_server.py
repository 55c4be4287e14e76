"""`mlflow server` on a temporary SQLite store, bound to 127.0.0.1, in its own process group (tests only)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MlflowServer:
    """`mlflow server --backend-store-uri sqlite:///DB --host 127.0.0.1 --port P`. ``artifacts`` is the default
    artifact root (clients write there themselves), or with ``proxied`` the directory the server serves
    ``mlflow-artifacts:/`` from (``--artifacts-destination``: what ``mlflow ui`` on a copied store needs)."""

    def __init__(self, db: Path, artifacts: Path, port: int, proxied: bool = False) -> None:
        self.port, self.uri = port, f"http://127.0.0.1:{port}"
        self.log = open(db.parent / f"mlflow-{port}.log", "w")
        where = ["--artifacts-destination", str(artifacts)] if proxied else ["--default-artifact-root", str(artifacts)]
        cmd = [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{db}",
            *where,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, Path(self.log.name).read_text()[-2000:]
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(
            f"mlflow server {self.uri} not ready in {timeout}s: {Path(self.log.name).read_text()[-2000:]}"
        )

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the server and its workers, at once
        self.proc.wait(30)
        self.log.close()
