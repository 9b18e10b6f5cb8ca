#!/usr/bin/env bash
# slurm-testbed.sh: a real Slurm on this machine for nodecheck's integration tests and for trying
# nodecheck by hand: one slurmctld and one slurmd per node (n1, n2 by default), munge, fake GPUs.
#
#   sudo scripts/slurm-testbed.sh install   apt-get the Slurm 22.05 packages (Debian 12)
#   sudo scripts/slurm-testbed.sh start     install if missing, write the config, start, wait for idle
#   sudo scripts/slurm-testbed.sh status    the daemons and `sinfo`; exit 0 only when all run
#   sudo scripts/slurm-testbed.sh stop      stop what start started (by PID), keep the files
#   sudo scripts/slurm-testbed.sh env       print `export SLURM_CONF=...` for a shell: eval "$(... env)"
#
# Environment:
#   NODECHECK_TESTBED_DIR    scratch directory (default /tmp/nodecheck-testbed); every file the
#                            test bed writes is under it, nothing under /etc
#   NODECHECK_TESTBED_NODES  node names (default "n1 n2"); each gets 2 fake GPUs
#   NODECHECK_TESTBED_PORT   slurmctld's port (default 16817); node i listens on PORT+i, so a
#                            test bed can run beside a Slurm on the default ports 6817/6818
#
# Runs as root and without systemd: the daemons are plain background processes started from /
# with setsid (hooks inherit slurmd's cwd), stopped by the PIDs this script recorded. See
# ../../shared/SLURM.md (observed behaviour) and README.md "Draining" for how nodecheck uses it.
#
# Hooks: Prolog=, Epilog= and HealthCheckProgram= all point at DIR/bin/nodecheck-hook (a copy of
# scripts/nodecheck-hook). It does nothing until a test writes DIR/hooks/NODE.CONTEXT (context:
# prolog, epilog, health): one argument a line, the first the program to exec. So a test picks a
# snapshot for a hook that Slurm starts without arguments.
set -euo pipefail

DIR=${NODECHECK_TESTBED_DIR:-/tmp/nodecheck-testbed}
NODES=${NODECHECK_TESTBED_NODES:-"n1 n2"}
PORT=${NODECHECK_TESTBED_PORT:-16817}
HERE=$(cd "$(dirname "$0")" && pwd)
CONF=$DIR/etc/slurm.conf
PKGS="slurmctld slurmd slurm-client munge"

log() { echo "slurm-testbed: $*" >&2; }
die() { log "$*"; exit 1; }

need_root() { [ "$(id -u)" = 0 ] || die "run as root: slurmd, mknod and munge need it"; }

installed() {
  [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ] && [ -x /usr/bin/scontrol ] &&
    [ -x /usr/bin/sinfo ] && [ -x /usr/bin/sbatch ] && [ -x /usr/sbin/munged ]
}

cmd_install() {
  need_root
  if installed; then return 0; fi
  command -v apt-get >/dev/null || die "Slurm is not installed and there is no apt-get: install $PKGS"
  log "installing $PKGS"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Without --no-install-recommends a plugins metapackage pulls in mysql, hdf5 and more. The
  # packages' own service start fails without systemd; that is harmless here.
  apt-get install -y -qq --no-install-recommends $PKGS >/dev/null || true
  installed || die "apt-get did not install $PKGS"
}

# alive PIDFILE: the process in PIDFILE runs and is ours (its command line names our config),
# so a PID reused by another program after a crash is never signalled.
alive() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$CONF"
}

start_munge() {
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return 0; fi
  # Test beds started at once (go test runs packages in parallel) share one munged: the
  # first one starts it, the others wait for the lock and then find it answering.
  mkdir -p /run/munge
  exec 9>/run/nodecheck-testbed-munge.lock
  flock -w 60 9 || die "another test bed holds /run/nodecheck-testbed-munge.lock"
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then exec 9>&-; return 0; fi
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  [ -s /etc/munge/munge.key ] || die "/etc/munge/munge.key is missing: reinstall munge"
  # munged forks into the background itself and refuses to run as root.
  runuser -u munge -- /usr/sbin/munged || die "munged did not start (see /var/log/munge/munged.log)"
  for _ in $(seq 50); do
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then exec 9>&-; return 0; fi
    sleep 0.1
  done
  die "munge does not answer: munge -n | unmunge fails"
}

write_config() {
  local topo host i gpu=0 n
  host=$(hostname -s)
  # The topology exactly as slurmd sees it, or slurmd refuses the node's socket/core layout.
  topo=$(slurmd -C | head -n1 | tr ' ' '\n' |
    grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')
  mkdir -p "$DIR"/{etc,state,spool,log,run,dev,bin,hooks}
  chmod 755 "$DIR" "$DIR/bin" "$DIR/hooks"
  install -m 0755 "$HERE/nodecheck-hook" "$DIR/bin/nodecheck-hook"
  : >"$DIR/etc/gres.conf"
  {
    echo "# Written by scripts/slurm-testbed.sh; rewritten at every start."
    echo "ClusterName=nodecheck-testbed"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=$PORT"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "StateSaveLocation=$DIR/state"
    echo "SlurmdSpoolDir=$DIR/spool/%n"
    echo "SlurmctldPidFile=$DIR/run/slurmctld.pid"
    echo "SlurmdPidFile=$DIR/run/slurmd-%n.pid"
    echo "SlurmctldLogFile=$DIR/log/slurmctld.log"
    echo "SlurmdLogFile=$DIR/log/slurmd-%n.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "GresTypes=gpu"
    echo "MpiDefault=none"
    echo "MailProg=/bin/true"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "SchedulerType=sched/builtin"
    echo "ReturnToService=2"
    echo "SlurmdTimeout=300"
    echo "InactiveLimit=0"
    echo "MinJobAge=300"
    echo "KillWait=2"
    # nodecheck as Slurm runs it: no arguments, no PATH, slurmd's cwd (see README "Draining").
    echo "PrologFlags=Alloc"
    echo "Prolog=$DIR/bin/nodecheck-hook"
    echo "Epilog=$DIR/bin/nodecheck-hook"
    echo "PrologEpilogTimeout=60"
    echo "HealthCheckProgram=$DIR/bin/nodecheck-hook"
    echo "HealthCheckInterval=2"
    echo "HealthCheckNodeState=ANY"
    i=0
    for n in $NODES; do
      i=$((i + 1))
      echo "NodeName=$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT + i)) $topo RealMemory=1000 Gres=gpu:2 State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=$(echo $NODES | tr ' ' ',') Default=YES MaxTime=INFINITE State=UP"
  } >"$CONF"
  for n in $NODES; do
    # Character devices, as gres.conf requires: regular files are rejected, and then no GPU
    # variables reach jobs or prologs. 195 is nvidia's major.
    for k in $gpu $((gpu + 1)); do
      [ -c "$DIR/dev/nvidia$k" ] || { rm -f "$DIR/dev/nvidia$k"; mknod "$DIR/dev/nvidia$k" c 195 "$k"; }
    done
    echo "NodeName=$n Name=gpu File=$DIR/dev/nvidia[$gpu-$((gpu + 1))]" >>"$DIR/etc/gres.conf"
    gpu=$((gpu + 2))
    mkdir -p "$DIR/spool/$n"
  done
}

# wait_idle SECONDS: every node reads idle (drained nodes read drain: also fine once settled).
wait_idle() {
  local deadline=$((SECONDS + $1)) states
  while [ $SECONDS -lt $deadline ]; do
    states=$(SLURM_CONF=$CONF sinfo -h -N -o '%t' 2>/dev/null | sort -u | tr '\n' ' ')
    if [ "$states" = "idle " ]; then return 0; fi
    sleep 0.2
  done
  log "nodes did not become idle within $1 s: sinfo says: ${states:-nothing}"
  return 1
}

cmd_start() {
  need_root
  cmd_install
  if cmd_status >/dev/null 2>&1; then
    log "already running in $DIR"
    cmd_env
    return 0
  fi
  cmd_stop >/dev/null 2>&1 || true
  start_munge
  write_config
  cd /
  # -c: a clean controller state, so a test bed never starts with nodes left drained.
  setsid /usr/sbin/slurmctld -D -c -f "$CONF" </dev/null >>"$DIR/log/slurmctld.out" 2>&1 &
  echo $! >"$DIR/run/slurmctld.child"
  for n in $NODES; do
    setsid /usr/sbin/slurmd -D -N "$n" -f "$CONF" </dev/null >>"$DIR/log/slurmd-$n.out" 2>&1 &
    echo $! >"$DIR/run/slurmd-$n.child"
  done
  if ! wait_idle 60; then
    tail -n 20 "$DIR"/log/*.log >&2 || true
    exit 1
  fi
  log "running in $DIR: nodes $NODES idle"
  cmd_env
}

cmd_stop() {
  local f pids="" pid
  for f in "$DIR"/run/*.child; do
    [ -e "$f" ] || continue
    if alive "$f"; then
      pid=$(cat "$f")
      kill -TERM "$pid" 2>/dev/null || true
      pids="$pids $pid"
    fi
    rm -f "$f"
  done
  # All at once, then wait up to 10 s: slurmd takes a few seconds to shut down.
  for _ in $(seq 100); do
    local left=""
    for pid in $pids; do kill -0 "$pid" 2>/dev/null && left="$left $pid"; done
    pids=$left
    [ -z "$pids" ] && break
    sleep 0.1
  done
  for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
  log "stopped (files kept in $DIR)"
}

cmd_status() {
  local ok=0 f n
  [ -e "$CONF" ] || { log "not set up: no $CONF"; return 1; }
  for f in "$DIR/run/slurmctld.child" $(for n in $NODES; do echo "$DIR/run/slurmd-$n.child"; done); do
    if alive "$f"; then echo "$(basename "$f" .child): running, pid $(cat "$f")"; else
      echo "$(basename "$f" .child): not running"
      ok=1
    fi
  done
  SLURM_CONF=$CONF timeout 5 sinfo -N -o '%N %t %E' || ok=1
  return $ok
}

cmd_env() { echo "export SLURM_CONF=$CONF"; }

case "${1:-}" in
install) cmd_install ;;
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
env) cmd_env ;;
*)
  echo "usage: $0 install|start|stop|status|env" >&2
  exit 2
  ;;
esac
