#!/bin/sh
# regen.sh: rebuilds the single-fault H100 snapshots from h100-healthy.
#
# Each h100-* snapshot other than h100-healthy is a copy of h100-healthy with exactly ONE change,
# so that each one tests exactly one thing. This script is the only place those changes are
# written down as code; run it after any edit to h100-healthy (its SOURCE included) and commit
# the result. It needs only POSIX sh, cp, sed and mv, and reads nothing outside this directory.
#
# The base snapshots (h100-healthy, a100-healthy, cpu-node-no-gpu-no-ib) are not generated
# here: they were assembled once from the public captures named in their SOURCE files.
#
# Values written here are sysfs strings in the kernel's own format (drivers/infiniband/core/sysfs.c:
# state "%d: %s\n", phys_state "%u: %s\n", rate "%d%s Gb/sec (%dX%s)\n"), hence the trailing
# newline, unlike the gpud-copied files around them, which have none. Readers must accept both.
set -eu
cd "$(dirname "$0")"

base=h100-healthy
[ -f "$base/meta.json" ] || { echo "regen.sh: $base/meta.json not found" >&2; exit 1; }

# new NAME: fresh copy of the base (symlinks kept as symlinks).
new() {
	rm -rf "$1"
	cp -R -P "$base" "$1"
}

# source NAME TEXT: SOURCE = what changed, then the base's SOURCE.
source_note() {
	{
		printf '%s: a copy of %s with ONE change (made by regen.sh)\n\n' "$1" "$base"
		printf '%s\n\n' "$2"
		printf 'Everything else is byte-identical to %s; its SOURCE follows.\n\n' "$base"
		printf '%s\n\n' '------------------------------------------------------------------------------'
		cat "$base/SOURCE"
	} >"$1/SOURCE.tmp"
	mv "$1/SOURCE.tmp" "$1/SOURCE"
}

# put FILE CONTENT: write CONTENT plus a newline, like the kernel.
put() {
	printf '%s\n' "$2" >"$1"
}

# devline NAME PATH JSON: replace the devices.json line of PATH by JSON.
devline() {
	f="$1/devices.json"
	grep -q "^{\"path\": \"$2\"," "$f" || { echo "regen.sh: $2 not in $f" >&2; exit 1; }
	sed "s|^{\"path\": \"$2\",.*}\(,\{0,1\}\)\$|$3\1|" "$f" >"$f.tmp"
	mv "$f.tmp" "$f"
}

ib=fs/sys/class/infiniband

# --- one NDR port administratively down -------------------------------------------------
n=h100-ib-port-down
new $n
put $n/$ib/mlx5_5/ports/1/state '1: DOWN'
put $n/$ib/mlx5_5/ports/1/phys_state '3: Disabled'
put $n/$ib/mlx5_5/ports/1/rate '40 Gb/sec (4X QDR)'
source_note $n "Change: port mlx5_5/1 is down and disabled: state \"1: DOWN\", phys_state \"3: Disabled\",
rate \"40 Gb/sec (4X QDR)\" (written with the kernel's trailing newline).
Values: the down ports of a real H100 node as ibstat printed them (\"State: Down\",
\"Physical state: Disabled\", \"Rate: 40\"), leptonai/gpud
pkg/nvidia-query/infiniband/testdata/ibstat.47.0.h100.some.down.0
@ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd (corpus: ib/gpud-ibstat-h100-some-down-0.txt, CAs
mlx5_2, mlx5_7, mlx5_8). Note: in that capture the down ports are Ethernet ports of ConnectX-6 Dx
cards (MT4125); here the values are put on an InfiniBand NDR port (link_layer stays InfiniBand).
Mapped to the sysfs strings the kernel prints for those states (torvalds/linux
drivers/infiniband/core/sysfs.c @ 0147ebcf8927f09e1923114092f6b14c1de75a95: state_show
\"%d: %s\" with DOWN=1, phys_state_show \"3: Disabled\", rate_show \"%d%s Gb/sec (%dX%s)\");
ibstat's \"Rate: 40\" is the number part of sysfs rate, and \"40 Gb/sec (4X QDR)\" is the string
a 4X QDR rate gives (the same string appears in corpus ib/gpud-ibstatus-a100-hdr-all-active.txt
and ib/procfs-sysfs-class-infiniband/mlx4_0).
Expected: ib_ports fails naming mlx5_5/1 (DOWN, Disabled, 40 Gb/s); every other check as in h100-healthy."

# --- one NDR port down, polling (cable or peer problem) -------------------------------------
n=h100-ib-port-polling
new $n
put $n/$ib/mlx5_7/ports/1/state '1: DOWN'
put $n/$ib/mlx5_7/ports/1/phys_state '2: Polling'
put $n/$ib/mlx5_7/ports/1/rate '40 Gb/sec (4X QDR)'
source_note $n "Change: port mlx5_7/1 is down and polling: state \"1: DOWN\", phys_state \"2: Polling\",
rate \"40 Gb/sec (4X QDR)\" (written with the kernel's trailing newline). Polling means the port is
enabled and looking for a peer: typically a bad or unplugged cable or a dead switch port.
Values: CA mlx5_11 of a real H100 node (\"State: Down\", \"Physical state: Polling\", \"Rate: 40\"),
leptonai/gpud pkg/nvidia-query/infiniband/testdata/ibstat.47.0.h100.some.down.with.polling.1
@ 6adcdadb132e058ae2d196a1351802604d68de2b (corpus: ib/gpud-ibstat-h100-down-polling-disabled.txt).
That port is a ConnectX-7 (MT4129) in Ethernet mode; here the values are put on an InfiniBand NDR
port. Mapped to sysfs strings as for h100-ib-port-down (kernel sysfs.c: \"2: Polling\").
Expected: ib_ports fails naming mlx5_7/1 (DOWN, Polling); every other check as in h100-healthy."

# --- one NDR port trained at HDR speed ----------------------------------------------------
n=h100-ib-slow-rate
new $n
put $n/$ib/mlx5_4/ports/1/rate '200 Gb/sec (4X HDR)'
source_note $n "Change: port mlx5_4/1 is ACTIVE/LinkUp but its rate is \"200 Gb/sec (4X HDR)\" (written with the
kernel's trailing newline): an NDR port that trained at HDR speed (HDR cable or switch port, or a
degraded link). The policy asks for min_rate_gbps = 400.
Value: the sysfs rate string of an HDR port exactly as ibstatus prints it (ibstatus reads sysfs),
leptonai/gpud pkg/nvidia-query/infiniband/testdata/ibstatus.39.0.a100.all.active.0
@ f9cb01c692fc4ee9ea844f96f80c873c15257fbc (corpus: ib/gpud-ibstatus-a100-hdr-all-active.txt).
Expected: ib_ports fails naming mlx5_4/1 (200 Gb/s, expected at least 400); every other check as in h100-healthy."

# --- one HCA gone -------------------------------------------------------------------------
n=h100-ib-port-missing
new $n
rm -r $n/$ib/mlx5_8
source_note $n "Change: the directory fs/sys/class/infiniband/mlx5_8 is removed: the node shows 7 InfiniBand
ports (plus the excluded Ethernet bond) where the policy expects 8 (an HCA that fell off the bus,
a driver that failed to probe it, or a firmware hang).
Expected: ib_ports fails: 7 of 8 expected InfiniBand ports present; every other check as in h100-healthy."

# --- a GPU device file missing ---------------------------------------------------------------
n=h100-dev-missing
new $n
devline $n /dev/nvidia5 '{"path": "/dev/nvidia5", "missing": true}'
source_note $n "Change: devices.json records /dev/nvidia5 as {\"path\": \"/dev/nvidia5\", \"missing\": true}
(deleted by hand, or never created because nvidia-modprobe/udev did not run). NVML and the PCI bus
still show 8 GPUs: only the device file is gone.
Expected: gres_devices fails: /dev/nvidia5 (gres.conf gpu, File=/dev/nvidia[4-7]) missing; every other check as in h100-healthy."

# --- a GPU device file with the wrong minor -------------------------------------------------
n=h100-dev-wrong-minor
new $n
devline $n /dev/nvidia3 '{"path": "/dev/nvidia3", "type": "char", "major": 195, "minor": 4}'
source_note $n "Change: devices.json records /dev/nvidia3 as char 195:4 instead of 195:3 (a mknod typo, e.g.
\"mknod /dev/nvidia3 c 195 4\"): jobs given GPU 3 would really open GPU 4.
Expected: gres_devices fails: /dev/nvidia3 is 195:4, expected 195:3; every other check as in h100-healthy."

# --- a regular file where a device should be -----------------------------------------------
n=h100-dev-regular-file
new $n
devline $n /dev/nvidia2 '{"path": "/dev/nvidia2", "type": "file"}'
source_note $n "Change: devices.json records /dev/nvidia2 as {\"path\": \"/dev/nvidia2\", \"type\": \"file\"}: a regular
file where the character device should be (what \"touch /dev/nvidia2\", a copy with cp, or a container
bind-mount mistake leaves behind).
Expected: gres_devices fails: /dev/nvidia2 is a regular file, not a character device; every other check as in h100-healthy."

# --- InfiniBand sysfs reads hang -------------------------------------------------------------
n=h100-ib-hang
new $n
cat >$n/meta.json <<'EOF'
{
  "format": 1,
  "hostname": "gpu-h100-01",
  "node_name": "gpu-h100-01",
  "taken_at": "2000-01-01T00:00:00Z",
  "nodecheck_version": "fixture",
  "delay_ms": {
    "/sys/class/infiniband": 60000
  }
}
EOF
source_note $n "Change: meta.json carries \"delay_ms\": {\"/sys/class/infiniband\": 60000}, the snapshot format's way to
make replay stall: every read under that path prefix waits 60 s before answering, as a sysfs read
does when a wedged HCA firmware command blocks the driver. The data itself is healthy.
Expected: ib_ports fails on its own timeout (default 2 s; a timeout is a fail), well before 60 s; the
run as a whole still ends within its budget and every other check is as in h100-healthy."

echo "regen.sh: rebuilt 8 snapshots from $base"
