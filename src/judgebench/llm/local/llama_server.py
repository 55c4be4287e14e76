"""llama.cpp's own C++ server (``llama-server``) for a GGUF file, from the prebuilt ``xllamacpp`` wheel.

Why this and not llama-cpp-python: that package compiles llama.cpp on install (about 6 minutes on 2 cores,
and a wheel built where AMX exists crashes where it does not), and its server is Python around a
one-request-at-a-time model. ``xllamacpp`` ships llama.cpp built for any x86-64 CPU and runs llama.cpp's
HTTP server itself: the OpenAI-compatible routes, continuous batching, prompt caching. ``launch/llama_server.sh``
starts this module in the background; it serves until SIGTERM or SIGINT.

    python -m judgebench.llm.local.llama_server --model FILE.gguf [--alias NAME] [--host H] [--port P]
                                          [--ctx N] [--threads N] [--parallel N] [--no-prompt-cache]
"""

from __future__ import annotations

import argparse
import importlib.util
import signal
import sys
import threading
from pathlib import Path

XLLAMACPP_PIN = "xllamacpp==2026.10.11549"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m judgebench.llm.local.llama_server", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--model", required=True, type=Path, help="the GGUF file to serve")
    parser.add_argument("--alias", help="the model name the server reports and accepts (default: the file's stem)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (the server has no authentication)")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--ctx", type=int, default=2048, help="context tokens per slot")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for generation and prompt evaluation")
    parser.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="requests generated at once (slots); each slot gets --ctx tokens of KV cache",
    )
    parser.add_argument(
        "--no-prompt-cache",
        action="store_true",
        help="evaluate every prompt whole: slower (no reuse of the previous prompt's tokens), but an "
        "answer no longer depends on what was asked before it",
    )
    args = parser.parse_args(argv)
    for name in ("port", "ctx", "threads", "parallel"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if not args.model.is_file():
        parser.error(f"--model: no such file: {args.model}")
    if args.model.suffix != ".gguf":
        parser.error(f"--model: expected a .gguf file, got {args.model}")
    return args


def server_params(args: argparse.Namespace):
    """llama.cpp's ``common_params`` for the arguments: what ``llama-server`` would get from its flags."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(args.model.resolve())
    params.model_alias = {args.alias or args.model.stem}  # a set of names: a plain str would become its letters
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx * args.parallel  # llama.cpp splits the context among the slots
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    if args.no_prompt_cache:
        params.cache_prompt = False  # the slot's previous tokens
        params.cache_ram_mib = 0  # and the prompts llama.cpp keeps in host memory
    return params


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if importlib.util.find_spec("xllamacpp") is None:
        print(
            f"xllamacpp is not installed in {sys.executable}: pip install '{XLLAMACPP_PIN}' "
            "(a prebuilt llama.cpp, no compiler needed)",
            file=sys.stderr,
        )
        return 1
    import xllamacpp

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server = xllamacpp.Server(server_params(args))
    except Exception as exc:  # llama.cpp reports a bad model file as a RuntimeError with its own message
        print(f"llama.cpp could not serve {args.model}: {exc}", file=sys.stderr)
        return 1
    print(
        f"serving {args.model} as {args.alias or args.model.stem} on {server.listening_address}",
        file=sys.stderr,
        flush=True,
    )
    while not stop.wait(1.0):  # a timed wait, so that the signal handler runs promptly
        pass
    del server  # stops the HTTP threads and frees the model before the interpreter exits
    return 0


if __name__ == "__main__":
    sys.exit(main())
