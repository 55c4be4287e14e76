#!/usr/bin/env bash
# launch/start_slurm.sh - a real single-node SLURM cluster on this Debian machine, for
# judgebench's SLURM tests and for trying `python run.py -m hydra/launcher=slurm ...` locally.
#
# Installs (apt) slurm-wlm + munge, and by default slurmdbd + MariaDB for accounting, writes
# /etc/slurm/slurm.conf for this one node, and starts the daemons by hand (as root, no systemd).
# Idempotent: a rerun only installs / rewrites / (re)starts what is missing or changed, and
# returns once the node is idle (or mixed/allocated when jobs are already running on it).
#
#   launch/start_slurm.sh            start (install if needed); ~20-60 s from nothing, ~1 s when up
#   launch/start_slurm.sh status     daemons and node state; exit 1 when the cluster is not usable
#   launch/start_slurm.sh stop       stop slurmd, slurmctld, slurmdbd (MariaDB and munged keep running)
#
# Environment:
#   SLURM_ACCOUNTING=1 (default)  MariaDB + slurmdbd, so `sacct` works. submitit polls sacct: without
#                                 it a job that dies before writing its result (scancel, time limit,
#                                 OOM, kill -9) leaves the Hydra submitter waiting forever.
#   SLURM_ACCOUNTING=0            no database (faster to install; only for jobs that always finish)
#   SLURM_PARTITION (debug)       name of the single, default partition
#   SLURM_STATE_DIR (/var/spool/slurm)   SLURM_LOG_DIR (/var/log/slurm)
#   SLURM_WAIT_S (60)             how long to wait for each daemon and for the node
#
# The configuration fits judgebench's tests: EnforcePartLimits=ALL (a request larger than the node,
# e.g. a GPU on this CPU-only node, is rejected at sbatch time instead of pending forever),
# cons_tres with CR_Core_Memory (jobs share the node by cores and memory), KillWait=5 (scancel
# reaches SIGKILL quickly), MinJobAge=300 (finished jobs stay visible to squeue/sacct for 5 min).
set -euo pipefail

ACTION="${1:-start}"
ACCOUNTING="${SLURM_ACCOUNTING:-1}"
PARTITION="${SLURM_PARTITION:-debug}"
STATE_DIR="${SLURM_STATE_DIR:-/var/spool/slurm}"
LOG_DIR="${SLURM_LOG_DIR:-/var/log/slurm}"
WAIT_S="${SLURM_WAIT_S:-60}"
CONF_DIR=/etc/slurm
NODE="$(hostname -s)"
DB_PASS=judgebench-slurmdb # MariaDB account bound to localhost, for this local test cluster only

log() { printf '[start_slurm %(%H:%M:%S)T] %s\n' -1 "$*"; }
die() {
  log "ERROR: $*"
  for f in "$LOG_DIR"/*.log; do [ -f "$f" ] && { echo "--- tail $f"; tail -n 25 "$f"; }; done
  exit 1
}

# running PIDFILE COMM: the pid in PIDFILE is alive, not a zombie, and is COMM
running() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 1
  ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}
# stop_pidfile PIDFILE COMM: SIGTERM the daemon named in PIDFILE and wait until it is gone
stop_pidfile() {
  local pid i
  running "$1" "$2" || return 0
  pid=$(cat "$1"); log "stopping $2 (pid $pid)"; kill "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do running "$1" "$2" || return 0; sleep 0.1; done
  die "$2 (pid $pid) did not stop"
}
# wait_for WHAT CMD...: poll CMD until it succeeds, at most WAIT_S seconds
wait_for() {
  local what=$1 end=$((SECONDS + WAIT_S)); shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$end" ] || die "timed out after ${WAIT_S}s waiting for $what"
    sleep 0.2
  done
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# put_file PATH MODE: write stdin to PATH unless it already has that content;
# returns 0 when the file changed, 1 when it was up to date
put_file() {
  local tmp; tmp=$(mktemp)
  cat >"$tmp"
  if [ -f "$1" ] && cmp -s "$tmp" "$1"; then rm -f "$tmp"; chmod "$2" "$1"; return 1; fi
  install -D -m "$2" "$tmp" "$1"; rm -f "$tmp"; log "wrote $1"; return 0
}
node_state() { sinfo -h -n "$NODE" -o %T 2>/dev/null | head -n 1; }

case "$ACTION" in
  status)
    for d in munged:/run/munge/munged.pid slurmdbd:/run/slurmdbd.pid slurmctld:/run/slurmctld.pid slurmd:/run/slurmd.pid; do
      if running "${d#*:}" "${d%%:*}"; then echo "${d%%:*}: running"; else echo "${d%%:*}: not running"; fi
    done
    state=$(node_state || true)
    echo "node $NODE: ${state:-unknown}"
    case "$state" in idle | mixed | allocated) exit 0 ;; *) exit 1 ;; esac
    ;;
  stop)
    [ "$(id -u)" = 0 ] || die "must run as root"
    stop_pidfile /run/slurmd.pid slurmd
    stop_pidfile /run/slurmctld.pid slurmctld
    stop_pidfile /run/slurmdbd.pid slurmdbd
    exit 0
    ;;
  start) ;;
  *) echo "usage: $0 [start|status|stop]" >&2; exit 2 ;;
esac

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts daemons)"
started=$SECONDS
mkdir -p "$LOG_DIR" "$STATE_DIR/ctld" "$STATE_DIR/d"

# 1. packages (slurm-wlm = slurmctld + slurmd + client tools; munge authenticates them)
pkgs=(slurm-wlm munge)
[ "$ACCOUNTING" = 1 ] && pkgs+=(slurmdbd mariadb-server)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "apt-get install ${missing[*]} (log: $LOG_DIR/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; } \
    >"$LOG_DIR/apt.log" 2>&1 || { tail -n 30 "$LOG_DIR/apt.log"; die "apt-get failed"; }
fi

# 2. slurmd finds its node by the short hostname: make sure it resolves
getent hosts "$NODE" >/dev/null || { echo "127.0.0.1 $NODE" >>/etc/hosts; log "added $NODE to /etc/hosts"; }

# 3. munge (the package creates /etc/munge/munge.key; Debian's policy-rc.d blocks starting it)
if ! { munge -n | unmunge; } >/dev/null 2>&1; then
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key
  fi
  install -d -o munge -g munge -m 0755 /run/munge
  log "starting munged"
  runuser -u munge -- /usr/sbin/munged
  wait_for munged sh -c 'munge -n | unmunge'
fi

# 4. slurm.conf: this node as `slurmd -C` sees it, 90 % of its memory schedulable
MEM_MB=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
NODELINE=$(slurmd -C | head -n 1 | sed -E "s/RealMemory=[0-9]+/RealMemory=$MEM_MB/")
if [ "$ACCOUNTING" = 1 ]; then
  ACCT="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30"
else
  ACCT="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
fi
SLURM_CONF_CHANGED=0
put_file "$CONF_DIR/slurm.conf" 0644 <<EOF && SLURM_CONF_CHANGED=1 || true
# generated by judgebench launch/start_slurm.sh (single-node test cluster)
ClusterName=judgebench
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE_DIR/ctld
SlurmdSpoolDir=$STATE_DIR/d
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
KillWait=5
MinJobAge=300
MailProg=/bin/true
EnforcePartLimits=ALL
JobCompType=jobcomp/none
$ACCT
$NODELINE State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

# 5. accounting: MariaDB (started through its init script) + slurmdbd
if [ "$ACCOUNTING" = 1 ]; then
  DB_CONF_CHANGED=0
  put_file /etc/mysql/mariadb.conf.d/60-slurm.cnf 0644 <<'EOF' && DB_CONF_CHANGED=1 || true
[mysqld]
bind-address=127.0.0.1
innodb_buffer_pool_size=256M
innodb_lock_wait_timeout=900
EOF
  if mariadb-admin ping >/dev/null 2>&1; then
    if [ "$DB_CONF_CHANGED" = 1 ]; then
      log "restarting MariaDB"; /etc/init.d/mariadb restart >>"$LOG_DIR/mariadb-init.log" 2>&1
    fi
  else
    log "starting MariaDB"
    /etc/init.d/mariadb start >>"$LOG_DIR/mariadb-init.log" 2>&1 || die "MariaDB did not start"
  fi
  wait_for MariaDB mariadb-admin ping
  mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
  DBD_CONF_CHANGED=0
  put_file "$CONF_DIR/slurmdbd.conf" 0600 <<EOF && DBD_CONF_CHANGED=1 || true
# generated by judgebench launch/start_slurm.sh
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=root
LogFile=$LOG_DIR/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
  [ "$DBD_CONF_CHANGED" = 1 ] && stop_pidfile /run/slurmdbd.pid slurmdbd
  if ! running /run/slurmdbd.pid slurmdbd; then log "starting slurmdbd"; slurmdbd; fi
  wait_for "slurmdbd on port 6819" port_open 6819
fi

# 6. slurmctld and slurmd (restarted when slurm.conf changed)
if [ "$SLURM_CONF_CHANGED" = 1 ]; then
  stop_pidfile /run/slurmd.pid slurmd
  stop_pidfile /run/slurmctld.pid slurmctld
fi
if ! running /run/slurmctld.pid slurmctld; then log "starting slurmctld"; slurmctld; fi
wait_for slurmctld scontrol ping
if ! running /run/slurmd.pid slurmd; then log "starting slurmd"; slurmd; fi

# 7. wait for the node; resume it when an unclean stop left it down or drained
end=$((SECONDS + WAIT_S))
while :; do
  state=$(node_state || true)
  case "$state" in
    idle | mixed | allocated) break ;;
    down* | drain*)
      log "node state '$state', resuming"; scontrol update NodeName="$NODE" State=RESUME || true ;;
  esac
  [ "$SECONDS" -lt "$end" ] || die "node $NODE not ready after ${WAIT_S}s (state '$state')"
  sleep 0.2
done
if [ "$ACCOUNTING" = 1 ]; then
  # the cluster registers itself with slurmdbd; sacct must answer before submitit relies on it
  wait_for "sacct" sacct -n -X -S now
fi
log "ready in $((SECONDS - started))s: node $NODE is $state, partition $PARTITION"
sinfo
