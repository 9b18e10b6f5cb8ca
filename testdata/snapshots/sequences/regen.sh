#!/bin/sh
# sequences/regen.sh: builds the snapshot sequences, each a few snapshots of ONE node taken
# one after another, from ../h100-healthy. Replayed in order into one --state-dir they show
# what nodecheck judges over time (the node's history): an XID counted once, a sticky XID that
# a reboot ends, an application XID that fails only when it repeats, a correctable-ECC rate,
# an IB port that flaps. cmd/nodecheck/sequence_test.go replays them through the binary.
#
# Every step is a copy of h100-healthy with the changes written below: meta.json's taken_at
# (the run's time), fs/proc/sys/kernel/random/boot_id and fs/proc/uptime (the boot), the
# kernel log (commands.json: /usr/bin/dmesg --kernel --nopager), nvml.json's counters and the
# IB ports' state. All those values are INVENTED for the sequences, except the XID lines'
# text, which is copied from the public captures named in each step's SOURCE (their kernel
# times are invented: the captures carry wall times). Run this after any edit to h100-healthy
# and commit the result. POSIX sh, cp, sed, awk, mkdir, rm, mv.
set -eu
cd "$(dirname "$0")"

base=../h100-healthy
[ -f "$base/meta.json" ] || { echo "regen.sh: $base/meta.json not found" >&2; exit 1; }

# The boots: h100-healthy's, and the one after a reboot (invented).
B1=6d0c3e8a-3f5b-4a0e-9d7c-2b1f5e4a9c01
B2=c41f7a92-0b6e-4d3a-8e15-7f2a9b3c6d48

ib=fs/sys/class/infiniband

# step DIR TAKEN_AT BOOT_ID UPTIME: a fresh copy of the base taken at TAKEN_AT, UPTIME seconds
# into boot BOOT_ID.
step() {
	rm -rf "$1"
	mkdir -p "$(dirname "$1")"
	cp -R -P "$base" "$1"
	rm -f "$1/SOURCE"
	cat >"$1/meta.json" <<EOF
{
  "format": 1,
  "hostname": "gpu-h100-01",
  "node_name": "gpu-h100-01",
  "taken_at": "$2",
  "nodecheck_version": "fixture"
}
EOF
	printf '%s\n' "$3" >"$1/fs/proc/sys/kernel/random/boot_id"
	printf '%s 0.00\n' "$4" >"$1/fs/proc/uptime"
}

# dmesg DIR: commands.json gets, after the base's commands, /usr/bin/dmesg --kernel --nopager
# printing the lines on stdin (JSON-escaped, one "\n" after each).
dmesg() {
	out=$(sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | awk '{ printf "%s\\n", $0 }')
	# The base's array without its closing bracket, then the dmesg entry.
	sed '$d' "$base/commands.json" | sed '$s/}$/},/' >"$1/commands.json"
	cat >>"$1/commands.json" <<EOF
  {
    "argv": [
      "/usr/bin/dmesg",
      "--kernel",
      "--nopager"
    ],
    "stdout": "$out",
    "stderr": "",
    "exit_code": 0,
    "duration_ms": 4
  }
]
EOF
}

# ecc DIR N VALUE: the volatile correctable ECC count of the N-th GPU in nvml.json (1-based).
ecc() {
	awk -v n="$2" -v v="$3" '/"volatile_corrected":/ { c++; if (c == n) sub(/: [0-9]+/, ": " v) } { print }' \
		"$1/nvml.json" >"$1/nvml.json.tmp"
	mv "$1/nvml.json.tmp" "$1/nvml.json"
}

# source DIR TEXT: the step's SOURCE: what it is, then the base's SOURCE.
source_note() {
	{
		printf '%s: a step of a snapshot sequence, a copy of h100-healthy made by sequences/regen.sh\n\n' "$1"
		printf '%s\n\n' "$2"
		printf 'INVENTED for the sequence: taken_at, the boot id, the uptime, the kernel times of the dmesg\n'
		printf 'lines and any counter or port state named above. Everything else is h100-healthy'"'"'s;\n'
		printf 'its SOURCE follows.\n\n'
		printf '%s\n\n' '------------------------------------------------------------------------------'
		cat "$base/SOURCE"
	} >"$1/SOURCE"
}

# The XID lines' text, from public captures (bus ids as in the captures where they are GPUs of
# h100-healthy, else moved to one and said so).
# gpud PR #46 (https://github.com/leptonai/gpud/pull/46), bus cb = h100-healthy's GPU 6:
xid13="NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"
# leptonai/gpud pkg/poller/log/tail/testdata/dmesg.0.log @ b6884430b4d5e484befcd851ca31e5882ad24ac9,
# bus 19 = h100-healthy's GPU 0:
xid48="NVRM: Xid (PCI:0000:19:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x12bac1c3e0 partition 2, subpartition 1."
# akash-network/support#244 (https://github.com/akash-network/support/issues/244, an H100 node),
# bus 0000:00:07 there, moved to 0000:3b:00 (h100-healthy's GPU 1):
xid31="NVRM: Xid (PCI:0000:3b:00): 31, pid=2512125, name=python3.10, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE"

# --- an XID counted once over three runs ---------------------------------------------------
# Boot B1 began 2024-08-01T00:00:00Z. XID 13 on GPU 6 at 09:00 (kernel time 32400 s); the runs
# at 10:00, 11:00 and 12:00 see the same line. It counts once: one burst of XID 13 on GPC 7/TPC 7,
# below the repeat rule's 2, so each run warns and none fails.
s=xid-counted-once
for i in 1 2 3; do
	d=$s/$i
	step $d "$(printf '2024-08-01T%02d:00:00Z' $((9 + i)))" $B1 $((32400 + i * 3600)).00
	printf '[32400.123456] %s\n' "$xid13" | dmesg $d
	source_note $d "Run $i of 3 at $((9 + i)):00, boot $B1 (began 2024-08-01T00:00:00Z). The kernel log holds one XID 13
line at kernel time 32400.123456 s (09:00): $xid13
(text from https://github.com/leptonai/gpud/pull/46; its bus cb is this node's GPU 6).
Expected with one --state-dir: xid_errors warns at every run (one burst, counted once); never fails."
done

# --- a sticky reset-class XID that a reboot ends -------------------------------------------
# XID 48 (double-bit ECC: the catalog's RESET_GPU) on GPU 0 at 09:30; at 11:00 the kernel log no
# longer shows it (dmesg --clear); at 12:00 the node has rebooted (boot B2, up 30 min).
s=xid-sticky-reboot
d=$s/1
step $d 2024-08-01T10:00:00Z $B1 36000.00
printf '[34200.654321] %s\n' "$xid48" | dmesg $d
source_note $d "Run 1 of 3 at 10:00, boot $B1. The kernel log holds XID 48 at kernel time 34200.654321 s (09:30):
$xid48
(text from leptonai/gpud pkg/poller/log/tail/testdata/dmesg.0.log @ b6884430b4d5e484befcd851ca31e5882ad24ac9;
its bus 19 is this node's GPU 0). Expected: xid_errors fails (a reset-class XID in force)."
d=$s/2
step $d 2024-08-01T11:00:00Z $B1 39600.00
printf '[39000.000001] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing\n' | dmesg $d
source_note $d "Run 2 of 3 at 11:00, the same boot. The kernel log was cleared since (dmesg --clear): it holds one
unrelated line (the nvidia-peermem line of the same gpud capture). Expected with the history: xid_errors still
fails (XID 48 sticks until a GPU reset, a reboot or a clear); replayed alone it passes."
d=$s/3
step $d 2024-08-01T12:00:00Z $B2 1800.00
printf '[   12.345678] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing\n' | dmesg $d
source_note $d "Run 3 of 3 at 12:00 after a reboot: boot $B2, up 1800 s. The kernel log holds no XID.
Expected: xid_errors passes (the reboot ended XID 48; nodecheck history says so)."

# --- application XIDs fail only when they repeat -------------------------------------------
# XID 31 (memory page fault: RESTART_APP) on GPU 1 at 08:20; the run at 09:00 warns. By 11:00 it
# came back at 10:00: two bursts within 24 h, which NVSentinel's rule fails.
s=xid-app-repeat
d=$s/1
step $d 2024-08-01T09:00:00Z $B1 32400.00
printf '[30000.500000] %s\n' "$xid31" | dmesg $d
source_note $d "Run 1 of 2 at 09:00, boot $B1. The kernel log holds one XID 31 at kernel time 30000.5 s (08:20):
$xid31
(text from https://github.com/akash-network/support/issues/244, an H100 node; its bus 0000:00:07 moved to this
node's GPU 1, 0000:3b:00). Expected: xid_errors warns (an application XID, once)."
d=$s/2
step $d 2024-08-01T11:00:00Z $B1 39600.00
printf '[30000.500000] %s\n[36000.250000] %s\n' "$xid31" "$xid31" | dmesg $d
source_note $d "Run 2 of 2 at 11:00, the same boot. The kernel log holds the XID 31 of run 1 and the same line again at
36000.25 s (10:00; the capture's text repeated). Expected: xid_errors fails (XID 31 twice on one GPU
within 24 h, NVSentinel RepeatedXID31OnSameGPU)."

# --- a correctable-ECC rate: an hour apart fails, a week apart does not ----------------------
# GPU 2's volatile correctable ECC count goes from 0 to 16,729,200: NVSentinel #1748's degraded
# GPU at 4,647 errors/s for an hour.
for s in ecc-rate-hour ecc-rate-week; do
	d=$s/1
	step $d 2024-08-01T10:00:00Z $B1 36000.00
	source_note $d "Run 1 of 2 at 10:00, boot $B1: every GPU's volatile correctable ECC count is 0 (as h100-healthy).
Expected: gpu_error_rates has no rate yet (one reading); the run is healthy."
done
d=ecc-rate-hour/2
step $d 2024-08-01T11:00:00Z $B1 39600.00
ecc $d 3 16729200
source_note $d "Run 2 of 2 an hour later (11:00), the same boot: GPU 2 (0000:4c:00.0) volatile_corrected 16729200 in nvml.json,
4,647/s for an hour (the rate NVSentinel #1748 reports of a degraded GPU under load).
Expected: gpu_error_rates fails (16,729,200/h, over the 3,600,000/h fail rate)."
d=ecc-rate-week/2
step $d 2024-08-08T10:00:00Z $B1 640800.00
ecc $d 3 16729200
source_note $d "Run 2 of 2 a week later (2024-08-08T10:00), the same boot (up 7 days 10 h): GPU 2 (0000:4c:00.0)
volatile_corrected 16729200, the same increase as ecc-rate-hour over 168 h: 99,579/h.
Expected: gpu_error_rates warns (over the 6,000/h warn rate), does not fail."

# --- an IB port that flaps ------------------------------------------------------------------
# mlx5_4/1 is ACTIVE at 10:00, DOWN/Polling at 10:20 (ib_ports fails that run), ACTIVE again
# at 10:40: its link went down once within 3 h, which ib_flaps reports after the port is back.
s=ib-flap
for i in 1 2 3; do
	d=$s/$i
	step $d "$(printf '2024-08-01T10:%02d:00Z' $(((i - 1) * 20)))" $B1 $((36000 + (i - 1) * 1200)).00
done
d=$s/1
source_note $d "Run 1 of 3 at 10:00, boot $B1: every port ACTIVE/LinkUp (as h100-healthy). Expected: healthy."
d=$s/2
printf '1: DOWN\n' >$d/$ib/mlx5_4/ports/1/state
printf '2: Polling\n' >$d/$ib/mlx5_4/ports/1/phys_state
source_note $d "Run 2 of 3 at 10:20, the same boot: port mlx5_4/1 state \"1: DOWN\", phys_state \"2: Polling\" (as
h100-ib-port-polling; a bad cable or a peer gone). Expected: ib_ports fails; ib_flaps warns (one link down)."
d=$s/3
source_note $d "Run 3 of 3 at 10:40, the same boot: mlx5_4/1 ACTIVE/LinkUp again (as h100-healthy). Expected: ib_ports
passes; ib_flaps warns that mlx5_4/1's link went down once within 3 h (with fail_at = 1 in
[checks.ib_flaps], it fails)."

echo "regen.sh: rebuilt the sequences xid-counted-once, xid-sticky-reboot, xid-app-repeat, ecc-rate-hour, ecc-rate-week, ib-flap"
