"""The fake LLM server (:mod:`judgebench.testing.fake_app`) in a separate *spawned* process, so a benchmark's
client and the server never share one GIL, and its foreground command line.

Use :class:`FakeLLMServer`::

    with FakeLLMServer(latency_s=0.05, labels={"zebra": 3}) as srv:
        client = openai.OpenAI(base_url=srv.openai_base_url, api_key="test-key")
        genai_client = genai.Client(api_key="x", http_options=types.HttpOptions(base_url=srv.base_url))
        srv.configure(fail_429=0.2); ...; srv.stats()

or run it in the foreground: ``python -m judgebench.testing.fake_process --port 8011 --latency 0.05``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import threading
import time
import urllib.error
import urllib.request
from multiprocessing.connection import Connection
from typing import Any

from judgebench.testing.fake_app import HOST, FakeLLMApp
from judgebench.testing.fake_batches import FakeBatchConfig
from judgebench.testing.fake_config import FAULT_FIELD, FakeConfig

# ---------------------------------------------------------------- the server process


async def _child_async(config: dict[str, Any], port: int, conn: Connection) -> None:
    fake = FakeLLMApp(FakeConfig().updated(**config))
    await fake.start(port)
    conn.send(("ready", fake.bound[0][1]))

    def watch_parent() -> None:
        """Exits on "stop" from close() and on EOF, i.e. when the parent dies without closing us."""
        try:
            conn.recv()
        except (EOFError, OSError):
            pass
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True, name="watch-parent").start()
    await asyncio.Event().wait()


def _child_main(config: dict[str, Any], port: int, conn: Connection) -> None:
    """Entry point of the spawned server process; reports a startup failure through the pipe."""
    try:
        asyncio.run(_child_async(config, port, conn))
    except BaseException as exc:  # noqa: BLE001 - anything that stops startup goes to the parent
        try:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        finally:
            os._exit(1)


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class FakeLLMServer:
    """The fake server in a separate spawned process (own GIL); a context manager, and closed by ``close()``.

    Keyword arguments are :class:`FakeConfig` fields. The process is a daemon that also exits when the
    parent's end of its pipe closes, so a crashed test run leaves no server behind. Spawned children re-import
    the parent's ``__main__``: a script (not pytest) must create the server under ``if __name__ == "__main__":``.
    """

    def __init__(self, *, port: int = 0, startup_timeout_s: float = 30.0, **config: Any) -> None:
        FakeConfig().updated(**config)  # fail here, in the caller, on a bad setting
        ctx = mp.get_context("spawn")
        self._conn, child_conn = ctx.Pipe(duplex=True)
        self._proc: Any = ctx.Process(
            target=_child_main, args=(config, port, child_conn), daemon=True, name="fake-llm-server"
        )
        self._proc.start()
        child_conn.close()
        self.pid: int = self._proc.pid
        try:
            self.port = self._await_ready(time.monotonic() + startup_timeout_s, startup_timeout_s)
            self.base_url = f"http://{HOST}:{self.port}"
            self._await_http(time.monotonic() + startup_timeout_s, startup_timeout_s)
        except BaseException:
            self.close()
            raise

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def gemini_base_url(self) -> str:
        """For ``types.HttpOptions(base_url=...)``: the SDK appends ``/{api_version}/models/...`` itself."""
        return self.base_url

    def _await_ready(self, deadline: float, timeout_s: float) -> int:
        while time.monotonic() < deadline:
            try:
                if self._conn.poll(0.05):
                    status, value = self._conn.recv()
                    if status != "ready":
                        raise RuntimeError(f"fake LLM server failed to start: {value}")
                    return int(value)
            except EOFError:  # the child died before reporting (its traceback is on stderr)
                self._proc.join(1)
            if not self._proc.is_alive():
                raise RuntimeError(
                    f"fake LLM server process exited (code {self._proc.exitcode}) before it was ready; with the "
                    "spawn start method, a script must create FakeLLMServer under `if __name__ == '__main__':`"
                )
        raise TimeoutError(f"fake LLM server did not bind a port within {timeout_s:g}s")

    def _await_http(self, deadline: float, timeout_s: float) -> None:
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                self.stats()
                return
            except (OSError, urllib.error.URLError) as exc:
                last = exc
                time.sleep(0.02)
        raise TimeoutError(f"fake LLM server at {self.base_url} did not answer /_stats within {timeout_s:g}s: {last}")

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        req = urllib.request.Request(
            self.base_url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with _NO_PROXY.open(req, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise ValueError(f"{method} {path} -> {exc.code}: {exc.read().decode(errors='replace')}") from exc

    def stats(self) -> dict[str, Any]:
        """Counters: requests, by_kind, by_outcome, in_flight, max_in_flight, prompt_sha256, last_request, config."""
        return self._call("GET", "/_stats")  # type: ignore[no-any-return]

    def configure(self, **kw: Any) -> dict[str, Any]:
        """Changes settings at run time (validated here and by the server); returns the full config."""
        return self._configure(FakeConfig, "/_config", kw)

    def _configure(self, config_class: type, path: str, kw: dict[str, Any]) -> dict[str, Any]:
        config_class().updated(**kw)  # a bad setting fails here, in the caller
        return self._call("POST", path, kw)  # type: ignore[no-any-return]

    def reset(self) -> None:
        """Clears the counters and restarts the fault RNG from the configured seed."""
        self._call("POST", "/_reset", {})

    def batch_stats(self) -> dict[str, Any]:
        """Batch counters: batches (created), prompts_submitted, submitted_sha256, failed_sha256, polls, states."""
        return self._call("GET", "/_batch_stats")  # type: ignore[no-any-return]

    def configure_batches(self, **kw: Any) -> dict[str, Any]:
        """How batches behave (:class:`~judgebench.testing.fake_batches.FakeBatchConfig`)."""
        return self._configure(FakeBatchConfig, "/_batch_config", kw)

    def reset_batches(self) -> None:
        """Forgets every batch and file and clears the batch counters."""
        self._call("POST", "/_batch_reset", {})

    def close(self) -> None:
        """Stops the process (asks, then terminates, then kills) and joins it; idempotent."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            self._conn.send("stop")
        except (OSError, EOFError):
            pass
        proc.join(5)
        if proc.is_alive():
            proc.terminate()
            proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
        self._conn.close()
        proc.close()

    def __enter__(self) -> FakeLLMServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- foreground CLI


def main(argv: list[str] | None = None) -> None:
    """``python -m judgebench.testing.fake_process``: serve in the foreground until Ctrl-C."""
    ap = argparse.ArgumentParser(description="A local fake OpenAI / Gemini server (judgebench.testing).")
    ap.add_argument("--port", type=int, default=8011, help="0 picks a free port")
    ap.add_argument("--latency", type=float, default=0.0, dest="latency_s")
    for outcome, name in FAULT_FIELD.items():
        ap.add_argument(
            f"--{name.replace('_', '-')}",
            type=float,
            default=0.0,
            dest=name,
            help=f"share of requests answered '{outcome}'",
        )
    ap.add_argument("--retry-after", type=float, default=0.05, dest="retry_after_s")
    ap.add_argument("--timeout-hang", type=float, default=30.0, dest="timeout_hang_s")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--max-inflight",
        type=int,
        default=0,
        dest="max_inflight",
        help="server-side limit: requests in flight beyond it are answered 429 (0: none)",
    )
    ap.add_argument(
        "--limit-rpm",
        type=float,
        default=0.0,
        dest="limit_rpm",
        help="server-side requests-per-minute limit, answered 429 with x-ratelimit-* headers (0: none)",
    )
    ap.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="SUBSTRING=N",
        help="judging prompts containing SUBSTRING get label N (repeatable; first match wins)",
    )
    ap.add_argument(
        "--prefer",
        action="append",
        default=[],
        metavar="SUBSTRING",
        help="pairwise prompts: the passage containing SUBSTRING wins (repeatable)",
    )
    args = vars(ap.parse_args(argv))
    port = args.pop("port")
    labels = {}
    for item in args.pop("label"):
        key, sep, value = item.rpartition("=")
        if not sep:
            ap.error(f"--label wants SUBSTRING=N, got {item!r}")
        labels[key] = int(value)
    config = FakeConfig().updated(labels=labels, **args)

    async def serve() -> None:
        fake = FakeLLMApp(config)
        await fake.start(port)
        url = f"http://{HOST}:{fake.bound[0][1]}"
        print(f"fake LLM server on {url}  (OpenAI base_url {url}/v1, Gemini base_url {url})", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
