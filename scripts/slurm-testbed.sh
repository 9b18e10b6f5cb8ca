#!/usr/bin/env bash
# slurm-testbed.sh: a real Slurm on this machine for nodecheck's integration tests and for trying
# nodecheck by hand: one slurmctld and one slurmd per node (n1, n2 by default), munge, fake GPUs.
# Two Slurm versions: Debian 12's 22.05 on the host, or Debian 13's 24.11 in a Debian 13 root.
#
#   scripts/slurm-testbed.sh install [--slurm V]   22.05: apt-get the packages; 24.11: build the root
#   scripts/slurm-testbed.sh start [OPTIONS]       install if missing, write the config, start, wait for idle
#   scripts/slurm-testbed.sh status                the version, the daemons, `sinfo`; exit 0 only when all run
#   scripts/slurm-testbed.sh stop                  stop what start started, unmount the root; keep DIR's files
#   scripts/slurm-testbed.sh env                   `export SLURM_CONF=... PATH=DIR/slurm-bin:...`: eval "$(... env)"
#   scripts/slurm-testbed.sh version [--slurm V]   `slurmctld -V` of that version (installed or built before)
#   scripts/slurm-testbed.sh clean [--cache]       unmount roots of test beds that no longer run;
#                                                  --cache also deletes the cached Debian 13 root
# All as root (slurmd, mknod, munge, chroot and mount need it), without systemd.
#
# Options (flags win over the environment; status, stop and env read what start recorded in DIR):
#   --slurm V        NODECHECK_TESTBED_SLURM   22.05 (default) or 24.11
#   --nodes N|NAMES  NODECHECK_TESTBED_NODES   a count (names PREFIX1..PREFIXN) or names ("n1 n2",
#                                              the default); each node gets 2 fake GPUs
#   --prefix P       NODECHECK_TESTBED_PREFIX  node name prefix with a count (default n)
#   --width W        NODECHECK_TESTBED_WIDTH   zero-pad the number to W digits (n001 with 3)
#   --health-interval S  NODECHECK_TESTBED_HEALTH_INTERVAL  HealthCheckInterval (default 2; 60
#                                              above 16 nodes)
#   --reboot         NODECHECK_TESTBED_REBOOT=1  RebootProgram=DIR/bin/slurmd-reboot: `scontrol reboot`
#                                              restarts that node's slurmd with a fresh boot time
#                                              and boot id (see "Reboots" below)
#   --return-to-service N  NODECHECK_TESTBED_RETURN_TO_SERVICE  ReturnToService (default 2)
#   --resume-timeout S  NODECHECK_TESTBED_RESUME_TIMEOUT  ResumeTimeout: how long Slurm waits for a
#                                              rebooted node (default: Slurm's, 60)
#   --accounting     NODECHECK_TESTBED_ACCOUNTING=1  22.05 only: a private MariaDB and slurmdbd under
#                                              DIR, AccountingStorageType=accounting_storage/slurmdbd,
#                                              cluster, account testbed and user root made with
#                                              sacctmgr, so tests can make QOS (preempt/qos); slurmdbd
#                                              listens on PORT+N+1, MariaDB on PORT+N+2; install
#                                              adds slurmdbd and mariadb-server (scripts/testbed/accounting.sh)
#                    NODECHECK_TESTBED_SCHEDULER_PARAMETERS  slurm.conf's SchedulerParameters
#                                              (default: none), e.g. extra_constraints (23.11+)
#                    NODECHECK_TESTBED_EXTRA_CONF  a file whose lines are appended to slurm.conf
#                                              (PreemptType, more partitions); later keys win
#                    NODECHECK_TESTBED_TOPOLOGY  a file copied to topology.conf beside slurm.conf
#                                              (with TopologyPlugin= in EXTRA_CONF)
#                    NODECHECK_TESTBED_DIR     scratch directory (default /tmp/nodecheck-testbed);
#                                              every file the test bed writes is under it, nothing under /etc
#                    NODECHECK_TESTBED_PORT    slurmctld's port (default 16817); node i listens on
#                                              PORT+i, so test beds run side by side on other ports.
#                                              Keep PORT+N below the kernel's ephemeral range
#                                              (/proc/sys/net/ipv4/ip_local_port_range), or an
#                                              outgoing connection can take a node's port first
#                    NODECHECK_TESTBED_BIND    24.11: more host directories to show in the root at the
#                                              same path ("DIR" read-write, "DIR:ro" read-only); DIR
#                                              itself always is
#                    NODECHECK_TESTBED_CACHE   where the 24.11 root is kept (default /var/cache/nodecheck-testbed)
#                    NODECHECK_TESTBED_MIRROR  Debian mirror for the root (default: the first URIs: of
#                                              /etc/apt/sources.list.d/debian.sources, or sources.list)
#                    NODECHECK_TESTBED_NO_APT  1: install fails instead of running apt-get (tests off CI)
#
# Slurm 24.11: `install --slurm 24.11` builds CACHE/trixie-root once (30-80 s, 180 MB) with
#   mmdebstrap --variant=apt --include=slurmctld,slurmd,slurm-client,munge,procps,util-linux trixie
# under CACHE/lock, in a temporary directory renamed when complete; it is rebuilt when missing or
# incomplete. Each test bed mounts its own overlay of it at /run/nodecheck-testbed/ID/root (so its
# /run, /etc and munged are its own and concurrent beds do not meet), binds /proc, /dev and
# (recursively, as a slave) /sys into it, and shows DIR there at the same path. munged, slurmctld,
# slurmd, the hooks and nodecheck in them all run inside that root (chroot), with its Slurm
# clients; DIR/slurm-bin has wrappers that run those clients from the host. `stop` ends every
# process inside the bed's root and unmounts it. To clean up: `stop` each bed, then
# `clean --cache` (or rm -rf CACHE once no bed is mounted).
#
# The daemons are plain background processes started from / with setsid (hooks inherit slurmd's
# cwd), stopped by the PIDs this script recorded. Slurm 22.05 on the host: each bed runs its own
# munged on a socket under /run/nodecheck-testbed/ID/munge (slurm.conf AuthInfo=socket=), and
# `stop` ends it, and also every job, step and slurmstepd the bed left (they outlive slurmd).
# See docs/development.md, "The real-Slurm test bed".
#
# Hooks: Prolog=, Epilog= and HealthCheckProgram= all point at DIR/bin/nodecheck-hook (a copy of
# scripts/nodecheck-hook). It does nothing until a test writes DIR/hooks/NODE.CONTEXT (context:
# prolog, epilog, health): one argument a line, the first the program to exec. So a test picks a
# snapshot for a hook that Slurm starts without arguments.
#
# Reboots (--reboot): RebootProgram is DIR/bin/slurmd-reboot (a copy of scripts/testbed/slurmd-reboot),
# which stops the node's slurmd by PID and starts it again in a new time namespace (unshare
# --time --boottime) that booted a second earlier, so Slurm sees a node booted after its request.
# Every node has DIR/nodes/NODE/boot_id (a random UUID per boot: the kernel's boot_id is one for
# all nodes of the bed) and boot_time, written at start and at every reboot; DIR/nodes/NODE/reboots
# lists the reboots done. The host's boot time, which the offsets are computed from, is recorded
# once in DIR/run/host-btime. Details at the top of scripts/testbed/slurmd-reboot.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${NODECHECK_TESTBED_CACHE:-/var/cache/nodecheck-testbed}
ROOTFS=$CACHE/trixie-root
RUNBASE=/run/nodecheck-testbed
ROOT_PKGS=slurmctld,slurmd,slurm-client,munge,procps,util-linux
HOST_PKGS="slurmctld slurmd slurm-client munge"
# The clients DIR/slurm-bin wraps (those the version has).
CLIENTS="sbatch squeue sinfo scontrol scancel srun salloc sacct sstat sdiag sprio sshare"

log() { echo "slurm-testbed: $*" >&2; }
die() {
  log "$*"
  exit 1
}

# The opt-in accounting (--accounting): MariaDB and slurmdbd.
# shellcheck source=testbed/accounting.sh
. "$HERE/testbed/accounting.sh"

need_root() { [ "$(id -u)" = 0 ] || die "run as root: slurmd, mknod, munge and mount need it"; }

# --- options and the recorded state ---------------------------------------------------------

SLURM=${NODECHECK_TESTBED_SLURM:-22.05}
NODES_ARG=${NODECHECK_TESTBED_NODES:-"n1 n2"}
PREFIX=${NODECHECK_TESTBED_PREFIX:-n}
WIDTH=${NODECHECK_TESTBED_WIDTH:-0}
HEALTH_INTERVAL=${NODECHECK_TESTBED_HEALTH_INTERVAL:-}
REBOOT=${NODECHECK_TESTBED_REBOOT:-0}
RETURN_TO_SERVICE=${NODECHECK_TESTBED_RETURN_TO_SERVICE:-2}
RESUME_TIMEOUT=${NODECHECK_TESTBED_RESUME_TIMEOUT:-}
SCHEDULER_PARAMETERS=${NODECHECK_TESTBED_SCHEDULER_PARAMETERS:-}
EXTRA_CONF=${NODECHECK_TESTBED_EXTRA_CONF:-}
TOPOLOGY=${NODECHECK_TESTBED_TOPOLOGY:-}
CLEAN_CACHE=0

parse_flags() {
  while [ $# -gt 0 ]; do
    case "$1" in
    --slurm) SLURM=${2:?--slurm needs a version}; shift ;;
    --nodes) NODES_ARG=${2:?--nodes needs a count or names}; shift ;;
    --prefix) PREFIX=${2:?--prefix needs a prefix}; shift ;;
    --width) WIDTH=${2:?--width needs a number}; shift ;;
    --health-interval) HEALTH_INTERVAL=${2:?--health-interval needs seconds}; shift ;;
    --reboot) REBOOT=1 ;;
    --return-to-service) RETURN_TO_SERVICE=${2:?--return-to-service needs 0, 1 or 2}; shift ;;
    --resume-timeout) RESUME_TIMEOUT=${2:?--resume-timeout needs seconds}; shift ;;
    --cache) CLEAN_CACHE=1 ;;
    --accounting) ACCOUNTING=1 ;;
    *) die "unknown option $1 (see the top of $0)" ;;
    esac
    shift
  done
  case "$SLURM" in
  22.05 | 24.11) ;;
  *) die "--slurm $SLURM: want 22.05 (Debian 12, on the host) or 24.11 (Debian 13, in a root)" ;;
  esac
  [[ $WIDTH =~ ^[0-9]+$ ]] || die "--width $WIDTH: want a number of digits"
  [[ $PREFIX =~ ^[a-z][a-z0-9-]*$ ]] || die "--prefix $PREFIX: want a lower-case name ([a-z][a-z0-9-]*)"
  if [[ $NODES_ARG =~ ^[0-9]+$ ]]; then
    [ "$NODES_ARG" -ge 1 ] || die "--nodes $NODES_ARG: want at least 1"
    NODES=$(for ((i = 1; i <= NODES_ARG; i++)); do printf '%s%0*d ' "$PREFIX" "$WIDTH" "$i"; done)
    NODES=${NODES% }
  else
    NODES=$NODES_ARG
    for n in $NODES; do
      [[ $n =~ ^[a-z][a-z0-9-]*$ ]] || die "node name $n: want a lower-case name ([a-z][a-z0-9-]*)"
    done
  fi
  if [ -z "$HEALTH_INTERVAL" ]; then
    # Every 2 s makes a test quick; 256 idle nodes would run 128 hooks a second.
    HEALTH_INTERVAL=2
    [ "$(echo $NODES | wc -w)" -le 16 ] || HEALTH_INTERVAL=60
  fi
  [[ $HEALTH_INTERVAL =~ ^[0-9]+$ ]] || die "--health-interval $HEALTH_INTERVAL: want seconds"
  case "$REBOOT" in 0 | 1) ;; *) die "NODECHECK_TESTBED_REBOOT=$REBOOT: want 0 or 1" ;; esac
  case "$RETURN_TO_SERVICE" in 0 | 1 | 2) ;; *) die "--return-to-service $RETURN_TO_SERVICE: want 0, 1 or 2" ;; esac
  [[ -z $RESUME_TIMEOUT || $RESUME_TIMEOUT =~ ^[0-9]+$ ]] || die "--resume-timeout $RESUME_TIMEOUT: want seconds"
  accounting_check
}

DIR=${NODECHECK_TESTBED_DIR:-/tmp/nodecheck-testbed}
case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac
PORT=${NODECHECK_TESTBED_PORT:-16817}
CONF=$DIR/etc/slurm.conf
STATE=$DIR/run/testbed.state
# Where this bed's root is mounted (24.11): one directory per DIR, outside DIR, so that removing
# DIR can never reach into a mounted /proc, /dev, /sys or a bound directory.
RT=$RUNBASE/$(printf '%s' "$DIR" | cksum | cut -d' ' -f1)
MERGED=
# 22.05: the bed's own munged listens here (slurm.conf AuthInfo=socket=, which auth/munge and
# cred/munge both read: slurm.conf(5)), so that stop ends it and no bed uses another's.
MUNGE_SOCKET=$RT/munge/munge.socket

# load_state: what start recorded (the version, the nodes, the root), over flags and environment.
load_state() {
  local k v
  [ -r "$STATE" ] || return 0
  while IFS='=' read -r k v; do
    case "$k" in
    SLURM) SLURM=$v ;;
    NODES) NODES=$v ;;
    PORT) PORT=$v ;;
    MERGED) MERGED=$v ;;
    esac
  done <"$STATE"
}

save_state() {
  printf 'SLURM=%s\nNODES=%s\nPORT=%s\nMERGED=%s\n' "$SLURM" "$NODES" "$PORT" "$MERGED" >"$STATE"
  if [ "$SLURM" = 22.05 ]; then printf 'MUNGE_SOCKET=%s\n' "$MUNGE_SOCKET" >>"$STATE"; fi
}

# in_bed CMD...: run CMD where the bed's Slurm lives: on the host (22.05) or in its root (24.11).
in_bed() {
  if [ -n "$MERGED" ]; then /usr/sbin/chroot "$MERGED" "$@"; else "$@"; fi
}

# --- install: the host's packages or the cached Debian 13 root --------------------------------

host_installed() {
  [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ] && [ -x /usr/bin/scontrol ] &&
    [ -x /usr/bin/sinfo ] && [ -x /usr/bin/sbatch ] && [ -x /usr/sbin/munged ]
}

root_complete() {
  local f
  [ -s "$ROOTFS/.nodecheck-testbed" ] || return 1
  for f in usr/sbin/slurmctld usr/sbin/slurmd usr/bin/scontrol usr/bin/sinfo usr/bin/sbatch \
    usr/bin/squeue usr/sbin/munged usr/bin/munge etc/munge/munge.key bin/sh usr/bin/env; do
    [ -e "$ROOTFS/$f" ] || return 1
  done
}

apt_install() {
  [ "${NODECHECK_TESTBED_NO_APT:-}" = 1 ] && die "$* not installed (NODECHECK_TESTBED_NO_APT=1): run $0 install as root"
  command -v apt-get >/dev/null || die "no apt-get: install $* by hand"
  log "installing $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Without --no-install-recommends a plugins metapackage pulls in mysql, hdf5 and more. The
  # packages' own service start fails without systemd; that is harmless here.
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null || true
}

cmd_install() {
  need_root
  if [ "$SLURM" = 24.11 ]; then
    build_root
    return
  fi
  if ! host_installed; then
    apt_install $HOST_PKGS
    host_installed || die "apt-get did not install $HOST_PKGS"
  fi
  accounting_install
}

# mirror: the Debian mirror this machine's apt uses (never a host named here).
mirror() {
  local m=${NODECHECK_TESTBED_MIRROR:-}
  if [ -z "$m" ] && [ -r /etc/apt/sources.list.d/debian.sources ]; then
    m=$(awk '$1 == "URIs:" && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$m" ] && [ -r /etc/apt/sources.list ]; then
    m=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\// && $i !~ /security/) { print $i; exit } }' /etc/apt/sources.list)
  fi
  [ -n "$m" ] || die "no Debian mirror in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list: set NODECHECK_TESTBED_MIRROR"
  echo "$m"
}

# mounts_under PATH: the mount points at or below PATH, deepest last (from the kernel's table).
mounts_under() {
  awk -v p="$1" '{ m = $5; gsub(/\\040/, " ", m); if (m == p || index(m, p "/") == 1) print m }' /proc/self/mountinfo
}

# remove_tree DIR: rm -rf, but never through a mount point (a root left mounted by a killed run).
remove_tree() {
  [ -e "$1" ] || return 0
  if [ -n "$(mounts_under "$1")" ]; then umount -R "$1" 2>/dev/null || umount -l "$1" 2>/dev/null || true; fi
  [ -z "$(mounts_under "$1")" ] || die "not removing $1: still mounted there: $(mounts_under "$1" | tr '\n' ' ')"
  rm -rf --one-file-system "$1"
}

# build_root: CACHE/trixie-root, once. Under a lock, so that test runs started together build
# it once; in a temporary directory renamed when complete, so that no run sees half a root.
build_root() {
  local tmp m start=$SECONDS
  mkdir -p "$CACHE"
  chmod 755 "$CACHE"
  root_complete && return 0
  exec 8>"$CACHE/lock"
  flock -w 900 8 || die "another build holds $CACHE/lock for 15 minutes"
  if root_complete; then
    exec 8>&-
    return 0
  fi
  command -v mmdebstrap >/dev/null || apt_install mmdebstrap
  command -v mmdebstrap >/dev/null || die "apt-get did not install mmdebstrap"
  m=$(mirror)
  for tmp in "$CACHE"/trixie-root.tmp.* "$CACHE"/trixie-root.old.*; do remove_tree "$tmp"; done
  tmp=$(mktemp -d "$CACHE/trixie-root.tmp.XXXXXX")
  log "building the Debian 13 root for Slurm 24.11 in $ROOTFS (30-80 s; log in $CACHE/build.log)"
  if ! mmdebstrap --variant=apt --include=$ROOT_PKGS trixie "$tmp" "$m" >"$CACHE/build.log" 2>&1; then
    tail -n 20 "$CACHE/build.log" >&2
    remove_tree "$tmp"
    die "mmdebstrap failed (mirror $m): see $CACHE/build.log"
  fi
  printf 'mmdebstrap --variant=apt --include=%s trixie ROOT %s\nbuilt %s in %d s\n' \
    "$ROOT_PKGS" "$m" "$(date -u +%FT%TZ)" $((SECONDS - start)) >"$tmp/.nodecheck-testbed"
  if [ -e "$ROOTFS" ]; then
    # Incomplete (else we would not be here); never pull a root from under a mounted bed.
    grep -q "lowerdir=$ROOTFS[,:]" /proc/self/mountinfo && die "$ROOTFS is incomplete but a test bed uses it: stop it"
    mv "$ROOTFS" "$CACHE/trixie-root.old.$$"
    remove_tree "$CACHE/trixie-root.old.$$"
  fi
  mv "$tmp" "$ROOTFS"
  root_complete || die "the root built in $ROOTFS lacks Slurm or munge: see $CACHE/build.log"
  log "root built in $((SECONDS - start)) s"
  exec 8>&-
}

# --- the 24.11 root of one bed ----------------------------------------------------------------

# bind SRC DST [ro]: a plain bind mount, read-only if asked.
bind() {
  mkdir -p "$2"
  mount --bind "$1" "$2"
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}

mount_root() {
  local b src mode
  remove_tree "$RT"
  mkdir -p "$RT/upper" "$RT/work" "$RT/root"
  chmod 755 "$RUNBASE" "$RT"
  MERGED=$RT/root
  save_state # from here on, stop knows what to unmount
  mount -t overlay overlay -o "lowerdir=$ROOTFS,upperdir=$RT/upper,workdir=$RT/work" "$MERGED"
  # The host's names: without /etc/hosts every lookup of this host's name goes to DNS, and
  # where that does not answer the Slurm clients stall for 5 s now and then.
  cp /etc/hosts "$MERGED/etc/hosts"
  mount --bind /proc "$MERGED/proc"
  mount --bind /dev "$MERGED/dev"
  # hwloc reads the CPU topology there, and slurmd 24.11 wants the cgroup file system. A slave,
  # so that unmounting it here never unmounts anything on the host.
  mount --rbind /sys "$MERGED/sys"
  mount --make-rslave "$MERGED/sys"
  # Parents first; a directory a bind already shows is not bound again (a bind under another
  # would be hidden by it, and umount -R then fails on it).
  for b in $( (echo "$DIR" && printf '%s\n' ${NODECHECK_TESTBED_BIND:-}) | awk '{ print length($0), $0 }' | sort -n | cut -d' ' -f2-); do
    src=${b%:ro}
    mode=
    [ "$src" != "$b" ] && mode=ro
    case "$src" in /*) ;; *) die "NODECHECK_TESTBED_BIND: $src is not an absolute path" ;; esac
    [ -d "$src" ] || die "NODECHECK_TESTBED_BIND: no directory $src"
    if [ -d "$MERGED$src" ] && [ "$MERGED$src" -ef "$src" ]; then continue; fi
    bind "$src" "$MERGED$src" $mode
  done
}

# in_root_pids: every process whose root is this bed's root (its daemons, munged, jobs, hooks).
in_root_pids() {
  [ -n "$MERGED" ] || return 0
  { find /proc/[0-9]*/root -maxdepth 0 -lname "$MERGED" 2>/dev/null || true; } | cut -d/ -f3
}

umount_root() {
  local pids sig
  [ -n "$MERGED" ] || return 0
  for sig in TERM TERM TERM TERM TERM KILL; do
    pids=$(in_root_pids)
    [ -z "$pids" ] && break
    kill -"$sig" $pids 2>/dev/null || true
    sleep 0.5
  done
  if [ -n "$(mounts_under "$MERGED")" ]; then
    # Lazily as a last resort: that detaches the whole tree at once.
    umount -R "$MERGED" 2>/dev/null || { sleep 1; umount -R "$MERGED" 2>/dev/null; } || umount -l "$MERGED"
  fi
  remove_tree "$RT"
}

start_munge_root() {
  local _
  /usr/sbin/chroot "$MERGED" /bin/sh -c 'mkdir -p /run/munge && chown munge:munge /run/munge /var/log/munge /var/lib/munge'
  # -F: in the foreground, so that its PID is the one recorded; the root's own key and /run.
  setsid /usr/sbin/chroot --userspec=munge:munge "$MERGED" /usr/sbin/munged -F </dev/null >>"$DIR/log/munged.out" 2>&1 &
  echo $! >"$DIR/run/munged.pid"
  for _ in $(seq 50); do
    if /usr/sbin/chroot "$MERGED" /bin/sh -c 'munge -n | unmunge' >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  die "munge in $MERGED does not answer: see $DIR/log/munged.out"
}

# --- 22.05 on the host ------------------------------------------------------------------------

start_munge_host() {
  local _ d=$RT/munge
  [ -s /etc/munge/munge.key ] || die "/etc/munge/munge.key is missing: reinstall munge"
  remove_tree "$RT"
  mkdir -p "$d"
  chmod 755 "$RUNBASE" "$RT"
  # munged refuses to run as root, and refuses a socket, log or seed directory that others
  # may write to.
  chown munge:munge "$d"
  chmod 755 "$d"
  # -F: in the foreground, so that the PID recorded is munged's; chroot to / only to take the
  # munge user (it execs, where runuser would stay as munged's parent).
  setsid /usr/sbin/chroot --userspec=munge:munge / /usr/sbin/munged -F --socket="$MUNGE_SOCKET" \
    --pid-file="$d/munged.pid" --log-file="$d/munged.log" --seed-file="$d/munged.seed" \
    </dev/null >>"$DIR/log/munged.out" 2>&1 &
  echo $! >"$DIR/run/munged.pid"
  for _ in $(seq 50); do
    if munge -S "$MUNGE_SOCKET" -n 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  die "munged on $MUNGE_SOCKET does not answer: see $DIR/log/munged.out"
}

# pid_of_ours PIDFILE WORD: the PID in PIDFILE when that process runs (not a zombie) and WORD is
# one of its arguments, so that a PID reused by another program is never signalled.
pid_of_ours() {
  local pid arg args stat
  [ -s "$1" ] || return 1
  read -r pid <"$1" || return 1
  read -r stat 2>/dev/null <"/proc/$pid/stat" || return 1
  stat=${stat##*) }
  [ "${stat:0:1}" != Z ] || return 1
  mapfile -d '' -t args <"/proc/$pid/cmdline" 2>/dev/null || return 1
  for arg in "${args[@]}"; do [ "$arg" = "$2" ] && echo "$pid" && return 0; done
  return 1
}

# stop_munge_host: end the bed's munged (22.05; with -F it logs to DIR/log/munged.out), remove
# its socket directory.
stop_munge_host() {
  local pid
  if pid=$(pid_of_ours "$DIR/run/munged.pid" "--socket=$MUNGE_SOCKET"); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do pid_of_ours "$DIR/run/munged.pid" "--socket=$MUNGE_SOCKET" >/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/run/munged.pid"
  remove_tree "$RT"
}

# bed_pids: the processes of this bed outside a root (22.05), this script and its ancestors
# aside: a job's and a hook's processes, which slurmd starts with SLURMD_NODENAME in their
# environment and either SLURM_CONF=CONF (jobs, steps, prologs, epilogs; a health check's
# program has it from its hook file) or a program under DIR (the job script in the spool, the
# hook); and a slurmstepd with a file under DIR open (its node's log) or its working directory
# there (the node's spool), which outlives slurmd.
# An admin's shell with SLURM_CONF=CONF (`eval "$(... env)"`) has no SLURMD_NODENAME.
bed_pids() {
  local self=" " pid=$$ stat comm
  # grep and find fail on processes that end or that /proc hides: not an error here.
  local -
  set +o pipefail
  while [ "$pid" -gt 1 ] 2>/dev/null; do
    self="$self$pid "
    read -r stat 2>/dev/null <"/proc/$pid/stat" || break
    stat=${stat##*) }
    pid=$(echo "$stat" | cut -d' ' -f2)
  done
  # A few greps and one find for all processes: a machine runs thousands.
  {
    {
      grep -lszxF "SLURM_CONF=$CONF" /proc/[0-9]*/environ || true
      grep -lsF "$DIR/" /proc/[0-9]*/cmdline || true
    } | cut -d/ -f3 | sort -un | while read -r pid; do
      if grep -qsz '^SLURMD_NODENAME=' "/proc/$pid/environ"; then echo "$pid"; fi
    done
    find /proc/[0-9]*/fd /proc/[0-9]*/cwd -maxdepth 1 -lname "$DIR/*" 2>/dev/null | cut -d/ -f3 | sort -un | while read -r pid; do
      if read -r comm 2>/dev/null <"/proc/$pid/comm" && [ "$comm" = slurmstepd ]; then echo "$pid"; fi
    done
  } | sort -un | while read -r pid; do
    case "$self" in *" $pid "*) ;; *) echo "$pid" ;; esac
  done
}

# stop_bed_processes: TERM the bed's jobs and slurmstepd (22.05), KILL what is left after 1 s
# (with slurmd gone, a slurmstepd ignores TERM while it waits for it), and look again until
# two looks half a second apart find none: a job that slurmctld launched while it stopped may
# start a moment after the first look.
stop_bed_processes() {
  local pids sig empty=0 i
  for i in $(seq 20); do
    pids=$(bed_pids)
    if [ -z "$pids" ]; then
      empty=$((empty + 1))
      [ $empty -ge 2 ] && return 0
      sleep 0.5
      continue
    fi
    empty=0
    sig=TERM
    [ "$i" -gt 2 ] && sig=KILL
    kill -"$sig" $pids 2>/dev/null || true
    sleep 0.5
  done
  log "processes of the bed still run: $(bed_pids | tr '\n' ' ')"
}

# --- config, daemons ---------------------------------------------------------------------------

# alive PIDFILE: the process in PIDFILE runs and is ours (its command line names our config),
# so a PID reused by another program after a crash is never signalled. Builtins only: status
# and stop call it once per node.
alive() {
  local pid arg args
  [ -s "$1" ] || return 1
  read -r pid <"$1" || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  mapfile -d '' -t args <"/proc/$pid/cmdline" 2>/dev/null || return 1
  for arg in "${args[@]}"; do [ "$arg" = "$CONF" ] && return 0; done
  return 1
}

write_slurm_conf() {
  local host=$1 topo=$2 i=0 n
  echo "# Written by scripts/slurm-testbed.sh (Slurm $SLURM); rewritten at every start."
  echo "ClusterName=nodecheck-testbed"
  echo "SlurmctldHost=$host(127.0.0.1)"
  echo "SlurmctldPort=$PORT"
  echo "SlurmUser=root"
  echo "SlurmdUser=root"
  echo "AuthType=auth/munge"
  echo "CredType=cred/munge"
  if [ -z "$MERGED" ]; then echo "AuthInfo=socket=$MUNGE_SOCKET"; fi
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
  if [ "$ACCOUNTING" = 1 ]; then slurm_conf_accounting; else echo "AccountingStorageType=accounting_storage/none"; fi
  echo "JobAcctGatherType=jobacct_gather/none"
  echo "SchedulerType=sched/builtin"
  echo "ReturnToService=$RETURN_TO_SERVICE"
  if [ "$REBOOT" = 1 ]; then echo "RebootProgram=$DIR/bin/slurmd-reboot"; fi
  if [ -n "$RESUME_TIMEOUT" ]; then echo "ResumeTimeout=$RESUME_TIMEOUT"; fi
  if [ -n "$SCHEDULER_PARAMETERS" ]; then echo "SchedulerParameters=$SCHEDULER_PARAMETERS"; fi
  # Above 16 nodes 1200, so that slurmctld pings (and asks a batch of nodes to register again,
  # see settle_registrations) every 400 s instead of every 100 s during long scale tests.
  if [ "$(echo $NODES | wc -w)" -le 16 ]; then echo "SlurmdTimeout=300"; else echo "SlurmdTimeout=1200"; fi
  echo "InactiveLimit=0"
  echo "MinJobAge=300"
  echo "KillWait=2"
  # nodecheck as Slurm runs it: no arguments, no PATH, slurmd's cwd (see docs/draining.md).
  echo "PrologFlags=Alloc"
  echo "Prolog=$DIR/bin/nodecheck-hook"
  echo "Epilog=$DIR/bin/nodecheck-hook"
  echo "PrologEpilogTimeout=60"
  echo "HealthCheckProgram=$DIR/bin/nodecheck-hook"
  echo "HealthCheckInterval=$HEALTH_INTERVAL"
  echo "HealthCheckNodeState=ANY"
  for n in $NODES; do
    i=$((i + 1))
    echo "NodeName=$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT + i)) $topo RealMemory=1000 Gres=gpu:2 State=UNKNOWN"
  done
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
  # More lines a test asks for (preemption, partitions): appended as they are.
  if [ -n "$EXTRA_CONF" ]; then cat "$EXTRA_CONF"; fi
}

write_config() {
  local topo host gpu=0 n k c
  host=$(hostname -s)
  # The topology exactly as this version's slurmd sees it, or slurmd refuses the node's
  # socket/core layout.
  topo=$(in_bed /usr/sbin/slurmd -C | head -n1 | tr ' ' '\n' |
    grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')
  # A fresh controller state: slurmctld -c keeps assoc_usage, which 24.11 refuses from 22.05
  # when one DIR runs one version after the other.
  rm -rf "$DIR/state"
  mkdir -p "$DIR"/{etc,state,spool,log,run,dev,bin,hooks,slurm-bin}
  chmod 755 "$DIR" "$DIR/bin" "$DIR/hooks" "$DIR/slurm-bin"
  install -m 0755 "$HERE/nodecheck-hook" "$DIR/bin/nodecheck-hook"
  install -m 0755 "$HERE/testbed/slurmd-reboot" "$DIR/bin/slurmd-reboot"
  write_boots
  write_slurm_conf "$host" "$topo" >"$CONF"
  if [ -n "$TOPOLOGY" ]; then cp "$TOPOLOGY" "$DIR/etc/topology.conf"; fi
  : >"$DIR/etc/gres.conf"
  for n in $NODES; do
    # Character devices, as gres.conf requires: regular files are rejected, and then no GPU
    # variables reach jobs or prologs. 195 is nvidia's major.
    for k in $gpu $((gpu + 1)); do
      [ -c "$DIR/dev/nvidia$k" ] || { rm -f "$DIR/dev/nvidia$k"; mknod "$DIR/dev/nvidia$k" c 195 "$k"; }
    done
    echo "NodeName=$n Name=gpu File=$DIR/dev/nvidia[$gpu-$((gpu + 1))]" >>"$DIR/etc/gres.conf"
    gpu=$((gpu + 2))
  done
  mkdir -p $(for n in $NODES; do echo "$DIR/spool/$n"; done)
  # The version's clients, runnable from the host: in its root for 24.11 (in the caller's
  # directory where the root has it, else in /), and from the bed's jobs (fleet-sweep
  # --multinode's job script runs DIR/slurm-bin/srun).
  rm -f "$DIR"/slurm-bin/*
  for c in $CLIENTS; do
    [ -x "${MERGED}/usr/bin/$c" ] || continue
    if [ -n "$MERGED" ]; then
      cat <<EOF
#!/bin/sh
# $c of Slurm $SLURM, in the test bed's root; run in there already (a job's script, where the
# root is / and $MERGED is not there), the root's own.
[ -x $MERGED/usr/bin/$c ] || exec /usr/bin/$c "\$@"
exec /usr/sbin/chroot $MERGED /bin/sh -c 'cd "\$1" 2>/dev/null; shift; exec "\$@"' sh "\$PWD" /usr/bin/$c "\$@"
EOF
    else
      printf '#!/bin/sh\n# %s of Slurm %s, on the host.\nexec /usr/bin/%s "$@"\n' "$c" "$SLURM" "$c"
    fi >"$DIR/slurm-bin/$c"
    chmod 755 "$DIR/slurm-bin/$c"
  done
}

# wait_idle SECONDS: every node reads idle, polled with one sinfo call for all nodes; a daemon
# that died (a port taken, a bad config) ends the wait at once.
wait_idle() {
  local deadline=$((SECONDS + $1)) states="" want f polls=0
  want=$(echo $NODES | wc -w)
  while [ $SECONDS -lt $deadline ]; do
    # A node in several partitions (NODECHECK_TESTBED_EXTRA_CONF) is listed once a partition.
    states=$(SLURM_CONF=$CONF in_bed /usr/bin/sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | awk '{print $2}' | sort | uniq -c | tr -s ' \n' '  ' || true)
    if [ "$states" = " $want idle " ]; then return 0; fi
    if [ $((polls % 5)) = 0 ]; then
      for f in "$DIR"/run/*.child; do
        alive "$f" && continue
        f=$(basename "$f" .child)
        log "$f died: $(tail -n 1 "$DIR/log/$f.out" 2>/dev/null)"
        return 1
      done
    fi
    polls=$((polls + 1))
    sleep 0.2
  done
  log "nodes did not become idle within $1 s: sinfo says (count state): ${states:-nothing}"
  return 1
}

# host_btime: the host's boot time (epoch seconds), from /proc/stat outside any time namespace:
# in one, btime is shifted by the namespace's offset (checked where init's namespace is readable).
host_btime() {
  local self init
  self=$(readlink /proc/self/ns/time 2>/dev/null || true)
  init=$(readlink /proc/1/ns/time 2>/dev/null || true)
  [ -z "$init" ] || [ "$self" = "$init" ] || die "this runs in a time namespace ($self, not init's $init): start the test bed from outside"
  awk '$1 == "btime" { print $2; f = 1 } END { exit !f }' /proc/stat || die "no btime in /proc/stat"
}

# write_boots: each node's first boot (the host's boot time, a boot id of its own) under
# DIR/nodes; what earlier beds in DIR left there (reboots, snapshot copies) goes.
write_boots() {
  local n bt
  bt=$(host_btime)
  echo "$bt" >"$DIR/run/host-btime"
  rm -rf "$DIR/nodes"
  mkdir -p "$DIR/nodes"
  chmod 755 "$DIR/nodes"
  for n in $NODES; do
    mkdir -p "$DIR/nodes/$n"
    cat /proc/sys/kernel/random/uuid >"$DIR/nodes/$n/boot_id"
    echo "$bt" >"$DIR/nodes/$n/boot_time"
  done
}

start_daemons() {
  local n
  cd /
  # -c: a clean controller state, so a test bed never starts with nodes left drained.
  setsid ${MERGED:+/usr/sbin/chroot "$MERGED"} /usr/sbin/slurmctld -D -c -f "$CONF" </dev/null >>"$DIR/log/slurmctld.out" 2>&1 &
  echo $! >"$DIR/run/slurmctld.child"
  # All at once: each slurmd registers by itself.
  for n in $NODES; do
    setsid ${MERGED:+/usr/sbin/chroot "$MERGED"} /usr/sbin/slurmd -D -N "$n" -f "$CONF" </dev/null >>"$DIR/log/slurmd-$n.out" 2>&1 &
    echo $! >"$DIR/run/slurmd-$n.child"
  done
}

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# settle_registrations SINCE_MS: wait out slurmctld's first ping round. MIN_CHECKIN_TIME (3 s)
# after it starts, slurmctld asks the nodes with index W..2W-1 to register again (ping_nodes:
# W = TreeWidth, capped at 50 in 24.11; 50 and 16 by default), and a slurmd that registers
# connects to each of its job steps; one that refuses because its slurmstepd has not listened
# yet is taken for a stray, and slurmd deletes its batch script (stepd_api.c _step_connect ->
# _handle_stray_script): the job fails with exit 2:0, "execve(): ...slurm_script: No such
# file". Seen with 64 nodes and 64 jobs submitted at once. So a bed with more than W nodes
# returns once sdiag counts those registrations (each node registered once at start).
settle_registrations() {
  local since=$1 n w extra want count="" deadline
  n=$(echo $NODES | wc -w)
  w=$(SLURM_CONF=$CONF in_bed /usr/bin/scontrol show config | awk '$1 == "TreeWidth" {print $3}')
  [[ $w =~ ^[0-9]+$ ]] || { log "TreeWidth unknown (${w:-nothing}): not waiting for slurmctld's first ping round"; return 0; }
  [ "$SLURM" = 24.11 ] && [ "$w" -gt 50 ] && w=50
  extra=$((n > 2 * w ? w : n - w))
  [ "$extra" -gt 0 ] || return 0
  want=$((n + extra))
  deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do
    count=$(SLURM_CONF=$CONF in_bed /usr/bin/sdiag 2>/dev/null |
      awk '$1 == "MESSAGE_NODE_REGISTRATION_STATUS" {sub(/.*count:/, ""); print $1 + 0}')
    if [ $(($(now_ms) - since)) -ge 3000 ] && [ "${count:-0}" -ge "$want" ]; then return 0; fi
    sleep 0.2
  done
  log "slurmctld's first ping round: ${count:-no} node registrations after 30 s, want $want ($n nodes, $extra asked again)"
  return 1
}

cmd_start() {
  local timeout running t0 t1 t2 t3 t4 t5
  need_root
  cmd_install
  if [ -r "$STATE" ] && (load_state && cmd_status >/dev/null 2>&1); then
    running=$(load_state && echo "$SLURM")
    [ "$running" = "$SLURM" ] || die "Slurm $running already runs in $DIR: stop it first, or use another NODECHECK_TESTBED_DIR"
    log "already running in $DIR"
    (load_state && cmd_env)
    return 0
  fi
  (load_state && cmd_stop >/dev/null 2>&1) || true
  mkdir -p "$DIR/run" "$DIR/log"
  chmod 755 "$DIR"
  rm -f "$DIR"/run/*.child "$DIR/run/munged.pid" "$DIR/run/stopping"
  t0=$(now_ms)
  if [ "$SLURM" = 24.11 ]; then
    mount_root
    start_munge_root
  else
    MERGED=
    start_munge_host
  fi
  t1=$(now_ms)
  write_config
  save_state
  start_accounting # before slurmctld, which registers with slurmdbd (nothing without --accounting)
  t2=$(now_ms)
  start_daemons
  t3=$(now_ms)
  # 60 s, plus a little per node: 256 slurmd register within seconds, but on 2 cores.
  timeout=$((60 + $(echo $NODES | wc -w) / 4))
  if ! wait_idle $timeout; then
    tail -n 20 "$DIR/log/slurmctld.log" >&2 || true
    exit 1
  fi
  t4=$(now_ms)
  settle_registrations "$t2" || exit 1
  t5=$(now_ms)
  log "Slurm $SLURM running in $DIR: $(echo $NODES | wc -w) nodes idle after $(((t5 - t0) / 1000)).$(((t5 - t0) % 1000 / 100)) s" \
    "(root and munge $((t1 - t0)) ms, config$([ "$ACCOUNTING" = 1 ] && echo " and accounting") $((t2 - t1)) ms, daemons $((t3 - t2)) ms, until idle $((t4 - t3)) ms," \
    "first ping round $((t5 - t4)) ms)"
  cmd_env
}

cmd_stop() {
  local f pids="" pid left n
  # A reboot under way (slurmd-reboot holds DIR/nodes/NODE/lock) must not start a slurmd after
  # this: it sees the mark before it starts one. Wait for those that hold the lock now.
  [ -d "$DIR/run" ] && : >"$DIR/run/stopping"
  for n in $NODES; do
    [ -e "$DIR/nodes/$n/lock" ] && { flock -w 30 "$DIR/nodes/$n/lock" true || log "a reboot of $n holds its lock for 30 s"; }
  done
  for f in "$DIR"/run/*.child; do
    [ -e "$f" ] || continue
    if alive "$f"; then
      read -r pid <"$f"
      kill -TERM "$pid" 2>/dev/null || true
      pids="$pids $pid"
    fi
    rm -f "$f"
  done
  # All at once, then wait up to 10 s: slurmd takes a few seconds to shut down.
  for _ in $(seq 100); do
    left=""
    for pid in $pids; do kill -0 "$pid" 2>/dev/null && left="$left $pid"; done
    pids=$left
    [ -z "$pids" ] && break
    sleep 0.1
  done
  for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
  if [ -n "$MERGED" ]; then
    umount_root # munged, left-over jobs and their slurmstepd, then the mounts
    MERGED=
    [ -d "$DIR/run" ] && save_state
  else
    stop_bed_processes # left-over jobs and their slurmstepd, on the host
    stop_accounting    # slurmdbd and MariaDB (--accounting), before the munged slurmdbd uses
    stop_munge_host
  fi
  log "stopped (files kept in $DIR)"
}


cmd_status() {
  local ok=0 f n
  [ -e "$CONF" ] || {
    log "not set up: no $CONF"
    return 1
  }
  echo "Slurm $SLURM: $(cmd_version 2>&1)${MERGED:+ in $MERGED (overlay of $ROOTFS)}"
  if [ -n "$MERGED" ] && [ -z "$(mounts_under "$MERGED")" ]; then
    echo "root: not mounted"
    return 1
  fi
  for f in "$DIR/run/slurmctld.child" $(for n in $NODES; do echo "$DIR/run/slurmd-$n.child"; done); do
    if alive "$f"; then echo "$(basename "$f" .child): running, pid $(cat "$f")"; else
      echo "$(basename "$f" .child): not running"
      ok=1
    fi
  done
  status_accounting || ok=1
  # Without a controller sinfo retries for seconds: not worth it.
  alive "$DIR/run/slurmctld.child" || return 1
  SLURM_CONF=$CONF timeout 5 ${MERGED:+/usr/sbin/chroot "$MERGED"} /usr/bin/sinfo -N -o '%N %t %E' || ok=1
  return $ok
}

cmd_env() {
  echo "export SLURM_CONF=$CONF"
  echo "export PATH=$DIR/slurm-bin:\$PATH"
}

cmd_version() {
  if [ "$SLURM" = 24.11 ]; then
    root_complete || die "Slurm 24.11: no complete root in $ROOTFS: run $0 install --slurm 24.11"
    /usr/sbin/chroot "$ROOTFS" /usr/sbin/slurmctld -V
  else
    host_installed || die "Slurm 22.05 is not installed: run $0 install"
    /usr/sbin/slurmctld -V
  fi
}

# clean: unmount and remove the roots (and 22.05 munge directories) of beds whose processes are
# gone; --cache: the cached root too.
cmd_clean() {
  local rt
  need_root
  for rt in "$RUNBASE"/*; do
    [ -d "$rt" ] || continue
    MERGED=$rt/root
    if [ -n "$(in_root_pids)" ]; then
      log "$rt: in use (processes run in it): stop its test bed first"
      continue
    fi
    if pid_of_ours "$rt/munge/munged.pid" "--socket=$rt/munge/munge.socket" >/dev/null; then
      log "$rt: in use (a 22.05 bed's munged runs there): stop its test bed first"
      continue
    fi
    RT=$rt
    umount_root
    log "removed $rt"
  done
  MERGED=
  if [ "$CLEAN_CACHE" = 1 ] && [ -e "$CACHE" ]; then
    grep -q "lowerdir=$ROOTFS[,:]" /proc/self/mountinfo && die "a test bed still uses $ROOTFS: stop it first"
    remove_tree "$CACHE"
    log "removed $CACHE"
  fi
}

cmd=${1:-}
[ $# -gt 0 ] && shift
parse_flags "$@"
case "$cmd" in
install) cmd_install ;;
start) cmd_start ;;
stop) load_state && cmd_stop ;;
status) load_state && cmd_status ;;
env) load_state && cmd_env ;;
version) cmd_version ;;
clean) cmd_clean ;;
*)
  echo "usage: $0 install|start|stop|status|env|version|clean [--slurm 22.05|24.11] [--nodes N|NAMES] [--prefix P] [--width W] [--health-interval S] [--reboot] [--return-to-service N] [--resume-timeout S] [--accounting] [--cache]" >&2
  exit 2
  ;;
esac
