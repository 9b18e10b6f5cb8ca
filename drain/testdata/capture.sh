#!/usr/bin/env bash
# capture.sh: records real scontrol and sinfo output from the test bed into slurm-MAJOR.MINOR/,
# the inputs of the parser and state-table tests. Run as root on a machine where the test bed
# can start, once per Slurm version:
#
#   scripts/slurm-testbed.sh start --slurm 22.05 && eval "$(scripts/slurm-testbed.sh env)"
#   drain/testdata/capture.sh
#   scripts/slurm-testbed.sh stop
#   (the same with --slurm 24.11)
#
# Each file is exactly what the command printed (stdout, then stderr for the failing ones).
# Node n1 is put through each state nodecheck can meet on a test bed: show-node-STATE.txt is
# `scontrol show node -o --future n1`, and on 23.02 and later show-node-STATE.json is
# `scontrol --json show node --future n1`. sinfo-nodes-STATE.txt is drain's cluster listing
# (drain.SinfoFormat). To reach the reboot and power-saving states it appends RebootProgram and
# power-saving settings to the test bed's slurm.conf and reconfigures; it ends with n2 powered
# down, so stop the test bed afterwards. States a test bed cannot reach (PLANNED, INVALID_REG,
# COMPLETING held still) are not captured; drain's tests say so where they use literals.
set -euo pipefail
cd "$(dirname "$0")"
: "${SLURM_CONF:?set SLURM_CONF to the test bed (scripts/slurm-testbed.sh env)}"
ver=$(scontrol --version | awk '{print $2}')
out=slurm-${ver%.*}
major=${ver%%.*}
minor=${ver#*.}
minor=${minor%%.*}
json=false
if [ "$major" -gt 23 ] || { [ "$major" -eq 23 ] && [ "$minor" -ge 2 ]; }; then json=true; fi
mkdir -p "$out"
SINFO_FORMAT='NodeList:0|,StateComplete:0|,Timestamp:0|,Reason:0'

sc() { scontrol "$@"; }
settle() { sleep 0.5; }
show() {
  sc show node -o --future n1 >"$out/show-node-$1.txt"
  if $json; then sc --json show node --future n1 >"$out/show-node-$1.json"; fi
}
listing() { SLURM_TIME_FORMAT=%s sinfo --all --noheader --Node -O "$SINFO_FORMAT" >"$out/sinfo-nodes-$1.txt"; }
resume() { sc update NodeName="${1:-n1}" State=RESUME 2>/dev/null || true; settle; }
wait_state() { # NODE STATE: until sinfo's compact state is STATE (at most 10 s)
  for _ in $(seq 50); do [ "$(sinfo -h -N -n "$1" -o %t)" = "$2" ] && return 0; sleep 0.2; done
  echo "capture.sh: $1 did not become $2" >&2
  return 1
}
run_job() { # submit a 60 s job on n1 and wait until it runs; prints the job id
  local job
  job=$(sbatch --parsable -w n1 -o /dev/null --wrap '/bin/sleep 60')
  for _ in $(seq 100); do
    if [ "$(squeue -h -j "$job" -o %t)" = R ] && sc show node -o n1 | grep -Eq ' State=(MIXED|ALLOCATED)'; then
      echo "$job"
      return 0
    fi
    sleep 0.2
  done
  echo "capture.sh: job $job did not start on n1: $(squeue -h -j "$job")" >&2
  return 1
}
until_state() { # NODE WORD: until scontrol's State= of NODE holds WORD (at most 10 s)
  for _ in $(seq 100); do sc show node -o --future "$1" | grep -Eq " State=[^ ]*$2" && return 0; sleep 0.1; done
  echo "capture.sh: $1 never showed $2" >&2
  return 1
}

scontrol --version >"$out/version.txt"
resume
wait_state n1 idle
show idle

sc update NodeName=n1 State=DRAIN "Reason=nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE"
settle; show drained-nodecheck
listing drained
if ! $json; then sinfo --json >"$out/sinfo.json"; fi
resume
# 24.11 keeps the reason after RESUME (22.05 clears it): the leftover max_drained must not count.
show resumed
listing resumed

sc update NodeName=n1 State=DRAIN Reason=maintenance
settle; show drained-admin
resume

job=$(run_job)
show allocated
sc update NodeName=n1 State=DRAIN "Reason=nodecheck: gres_devices: /dev/nvidia5: missing"
settle; show draining
scancel "$job"
wait_state n1 drain
resume

# With ReturnToService=2 slurmctld brings a DOWN node back within a second of hearing from its
# slurmd (the health check): set DOWN and capture at once, again until the capture shows it.
# A drain on it stays.
sc update NodeName=n1 State=DRAIN "Reason=nodecheck: gpu_count: 7 of 8 GPUs"
for _ in $(seq 20); do
  sc update NodeName=n1 State=DOWN "Reason=power cycle; ticket #4711 = open"
  show down-drain
  grep -q ' State=DOWN+DRAIN' "$out/show-node-down-drain.txt" && break
done
resume
wait_state n1 idle
for _ in $(seq 20); do
  sc update NodeName=n1 State=DOWN "Reason=power cycle; ticket #4711 = open"
  show down
  grep -q ' State=DOWN ' "$out/show-node-down.txt" && break
done
wait_state n1 idle

sc update NodeName=n1 State=FAIL "Reason=fail test"
settle; show fail
resume

sc update NodeName=n1 State=FUTURE
until_state n1 FUTURE
show future
# Back from FUTURE, slurmctld waits for slurmd to register again: NOT_RESPONDING for a while.
sc update NodeName=n1 State=RESUME
sleep 0.2; show not-responding
wait_state n1 idle

sc create reservation ReservationName=nodecheck-maint Nodes=n1 StartTime=now Duration=10 Users=root Flags=MAINT >/dev/null
until_state n1 MAINTENANCE
show maintenance
sc delete ReservationName=nodecheck-maint
sc create reservation ReservationName=nodecheck-res Nodes=n1 StartTime=now Duration=10 Users=root >/dev/null
until_state n1 RESERVED
show reserved
sc delete ReservationName=nodecheck-res
settle

# Reboots and power saving need slurm.conf settings the test bed does not make.
cp "$SLURM_CONF" "$SLURM_CONF.capture-orig"
printf '%s\n' RebootProgram=/bin/true ResumeTimeout=600 SuspendProgram=/bin/true ResumeProgram=/bin/true \
  SuspendTime=3600 SuspendTimeout=5 >>"$SLURM_CONF"
sc reconfigure
sleep 1
job=$(run_job)
sc reboot n1
settle; show reboot-requested
sc cancel_reboot n1
scancel "$job"
wait_state n1 idle
sc reboot n1
until_state n1 REBOOT_ISSUED
show reboot-issued
resume
wait_state n1 idle
sc update NodeName=n2 State=POWER_DOWN
settle
sc show node -o --future n2 >"$out/show-node-n2-power-down.txt"
until_state n2 POWERED_DOWN || sleep 20 # SuspendTimeout=5, but 24.11 took longer
until_state n2 POWERED_DOWN
sc show node -o --future n2 >"$out/show-node-n2-powered-down.txt"
if $json; then sc --json show node --future n2 >"$out/show-node-n2-powered-down.json"; fi
cp "$SLURM_CONF.capture-orig" "$SLURM_CONF"
rm "$SLURM_CONF.capture-orig"

sc show node -o --future n9 >"$out/show-node-unknown.txt" 2>&1 || true
if $json; then
  sc --json show node --future n9 >"$out/show-node-unknown.json" 2>&1 || true
else
  sc --json show node n1 >"$out/json-unsupported.txt" 2>&1 || true
fi
echo "capture.sh: $out written; n2 is powered down: stop the test bed" >&2
