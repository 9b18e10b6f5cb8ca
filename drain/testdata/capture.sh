#!/usr/bin/env bash
# capture.sh: records real scontrol and sinfo output from the test bed into slurm-VERSION/, the
# inputs of the parser tests. Run as root on a machine where the test bed can start:
#
#   sudo scripts/slurm-testbed.sh start && eval "$(scripts/slurm-testbed.sh env)"
#   sudo -E drain/testdata/capture.sh
#
# Each file is exactly what the command printed (stdout, then stderr for the failing ones);
# node n1 is put through each state and resumed at the end.
set -euo pipefail
cd "$(dirname "$0")"
: "${SLURM_CONF:?set SLURM_CONF to the test bed (scripts/slurm-testbed.sh env)}"
ver=$(scontrol --version | awk '{print $2}')
out=slurm-${ver%.*}
mkdir -p "$out"
sc() { scontrol "$@"; }
show() { sc show node -o n1 >"$out/$1.txt"; }
settle() { sleep 0.5; }
resume() { sc update NodeName=n1 State=RESUME 2>/dev/null || true; settle; }

scontrol --version >"$out/version.txt"
resume
show show-node-idle
sc update NodeName=n1 State=DRAIN "Reason=nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE"
settle; show show-node-drained-nodecheck
sinfo -h -N -o '%N|%E' >"$out/sinfo-reasons.txt"
sinfo --json >"$out/sinfo.json"
resume
sc update NodeName=n1 State=DRAIN Reason=maintenance
settle; show show-node-drained-admin
resume
job=$(sbatch --parsable -w n1 -o /dev/null --wrap '/bin/sleep 30')
for _ in $(seq 50); do [ "$(squeue -h -j "$job" -o %t)" = R ] && break; sleep 0.2; done
show show-node-allocated
sc update NodeName=n1 State=DRAIN "Reason=nodecheck: gres_devices: /dev/nvidia5: missing"
settle; show show-node-draining
scancel "$job"; settle; settle
resume
sc update NodeName=n1 State=DOWN "Reason=power cycle; ticket #4711 = open"
settle; show show-node-down
resume
sc show node -o n9 >"$out/show-node-unknown.txt" 2>&1 || true
sc --json show node n1 >"$out/json-unsupported.txt" 2>&1 || true
