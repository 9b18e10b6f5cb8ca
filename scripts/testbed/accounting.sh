# accounting.sh: the test bed's opt-in accounting (--accounting, NODECHECK_TESTBED_ACCOUNTING=1),
# sourced by scripts/slurm-testbed.sh. Slurm 22.05 on the host only: a private MariaDB and a
# slurmdbd, so that QOS (which live in the accounting database) can be made with sacctmgr, for
# preempt/qos. Everything is under DIR:
#   DIR/mariadb/data     the database (mariadb-install-db), DIR/mariadb/mariadb.sock its socket
#   DIR/etc/slurmdbd.conf  0600, owned by SlurmUser (root), beside slurm.conf: slurmdbd finds
#                        it there through SLURM_CONF
#   DIR/log/mariadb.log, slurmdbd.log; DIR/run/mariadbd.started, slurmdbd.started (their PIDs)
# Ports (both on 127.0.0.1): slurmdbd's DbdPort is PORT+N+1 and MariaDB's PORT+N+2 (N nodes; node
# i has PORT+i). slurmdbd reaches MariaDB by TCP: it passes no socket to the client library, which
# would take the system's /run/mysqld/mysqld.sock.
# Both run as root (mariadbd --user=root), started from / with setsid like the other daemons, and
# stop_accounting ends them by the PIDs recorded, each checked to be ours first.
# The cluster (ClusterName), an account "testbed" and the user root in it are created with
# sacctmgr -i before slurmctld starts. A test adds its QOS with sacctmgr (Bed.Slurm).

ACCOUNTING=${NODECHECK_TESTBED_ACCOUNTING:-0}
ACCT_PKGS="slurmdbd mariadb-server"
# The database user slurmdbd connects as; the password only guards a port on 127.0.0.1 of a
# test bed that lives for one test.
ACCT_DB_USER=slurm
ACCT_DB_PASS=nodecheck-testbed

accounting_check() {
  case "$ACCOUNTING" in 0 | 1) ;; *) die "NODECHECK_TESTBED_ACCOUNTING=$ACCOUNTING: want 0 or 1" ;; esac
  if [ "$ACCOUNTING" = 1 ] && [ "$SLURM" != 22.05 ]; then
    die "--accounting: only with Slurm 22.05 (on the host); the 24.11 root has no slurmdbd or MariaDB"
  fi
}

accounting_installed() {
  [ -x /usr/sbin/slurmdbd ] && [ -x /usr/sbin/mariadbd ] && [ -x /usr/bin/mariadb-install-db ] &&
    [ -x /usr/bin/mariadb ] && [ -x /usr/bin/sacctmgr ]
}

accounting_install() {
  [ "$ACCOUNTING" = 1 ] || return 0
  accounting_installed && return 0
  apt_install $ACCT_PKGS
  accounting_installed || die "apt-get did not install $ACCT_PKGS"
}

acct_ports() {
  local n
  n=$(echo $NODES | wc -w)
  DBD_PORT=$((PORT + n + 1))
  DB_PORT=$((PORT + n + 2))
}

# slurm_conf_accounting: slurm.conf's accounting lines (none without --accounting).
slurm_conf_accounting() {
  acct_ports
  echo "AccountingStorageType=accounting_storage/slurmdbd"
  echo "AccountingStorageHost=127.0.0.1"
  echo "AccountingStoragePort=$DBD_PORT"
  # The clients' munge socket for slurmdbd's connections: 22.05 takes it from here, not from
  # AuthInfo (slurm.conf(5), AccountingStoragePass: "the pathname of the MUNGE socket").
  echo "AccountingStoragePass=socket=$MUNGE_SOCKET"
}

write_slurmdbd_conf() {
  local f=$DIR/etc/slurmdbd.conf
  acct_ports
  rm -f "$f"
  (
    umask 077
    cat >"$f" <<EOF
# Written by scripts/slurm-testbed.sh --accounting (Slurm $SLURM); rewritten at every start.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=$ACCT_DB_USER
StoragePass=$ACCT_DB_PASS
StorageLoc=slurm_acct_db
EOF
  )
  chown root:root "$f"
  chmod 600 "$f"
}

acct_mariadb() { /usr/bin/mariadb --no-defaults --socket="$DIR/mariadb/mariadb.sock" -u root "$@"; }

# slurmdbd_pid: slurmdbd's PID when it runs and is ours (it has SLURM_CONF=CONF, which is how it
# found slurmdbd.conf).
slurmdbd_pid() {
  local pid comm
  [ -s "$DIR/run/slurmdbd.started" ] || return 1
  read -r pid <"$DIR/run/slurmdbd.started" || return 1
  read -r comm 2>/dev/null <"/proc/$pid/comm" || return 1
  [ "$comm" = slurmdbd ] || return 1
  grep -qszxF "SLURM_CONF=$CONF" "/proc/$pid/environ" || return 1
  echo "$pid"
}

start_mariadb() {
  local d=$DIR/mariadb _
  rm -rf "$d"
  mkdir -p "$d"
  # --no-defaults: none of the system's /etc/mysql settings (its datadir, socket, port).
  if ! /usr/bin/mariadb-install-db --no-defaults --user=root --datadir="$d/data" \
    --auth-root-authentication-method=socket --skip-test-db >"$DIR/log/mariadb-install.out" 2>&1; then
    tail -n 20 "$DIR/log/mariadb-install.out" >&2
    die "mariadb-install-db failed: see $DIR/log/mariadb-install.out"
  fi
  cd /
  setsid /usr/sbin/mariadbd --no-defaults --user=root --datadir="$d/data" --socket="$d/mariadb.sock" \
    --pid-file="$d/mariadbd.pid" --port="$DB_PORT" --bind-address=127.0.0.1 \
    --log-error="$DIR/log/mariadb.log" --innodb-buffer-pool-size=32M --innodb-lock-wait-timeout=900 \
    </dev/null >>"$DIR/log/mariadb.out" 2>&1 &
  echo $! >"$DIR/run/mariadbd.started"
  for _ in $(seq 300); do
    if acct_mariadb -e 'SELECT 1' >/dev/null 2>&1; then break; fi
    pid_of_ours "$DIR/run/mariadbd.started" "--datadir=$d/data" >/dev/null ||
      die "mariadbd died: $(tail -n 5 "$DIR/log/mariadb.log" 2>/dev/null)"
    sleep 0.1
  done
  acct_mariadb -e 'SELECT 1' >/dev/null 2>&1 || die "mariadbd does not answer on $d/mariadb.sock after 30 s: see $DIR/log/mariadb.log"
  acct_mariadb -e "CREATE USER '$ACCT_DB_USER'@'127.0.0.1' IDENTIFIED BY '$ACCT_DB_PASS';
    CREATE DATABASE slurm_acct_db; GRANT ALL ON slurm_acct_db.* TO '$ACCT_DB_USER'@'127.0.0.1';" ||
    die "could not create the database user for slurmdbd"
}

start_slurmdbd() {
  local _
  cd /
  SLURM_CONF=$CONF setsid /usr/sbin/slurmdbd -D </dev/null >>"$DIR/log/slurmdbd.out" 2>&1 &
  echo $! >"$DIR/run/slurmdbd.started"
  # sacctmgr answers once slurmdbd has made its tables and listens.
  for _ in $(seq 300); do
    if SLURM_CONF=$CONF timeout 10 /usr/bin/sacctmgr -n list cluster >/dev/null 2>&1; then return 0; fi
    slurmdbd_pid >/dev/null || die "slurmdbd died: $(tail -n 5 "$DIR/log/slurmdbd.log" "$DIR/log/slurmdbd.out" 2>/dev/null)"
    sleep 0.1
  done
  die "slurmdbd does not answer on 127.0.0.1:$DBD_PORT after 30 s: see $DIR/log/slurmdbd.log"
}

# start_accounting: MariaDB, slurmdbd, then the cluster, account and user, before slurmctld.
start_accounting() {
  local cluster
  [ "$ACCOUNTING" = 1 ] || return 0
  acct_ports
  write_slurmdbd_conf
  start_mariadb
  start_slurmdbd
  cluster=$(awk -F= '$1 == "ClusterName" {print $2}' "$CONF")
  SLURM_CONF=$CONF /usr/bin/sacctmgr -i add cluster "$cluster" >/dev/null &&
    SLURM_CONF=$CONF /usr/bin/sacctmgr -i add account testbed Cluster="$cluster" \
      Description="nodecheck test bed" Organization=nodecheck >/dev/null &&
    SLURM_CONF=$CONF /usr/bin/sacctmgr -i add user root Account=testbed DefaultAccount=testbed \
      Cluster="$cluster" >/dev/null ||
    die "sacctmgr could not add the cluster $cluster, account testbed and user root: see $DIR/log/slurmdbd.log"
}

# stop_accounting: end slurmdbd, then mariadbd (which flushes its tables first: up to 30 s), by
# the PIDs start recorded, each checked to be ours. Nothing to do where they never ran.
stop_accounting() {
  local pid
  if pid=$(slurmdbd_pid); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do slurmdbd_pid >/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/run/slurmdbd.started"
  if pid=$(pid_of_ours "$DIR/run/mariadbd.started" "--datadir=$DIR/mariadb/data"); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 300); do pid_of_ours "$DIR/run/mariadbd.started" "--datadir=$DIR/mariadb/data" >/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/run/mariadbd.started"
}

# status_accounting: one line a daemon; 1 when one that start started does not run.
status_accounting() {
  local ok=0
  [ -e "$DIR/run/slurmdbd.started" ] || [ -e "$DIR/run/mariadbd.started" ] || return 0
  if slurmdbd_pid >/dev/null; then echo "slurmdbd: running, pid $(slurmdbd_pid)"; else
    echo "slurmdbd: not running"
    ok=1
  fi
  if pid_of_ours "$DIR/run/mariadbd.started" "--datadir=$DIR/mariadb/data" >/dev/null; then
    echo "mariadbd: running, pid $(cat "$DIR/run/mariadbd.started")"
  else
    echo "mariadbd: not running"
    ok=1
  fi
  return $ok
}
