#!/usr/bin/env bash
# launch/mlflow_server.sh - an MLflow tracking server for judgebench sweeps, and the override to use.
#
#   launch/mlflow_server.sh [start] [--host H] [--port P] [--store URI] [--artifacts DIR] [--workers N] [--foreground]
#   launch/mlflow_server.sh status|stop [--port P]
#
# Why: many SLURM jobs writing one SQLite file on a shared file system is where "database is
# locked" and NFS locking trouble start; with a server, jobs talk HTTP and one process owns the
# database. Start it on a machine the compute nodes can reach (the login node, or inside a long
# SLURM job), then pass the printed override to the sweep:
#
#   launch/mlflow_server.sh --host 0.0.0.0            # prints e.g. tracking_uri=http://login1.cluster:5000
#   python run.py -m hydra/launcher=slurm tracking_uri=http://login1.cluster:5000 judge=...
#
# Defaults: bound to 127.0.0.1 (this machine only), port 5000, backend store
# sqlite:///<repo>/mlruns/mlflow.db (the same database local runs use, so the UI shows them too),
# artifacts served through the server from <repo>/mlruns/artifacts. --store takes any SQLAlchemy URI,
# e.g. postgresql://user:password@dbhost:5432/mlflow (needs `pip install psycopg2-binary`).
# The server has no authentication: bind to 0.0.0.0 only on a trusted cluster network.
# Runs in the background (pid and log under <repo>/mlruns/server/); `stop` ends it.
# stdout carries only the `tracking_uri=...` line; everything else goes to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ACTION=start
case "${1:-}" in start | stop | status) ACTION=$1; shift ;; esac
HOST=127.0.0.1
PORT=5000
STORE=""
ARTIFACTS="$ROOT/mlruns/artifacts"
WORKERS=2
FOREGROUND=0
WAIT_S="${MLFLOW_SERVER_WAIT_S:-60}"
while [ $# -gt 0 ]; do
  case "$1" in
    --host) HOST=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --store) STORE=$2; shift 2 ;;
    --artifacts) ARTIFACTS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --foreground) FOREGROUND=1; shift ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$STORE" ] || STORE="sqlite:///$ROOT/mlruns/mlflow.db"

RUN_DIR="$ROOT/mlruns/server"
PIDFILE="$RUN_DIR/mlflow-$PORT.pid"
LOG="$RUN_DIR/mlflow-$PORT.log"
MLFLOW="${MLFLOW:-$ROOT/.venv/bin/mlflow}"
[ -x "$MLFLOW" ] || MLFLOW="$(command -v mlflow || true)"

say() { printf '[mlflow_server] %s\n' "$*" >&2; }
alive() { local pgid; pgid=$(cat "$PIDFILE" 2>/dev/null) && [ -n "$pgid" ] && kill -0 -- "-$pgid" 2>/dev/null; }
healthy() { curl -sf --max-time 2 "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 ||
  curl -sf --max-time 2 "http://$HOST:$PORT/health" >/dev/null 2>&1; }

# the address jobs use: a wildcard bind is reached through this machine's name
URI_HOST=$HOST
case "$HOST" in 0.0.0.0 | "::" | "[::]") URI_HOST=$(hostname -f 2>/dev/null || hostname) ;; esac
print_override() {
  echo "tracking_uri=http://$URI_HOST:$PORT"
  say "pass it to run.py (e.g. python run.py -m hydra/launcher=slurm tracking_uri=http://$URI_HOST:$PORT ...);"
  say "add artifact_root=null to upload artifacts through the server instead of writing them to artifact_root"
  say "(a new experiment only; the default artifact_root is a local path, fine on a shared file system)"
}

case "$ACTION" in
  status)
    if alive && healthy; then say "running (process group $(cat "$PIDFILE")), log $LOG"; print_override; exit 0; fi
    say "not running on port $PORT"; exit 1 ;;
  stop)
    if alive; then
      pgid=$(cat "$PIDFILE"); say "stopping process group $pgid"; kill -TERM -- "-$pgid" 2>/dev/null || true
      for _ in $(seq 1 50); do alive || break; sleep 0.2; done
      alive && kill -KILL -- "-$pgid" 2>/dev/null || true
    else
      say "not running on port $PORT"
    fi
    rm -f "$PIDFILE"; exit 0 ;;
esac

[ -n "$MLFLOW" ] || { say "mlflow not found: install the project (.venv) first"; exit 1; }
if alive && healthy; then say "already running on port $PORT (log $LOG)"; print_override; exit 0; fi
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then say "port $PORT is taken by another process"; exit 1; fi

mkdir -p "$RUN_DIR" "$ARTIFACTS"
case "$STORE" in sqlite:///*) mkdir -p "$(dirname "${STORE#sqlite:///}")" ;; esac
args=(server --backend-store-uri "$STORE" --serve-artifacts --artifacts-destination "$ARTIFACTS"
  --host "$HOST" --port "$PORT" --workers "$WORKERS")
if [ "$URI_HOST" != 127.0.0.1 ] && [ "$URI_HOST" != localhost ]; then
  # MLflow 3 rejects requests whose Host header it does not know (DNS-rebinding protection)
  short=$(hostname -s 2>/dev/null || hostname); long=$(hostname -f 2>/dev/null || hostname)
  allowed="localhost,localhost:$PORT,127.0.0.1,127.0.0.1:$PORT"
  for h in "$URI_HOST" "$short" "$long" $(hostname -I 2>/dev/null || true); do allowed+=",$h,$h:$PORT"; done
  args+=(--allowed-hosts "$allowed")
fi
say "store $STORE, artifacts $ARTIFACTS, http://$HOST:$PORT"
if [ "$FOREGROUND" = 1 ]; then print_override; exec "$MLFLOW" "${args[@]}"; fi

setsid "$MLFLOW" "${args[@]}" >"$LOG" 2>&1 </dev/null &
echo $! >"$PIDFILE" # setsid's child leads its own process group: stop ends the server and its workers
end=$((SECONDS + WAIT_S))
until healthy; do
  if ! alive; then say "the server exited; last lines of $LOG:"; tail -n 20 "$LOG" >&2; exit 1; fi
  [ "$SECONDS" -lt "$end" ] || { say "no answer after ${WAIT_S}s; see $LOG"; exit 1; }
  sleep 0.3
done
say "ready (log $LOG; stop with: launch/mlflow_server.sh stop --port $PORT)"
print_override
