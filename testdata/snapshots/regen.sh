#!/bin/sh
# regen.sh: rebuilds the single-fault snapshots from h100-healthy (and a100-nvlink-all-inactive
# from a100-healthy).
#
# Each h100-* snapshot other than h100-healthy is a copy of h100-healthy with exactly ONE change,
# so that each one tests exactly one thing. This script is the only place those changes are
# written down as code; run it after any edit to h100-healthy (its SOURCE included) and commit
# the result. It needs only POSIX sh, cp, sed, cmp, grep and mv, and reads nothing outside
# this directory.
#
# The base snapshots (h100-healthy, a100-healthy, cpu-node-no-gpu-no-ib) are not generated
# here: they were assembled once from the public captures named in their SOURCE files. The one
# exception is h100-healthy's CPU topology (fs/sys/devices/system), which is derived, not
# captured, and written by base_topology below (see h100-healthy/SOURCE).
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

# edit NAME FILE SED-SCRIPT: run sed on NAME/FILE (through a temporary file: sed -i is not
# POSIX) and fail when the script changed nothing, so that a base that moved on cannot leave
# a variant silently identical to it.
edit() {
	f="$1/$2"
	sed "$3" "$f" >"$f.tmp"
	if cmp -s "$f" "$f.tmp"; then
		rm -f "$f.tmp"
		echo "regen.sh: the edit of $f changed nothing" >&2
		exit 1
	fi
	mv "$f.tmp" "$f"
}

ib=fs/sys/class/infiniband
pci=fs/sys/bus/pci/devices

# --- h100-healthy's CPU and NUMA topology (derived, not captured) ---------------------------------
# base_topology DIR writes the files gres_affinity reads to number cores as Slurm does, as
# `nodecheck snapshot` records them (only the files read: the lowest CPU of each core): 2 sockets
# of 56 cores with 2 threads each, CPUs 0-55 the first threads of socket 0, 56-111 of socket 1,
# 112-167 and 168-223 their second threads; NUMA node 0 = socket 0, node 1 = socket 1. The
# layout is that of slurm.conf's NodeName line and of the real `nvidia-smi topo -m` of a 224-CPU
# two-socket 8-GPU node (corpus gpu-topo/gogpuallocator-17-rtx4090x8-sys-2numa.txt: "CPU Affinity
# 0-55,112-167, NUMA 0" for GPU0-3, "56-111,168-223, NUMA 1" for GPU4-7); see h100-healthy/SOURCE.
base_topology() {
	sys=$1/fs/sys/devices/system
	rm -rf "$sys"
	mkdir -p "$sys/node/node0" "$sys/node/node1" "$sys/cpu"
	put "$sys/node/online" '0-1'
	put "$sys/node/node0/cpulist" '0-55,112-167'
	put "$sys/node/node1/cpulist" '56-111,168-223'
	put "$sys/cpu/online" '0-223'
	c=0
	while [ $c -lt 112 ]; do
		t="$sys/cpu/cpu$c/topology"
		mkdir -p "$t"
		if [ $c -lt 56 ]; then put "$t/physical_package_id" 0; else put "$t/physical_package_id" 1; fi
		put "$t/core_cpus_list" "$c,$((c + 112))"
		c=$((c + 1))
	done
}
base_topology h100-healthy

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
  "taken_at": "2024-07-31T11:30:00Z",
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

# --- a GPU lost: NVML cannot open it, the PCI bus still lists it -----------------------------
n=h100-gpu-lost
new $n
# Device 4 keeps only its index and the error: with ERROR_GPU_IS_LOST NVML hands out no
# handle, so nothing else about the GPU (bus id, name, UUID) can be read.
edit $n nvml.json '/^      "index": 4,$/,/^    },$/{
/^      "index": 4,$/{
p
s/.*/      "error": "ERROR_GPU_IS_LOST"/
}
/^      "error"/b
/^    },$/b
d
}'
source_note $n "Change: in nvml.json device 4 (bus 00000000:9B:00.0) is reduced to {\"index\": 4, \"error\": \"ERROR_GPU_IS_LOST\"};
device_count stays 8. This is what NVML gives for a GPU that fell off the bus (XID 79): nvmlDeviceGetCount
still counts it, nvmlDeviceGetHandleByIndex(4) returns NVML_ERROR_GPU_IS_LOST, and without a handle neither
its bus id nor its name can be read (nvidia-smi prints \"Unable to determine the device handle for GPU
0000:9B:00.0: GPU is lost\"). The PCI function 0000:9b:00.0 stays in sysfs with its cached vendor and class,
and /dev/nvidia4 stays in devices.json. Written for the fixture; the corpus has no capture of a lost GPU.
Expected: gpu_count fails: 7/8 GPUs in NVML, 8 on PCI, naming 0000:9b:00.0 and gpu 4 ERROR_GPU_IS_LOST;
pcie_link judges that GPU from sysfs (x16, ok); fabric_manager counts 7 GPUs with fabric state (the lost
one is gpu_count's); every other check as in h100-healthy."

# --- slurm.conf promises a ninth GPU -----------------------------------------------------------
n=h100-gres-count-high
new $n
edit $n fs/etc/slurm/slurm.conf 's/^\(NodeName=gpu-h100-\[01-16\] .*\)Gres=gpu:h100:8 /\1Gres=gpu:h100:9 /'
source_note $n "Change: fs/etc/slurm/slurm.conf gives the H100 nodes Gres=gpu:h100:9 instead of gpu:h100:8 (a typo, or a
NodeName range copied from another rack); gres.conf still lists 8 files (/dev/nvidia[0-7]), NVML and the PCI
bus still show 8 GPUs. slurmd would register 8 and slurmctld would drain the node for the count below
its configuration; nodecheck says why first.
Expected: gpu_count fails: slurm.conf expects 9 GPUs (Gres=gpu:h100:9), NVML and PCI show 8; gres_devices
is ok (gres.conf is unchanged); every other check as in h100-healthy."

# --- one GPU's PCIe link trained at x8 ---------------------------------------------------------
n=h100-pcie-x8
new $n
put $n/$pci/0000:5d:00.0/current_link_width '8'
edit $n nvml.json '/^      "index": 3,$/,/^    },$/s/"curr_link_width": 16,/"curr_link_width": 8,/'
source_note $n "Change: GPU 3 (0000:5d:00.0) runs its PCIe link at x8 of x16: sysfs current_link_width \"8\" (written with the
kernel's trailing newline, through the bus/pci/devices symlink) and nvml.json curr_link_width 8 for device 3;
max_link_width stays 16 and the speed stays Gen5 (32 GT/s): a link that loses lanes keeps its speed.
The value is written for the fixture; real links downgraded the same way are in the corpus:
pcie/gpud-lspci-vvv-h100x8-node.txt (leptonai/gpud pkg/pci/testdata/lspci-vvv
@ 64926e615a0f333575d1cab5209a52bf46c5e566) shows \"LnkCap: ... Width x16\" with \"LnkSta: ... Width x2
(downgraded)\" on 80:01.0 and 81:00.1 of the same H100 node, and pcie/procfs-sysfs-devices-pci/
(prometheus/procfs testdata @ 3c943fdba94a978d990553698da4add62bb11a30) has sysfs current_link_width 8
under max_link_width 16 (0000:00:03.0) and 4 under 8 (0000:00:02.1).
Expected: pcie_link fails: gpu 3 (0000:5d:00.0) PCIe x8, expected x16; every other check as in h100-healthy."

# --- Fabric Manager older than the driver --------------------------------------------------------
n=h100-fm-version-mismatch
new $n
edit $n commands.json 's/Fabric Manager version is : 535\.161\.08/Fabric Manager version is : 535.154.05/'
source_note $n "Change: in commands.json \`/usr/bin/nv-fabricmanager --version\` prints version 535.154.05 instead of 535.161.08,
in the same layout (blank lines, TAB). The output is written for the fixture: the driver was upgraded to
535.161.08 and nvidia-fabricmanager was not. 535.154.05 is a real driver release of the same branch (the
driver of corpus nvsmi/gpud-q-rtx4090x8-535.154.05.txt). Fabric Manager refuses to run against another
driver version, and CUDA then fails with error 802 (\"system not yet initialized\").
Expected: fabric_manager fails: driver 535.161.08 but Fabric Manager 535.154.05, with the fix (install the
driver's version and restart it); every other check as in h100-healthy."

# --- Fabric Manager service stopped --------------------------------------------------------------
n=h100-fm-down
new $n
edit $n commands.json '/"is-active",/,/"exit_code"/{
s/"stdout": "active\\n"/"stdout": "inactive\\n"/
s/"exit_code": 0/"exit_code": 3/
}'
source_note $n "Change: in commands.json \`/usr/bin/systemctl is-active nvidia-fabricmanager\` prints \"inactive\" and exits 3,
what systemctl does for a unit that is not running (systemctl(1), is-active: exit code 0 if at least
one unit is active, non-zero otherwise; 3 is the LSB code for \"program is not running\").
Written for the fixture. NVML still reports the fabric COMPLETED: registration outlives the daemon
until the GPUs are reset, and new CUDA jobs still fail.
Expected: fabric_manager fails: nvidia-fabricmanager service inactive, want active; every other check as in h100-healthy."

# --- one GPU's fabric registration stuck ----------------------------------------------------------
n=h100-fabric-in-progress
new $n
edit $n nvml.json '/^      "index": 5,$/,/^    },$/{
s/"state": "COMPLETED"/"state": "IN_PROGRESS"/
s/"status": "SUCCESS"/"status": "N\/A"/
}'
source_note $n "Change: in nvml.json device 5 (00000000:BB:00.0) has fabric {\"state\": \"IN_PROGRESS\", \"status\": \"N/A\"}: its
NVLink fabric registration with Fabric Manager has not finished (FM restarting, a GPU whose NVLinks do not
train, a FABRIC_MODE change). Vocabulary: nvidia-smi -q prints such a GPU as \"Fabric / State : In Progress /
Status : N/A\" (NVIDIA/gpu-operator issue 2511, a 580.159.04 node), which is NVML_GPU_FABRIC_STATE_IN_PROGRESS;
NVML documents the status as valid only once the state is COMPLETED, so nvidia-smi shows N/A and the fixture
keeps that text rather than invent a return code. Written for the fixture.
Expected: fabric_manager fails: fabric not completed on 1 of 8 GPUs: gpu 5 (0000:bb:00.0) IN_PROGRESS;
every other check as in h100-healthy."

# --- NVIDIA driver not loaded ---------------------------------------------------------------------
n=h100-nvml-driver-not-loaded
new $n
cat >$n/nvml.json <<'EOF'
{
  "init": "ERROR_DRIVER_NOT_LOADED"
}
EOF
source_note $n "Change: nvml.json is {\"init\": \"ERROR_DRIVER_NOT_LOADED\"}: nvmlInit finds libnvidia-ml but the kernel module is
not loaded (a kernel update without the matching module, a failed DKMS build, a blacklisted module). With
a failed init NVML reports nothing else. sysfs still lists the 8 GPUs and 4 NVSwitches (the PCI bus does
not need the driver), /dev/nvidia* in devices.json stay (device files outlive the module), and the
commands are unchanged. Written for the fixture; the form is the snapshot format's (docs/snapshots.md).
Expected: gpu_count fails: NVML init: ERROR_DRIVER_NOT_LOADED, slurm.conf expects 8 GPUs; fabric_manager
fails: the driver version cannot be read; pcie_link judges the GPUs from sysfs (ok); every other check as
in h100-healthy."


# --- nccl-tests all_reduce_perf runs -----------------------------------------------------------
# The logs are the real ones of ../../checks/testdata/nccl (see the SOURCE there). Each snapshot
# adds one commands.json entry whose stdout is a log; the recorded argv is the command that
# produced that log (from its "# nThread ... minBytes ... maxBytes" line), which replay matches
# by program name, as nodecheck adds its own -g and sizes.
nccl=../../checks/testdata/nccl

# jsonstr FILE: the file as the body of a JSON string (backslash, quote, tab escaped; newlines \n).
jsonstr() {
	printf '%s\\n' "$(sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/	/\\t/g' "$1" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n/\\n/g')"
}

# addcmd NAME ARGV_JSON STDOUT_FILE EXIT: append a commands.json entry to snapshot NAME.
addcmd() {
	f="$1/commands.json"
	sed '$d' "$f" | sed '$s/}$/},/' >"$f.tmp"
	{
		printf '  {\n    "argv": %s,\n    "stdout": "' "$2"
		jsonstr "$3"
		printf '",\n    "stderr": "",\n    "exit_code": %s\n  }\n]\n' "$4"
	} >>"$f.tmp"
	mv "$f.tmp" "$f"
}

h100log=$nccl/nccltests-290-h100-1node-8gpu-g8.log
h100argv='["/usr/bin/all_reduce_perf", "-b", "128M", "-e", "4G", "-f", "2", "-g", "8"]'
h100src="The log: NVIDIA/nccl-tests issue #290 (issue body, \"Single node\"), byte-exact, as copied into
checks/testdata/nccl/nccltests-290-h100-1node-8gpu-g8.log (corpus: nccl/, see SOURCES.md there): a
real 8x NVIDIA H100 80GB HBM3 single-node run (host node005, not this fixture's node), sizes 128 MiB
to 4 GiB, busbw 465-477 GB/s at 1-4 GiB (NVLS), avg 439.369, no wrong data, Out of bounds 0 OK.
argv: what produced it, read from the log's header (minBytes 134217728, maxBytes 4294967296,
factor 2, nGpus 8). exit_code 0: the log ends with its summary and no failure line. stderr empty,
no duration_ms: the issue shows neither."

n=h100-nccl-ok
new $n
addcmd $n "$h100argv" $h100log 0
source_note $n "Change: commands.json records /usr/bin/all_reduce_perf, stdout = a real nccl-tests log.
$h100src
Expected: nccl_allreduce ok: busbw 476.5 GB/s at 4 GiB, at least 390 (the built-in threshold for
8x H100 80GB HBM3); every other check as in h100-healthy."

n=h100-nccl-low-busbw
new $n
addcmd $n "$h100argv" $h100log 0
cat >>$n/fs/etc/nodecheck/nodecheck.toml <<'EOF'
# A site that holds its H100 nodes to NVIDIA's NVLS figure for 8 GPUs, "a peak busBw of
# ~480GB/s" (NVIDIA/nccl-tests#212), instead of the built-in 390.
[checks.nccl_allreduce]
min_busbw_gbps = 480.0
EOF
source_note $n "Change: commands.json records the same real all_reduce_perf run as h100-nccl-ok, and the
node's policy (fs/etc/nodecheck/nodecheck.toml, written for the fixture) asks for more than it
reached: [checks.nccl_allreduce] min_busbw_gbps = 480 (NVIDIA's quoted NVLS peak for 8 H100,
NVIDIA/nccl-tests#212). The data stays real; only the threshold is raised above it. This is the
recorded run plus one policy line, the pair making the one fault \"busbw below the site's threshold\".
$h100src
Expected: nccl_allreduce fails: busbw 476.5 GB/s at 4 GiB, want at least 480 (min_busbw_gbps);
every other check as in h100-healthy."

n=h100-nccl-wrong
new $n
addcmd $n '["/usr/bin/all_reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "1"]' $nccl/nccltests-369-gh200-2node-wrong-nonzero-failed.log 1
source_note $n "Change: commands.json records /usr/bin/all_reduce_perf, stdout = a real nccl-tests log with
data corruption: NVIDIA/nccl-tests issue #369 (comment by angainor, 2026-01-23), byte-exact, as
copied into checks/testdata/nccl/nccltests-369-gh200-2node-wrong-nonzero-failed.log (corpus: nccl/).
nccl-tests 2.17.8 on 2 NVIDIA GH200 120GB in 2 nodes (gpu-1-1, gpu-1-7: NOT this fixture's 8 H100;
no public single-node H100 log with wrong data exists in the corpus, and the check judges what the
output says): #wrong 96 out of place and 32 in place at 1 MiB, \"# Out of bounds values : 4 FAILED\",
avg 4.79995, then \" .. Test failure common.cu:1189\" trace lines.
argv: read from the log's header (minBytes 8, maxBytes 134217728, factor 2, nGpus 1; the original
ran under MPI, one process per node). exit_code 1: not in the log; the trace lines after the summary
mean main returned an error, and 1 (EXIT_FAILURE) is what nccl-tests exits with on data errors
(src/common.cu). stderr empty, no duration_ms: not in the issue.
Expected: nccl_allreduce fails: data corruption, 96 wrong elements at 1 MiB out of place (+1 more),
out of bounds values 4; every other check as in h100-healthy."

n=h100-nccl-cuda-init-failure
new $n
sed 1d $nccl/nccltests-287-rtx5090-2gpu-failed.log >$n/all_reduce_perf.stdout
addcmd $n '["/usr/bin/all_reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "2"]' $n/all_reduce_perf.stdout 3
rm $n/all_reduce_perf.stdout
source_note $n "Change: commands.json records /usr/bin/all_reduce_perf, stdout = a real failed nccl-tests run:
NVIDIA/nccl-tests issue #287 (issue body, \"2x 5090s\" block), as copied into
checks/testdata/nccl/nccltests-287-rtx5090-2gpu-failed.log (corpus: nccl/), WITHOUT its first line,
which is the reporter's shell prompt and command (\"user@GENOA-06:~/nccl-tests\$ NCCL_P2P_DISABLE=1
./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2\"), not program output; the rest is byte-exact.
2 NVIDIA GeForce RTX 5090 on host GENOA-06 (NOT this fixture's GPUs): the run stops right after the
column header with \"GENOA-06: Test NCCL failure common.cu:392 'unhandled cuda error (run with
NCCL_DEBUG=INFO for details) / '\" and five \" .. Test failure\" trace lines; no rows, no summary.
argv: from that prompt line. exit_code 3: not in the log; NCCLCHECK returns testNcclError (3), which
each TESTCHECK passes up and main returns (NVIDIA/nccl-tests src/common.h, src/common.cu main).
stderr empty, no duration_ms: not in the issue.
Expected: nccl_allreduce fails: all_reduce_perf exit code 3 with the Test NCCL failure line; every
other check as in h100-healthy."
# --- NVML memory errors, NVLink and leftover processes ----------------------------------------------
# nvml.json of h100-healthy is `nodecheck import-nvidia-smi` of a real `nvidia-smi -q` (see its
# SOURCE); each variant below changes one GPU's block of it. The sed ranges run from a device's
# "index" line to the "    }," that closes it (the nested objects close with deeper indents).

# gpu GPU-INDEX: the sed address of device GPU-INDEX's block in nvml.json.
gpu() {
	printf '/^      "index": %s,$/,/^    },$/' "$1"
}

# --- uncorrectable ECC errors since the driver loaded -------------------------------------------
n=h100-ecc-uncorrectable
new $n
edit $n nvml.json "$(gpu 6)"'{
s/"volatile_uncorrected": 0,/"volatile_uncorrected": 1,/
s/"aggregate_uncorrected": 0$/"aggregate_uncorrected": 1/
}'
source_note $n "Change: in nvml.json device 6 (00000000:CB:00.0) has ecc volatile_uncorrected 1 and aggregate_uncorrected 1
(both were 0): one uncorrectable ECC error since the driver loaded, which the lifetime counter counts too.
In nvidia-smi -q terms: \"ECC Errors / Volatile / DRAM Uncorrectable : 1\" (and Aggregate), the HBM3 error
the NVIDIA driver reports as Xid 48 (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/, \"User
Visible Statistics\"). The count is written for the fixture: no capture in the corpus shows a non-zero ECC
counter. On real hardware such an error usually also queues a row remap (h100-remap-pending); here only
the counters change, so that this snapshot tests the ECC counter alone.
Expected: gpu_memory_errors fails: gpu 6 (0000:cb:00.0): 1 uncorrectable ECC error since driver load: reset
the GPU; every other check as in h100-healthy."

# --- row remapping pending ------------------------------------------------------------------------
n=h100-remap-pending
new $n
edit $n nvml.json "$(gpu 1)"'{
s/"uncorrectable": 0,/"uncorrectable": 4,/
s/"pending": false,/"pending": true,/
}'
source_note $n "Change: in nvml.json device 1 (00000000:3B:00.0) has remapped_rows {\"correctable\": 0, \"uncorrectable\": 4,
\"pending\": true, \"failed\": false}: 4 rows were remapped after uncorrectable errors and the remap waits for
a GPU reset to take effect. The values are real, from another GPU: the \"Remapped Rows\" block of the NVIDIA A10 in
leptonai/gpud pkg/nvidia-query/testdata/nvidia-smi-query.535.129.03.out.0.valid.a10
@ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd (corpus: nvsmi/gpud-q-a10-535.129.03.txt, lines 139-143:
\"Correctable Error : 0\", \"Uncorrectable Error : 4\", \"Pending : Yes\", \"Remapping Failure Occurred : No\"),
the case gpud PR #80 quotes as \"this GPU requires a reset to actually remap the rows\". Here they are put
on an H100 (HBM3 remaps rows the same way, NVIDIA GPU Memory Error Management, \"Row Remapping\").
Expected: gpu_memory_errors fails: gpu 1 (0000:3b:00.0): row remapping pending: reset the GPU
(with pending = \"warn\" it warns instead); every other check as in h100-healthy."

# --- row remapping failed -------------------------------------------------------------------------
n=h100-remap-failed
new $n
edit $n nvml.json "$(gpu 7)"'s/"failed": false/"failed": true/'
source_note $n "Change: in nvml.json device 7 (00000000:DB:00.0) has remapped_rows failed true (nvidia-smi -q: \"Remapping
Failure Occurred : Yes\"): a row could not be remapped because its bank had no spare row left. NVIDIA's RMA
policy: the RMA criteria is met when the row-remapping failure flag is set
(https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/rma-policy-thresholds-for-row-remapping.html).
Written for the fixture: no capture in the corpus shows a failed remap. The remapped row counts stay 0 so
that the failure flag is the one change.
Expected: gpu_memory_errors fails: gpu 7 (0000:db:00.0): row remapping failed: replace the GPU; every
other check as in h100-healthy."

# --- one NVLink down ------------------------------------------------------------------------------
n=h100-nvlink-down
new $n
edit $n nvml.json "$(gpu 5)"'{
/"link": 3,$/{
n
s/"active": true/"active": false/
}
}'
source_note $n "Change: in nvml.json link 3 of device 5 (00000000:BB:00.0) is inactive (\"active\": false); its other 17 links
and every other GPU's links stay active. \`nvidia-smi nvlink --status\` shows such a link as \"Link 3: <inactive>\",
as on a real V100 node in Azure/azhpc-diagnostics issue #73 (\"GPU 3: Tesla V100-SXM2-32GB ... Link 3: <inactive>\",
2022-03-23); nodecheck import-nvidia-smi reads that line as active false. The GPU and link are chosen for
the fixture (the H100 NVLinks of h100-healthy are themselves written for the fixture, see below).
Expected: nvlink fails: gpu 5 (0000:bb:00.0): NVLink 3 inactive (17 of its 18 active); every other check
as in h100-healthy (fabric stays COMPLETED: the fabric state does not follow
single links)."

# --- a compute process left on a GPU --------------------------------------------------------------
n=h100-leftover-process
new $n
edit $n nvml.json "$(gpu 2)"'{
s/"used_mib": 0,/"used_mib": 9221,/
s/"processes": \[\]/"processes": [\
          {\
            "pid": 1002127,\
            "used_mib": 9212,\
            "uid": 1001,\
            "user": "alice",\
            "command": "python"\
          }\
        ]/
}'
source_note $n "Change: in nvml.json device 2 (00000000:4C:00.0) runs one compute process, PID 1002127 (command python, user
alice, uid 1001) holding 9212 MiB, and the GPU's memory used is 9221 MiB (it was 0).
PID, memory and command are real, from another H100 node: GPU 2 (00000000:75:00.0) of leptonai/gpud
pkg/nvidia-query/testdata/nvidia-smi-query.535.183.01.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd
(corpus: nvsmi/gpud-q-h100x8-535.183.01.txt, lines 621-627 and that GPU's \"FB Memory Usage / Used : 9221
MiB\"): \"Process ID : 1002127\", \"Type : C\", \"Name : /usr/bin/python\", \"Used GPU Memory : 9212 MiB\";
command is the kernel's comm for /usr/bin/python. The owner (uid 1001, user alice) is INVENTED:
nvidia-smi does not print owners, and a live node reads them from /proc; a plain user's uid is what a
job's leftover has.
Expected: job_leftovers (prolog and epilog only) fails in the epilog of a job that holds GPU 2 (SLURM_JOB_GPUS
including 2): gpu 2 (0000:4c:00.0): 1 process left: pid 1002127 (alice, python); in a manual run (\`run
--all\`, the goldens) it skips, as it needs a job; a job without GPU 2 is not judged on it.
Every other check as in h100-healthy."

# --- NVML signals ----------------------------------------------------------------------
# h100-healthy was recorded before nodecheck read the signals: its nvml.json has no "fields", so
# the signal checks skip it ("not recorded"). Each variant below adds signals to every GPU and
# says so in "fields" (the facts h100-healthy has, and the ones added).

# fields KEYS: the "fields" line of a variant: h100-healthy's facts and KEYS (quoted, comma-separated).
fields() {
	edit $n nvml.json '/^  "device_count": 8,$/a\
  "fields": ["driver_version", "cuda_driver_version", "minor_number", "uuid", "name", "pci_bus_id", "pcie", "fabric", "ecc", "remapped_rows", "retired_pages", "nvlinks", "memory", "compute", "ecc_corrected", '"$1"'],
'
}

# after_bus GPU-INDEX TEXT: add the line TEXT after device GPU-INDEX's pci_bus_id ("all" for every device).
after_bus() {
	if [ "$1" = all ]; then
		edit $n nvml.json '/^      "pci_bus_id": /a\
      '"$2"'
'
	else
		edit $n nvml.json "$(gpu "$1")"'{
/^      "pci_bus_id": /a\
      '"$2"'
}'
	fi
}

# --- every signal, healthy ---------------------------------------------------------------------
n=h100-signals
new $n
fields '"serial", "pcie_replay_counter", "clock_event_reasons", "temperature", "power", "persistence_mode", "recovery_action"'
# signals GPU-INDEX SERIAL REPLAYS GPU_C MEMORY_C MARGIN DRAW_W: GPU GPU-INDEX of the 565.57.01 capture.
signals() {
	after_bus "$1" '"serial": "'"$2"'", "pcie_replay_counter": '"$3"', "clock_event_reasons": {"mask": 1, "reasons": ["gpu_idle"]}, "temperature": {"gpu_c": '"$4"', "memory_c": '"$5"', "tlimit_margin_c": '"$6"', "slowdown_tlimit_c": -2, "shutdown_tlimit_c": -8, "gpu_max_tlimit_c": 0}, "power": {"enforced_limit_w": 700, "default_limit_w": 700, "draw_w": '"$7"'}, "persistence_mode": true, "recovery_action": "NONE",'
}
signals 0 1654423001593 7 30 36 57 100.89
signals 1 1654223054577 0 30 36 57 82.81
signals 2 1654423003947 0 31 38 56 85.98
signals 3 1654223056472 0 29 37 58 85.48
signals 4 1654423003267 0 28 36 59 84.94
signals 5 1654323021387 4 30 38 57 85.27
signals 6 1654423003872 15 29 37 54 86.05
signals 7 1654223055370 0 29 36 58 75.09
source_note $n "Change: nvml.json lists its facts (\"fields\": h100-healthy's and serial, pcie_replay_counter,
clock_event_reasons, temperature, power, persistence_mode, recovery_action), and each GPU carries those
signals as import-nvidia-smi reads them from GPU i (same index) of another real 8x H100 80GB HBM3 node:
thamada/gls gls/H100SXMx8_smi.py @ e20f22d0eec076b6eeed628fdb1312d84a6fb663 (corpus:
nvsmi-q/thamada-gls-h100sxm-x8-565.57.01-recovery-action-replays.txt, driver 565.57.01): its serial numbers,
\"Replays Since Reset\" (7, 4 and 15 on GPUs 0, 5 and 6), idle clocks, temperatures in the T.Limit form
(\"GPU T.Limit Temp : 57 C\", \"GPU Slowdown T.Limit Temp : -2 C\", \"GPU Shutdown T.Limit Temp : -8 C\",
\"GPU Max Operating T.Limit Temp : 0 C\", \"Memory Current Temp\"), 700 W limits and the power draw,
\"Persistence Mode : Enabled\" and \"GPU Recovery Action : None\". Its driver is newer than h100-healthy's
535.161.08, whose own capture prints no recovery action: the join is of two nodes, as h100-healthy is.
Expected: healthy, as h100-healthy; gpu_clocks, gpu_thermal, gpu_power_limit, gpu_persistence and
gpu_recovery_action ok on 8 GPUs instead of skipping."

# --- HW power brake on every GPU: h100-healthy's own capture --------------------------------------
n=h100-power-brake
new $n
fields '"clock_event_reasons"'
after_bus all '"clock_event_reasons": {"mask": 136, "reasons": ["hw_slowdown", "hw_power_brake_slowdown"]},'
source_note $n "Change: nvml.json lists clock_event_reasons among its facts, and each GPU carries the clocks event reasons
the capture behind h100-healthy prints for it: leptonai/gpud pkg/nvidia-query/testdata/
nvidia-smi-query.535.161.08.out.0.valid @ 2175d7d3671ccde724a6145ddbb87aa3f36e2cbd (corpus:
nvsmi/gpud-q-h100x8-535.161.08.txt), \"Clocks Event Reasons\": \"HW Slowdown : Active\" and \"HW Power
Brake Slowdown : Active\" on all 8 GPUs (mask 0x88), every other reason Not Active. h100-healthy leaves
them out (it was made before nodecheck read them); this variant is that node as nodecheck now reads it.
Expected: gpu_clocks fails: gpu 0 (0000:19:00.0): HW slowdown: clocks cut by half or more; HW power
brake: asserted from outside the GPU, such as by the power supply (clocks event reasons 0x88) (+7 more);
every other check as in h100-healthy."

# --- the driver asks for a GPU reset -------------------------------------------------------------
n=h100-recovery-reset
new $n
fields '"recovery_action"'
after_bus all '"recovery_action": "NONE",'
edit $n nvml.json "$(gpu 3)"'s/"recovery_action": "NONE"/"recovery_action": "GPU_RESET"/'
source_note $n "Change: nvml.json lists recovery_action among its facts; every GPU's is NONE but device 3's
(00000000:5D:00.0), which is GPU_RESET (NVML_GPU_RECOVERY_ACTION_GPU_RESET, what a driver of 550 or later
reports after a fault that \"requires a reset to recover\",
https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html; nvidia-smi
-q prints it as \"GPU Recovery Action\"). NONE is what the real 565.57.01 H100 capture prints for every GPU
(nvsmi-q/thamada-gls-h100sxm-x8-565.57.01-recovery-action-replays.txt); GPU_RESET on GPU 3 is written for
the fixture: no capture in the corpus shows an action other than None.
Expected: gpu_recovery_action fails in every mode: gpu 3 (0000:5d:00.0): driver asks for recovery action
GPU_RESET: reset the GPU (nvidia-smi -r); every other check as in h100-healthy."

# --- A100: every NVLink of one GPU inactive -------------------------------------------------------
# a100-nvlink-all-inactive is a100-healthy with one change (not h100-healthy).
base=a100-healthy
n=a100-nvlink-all-inactive
new $n
edit $n nvml.json "$(gpu 6)"'s/"active": true/"active": false/'
source_note $n "Change: in nvml.json all 12 NVLinks of device 6 (0000000D:00:00.0, GPU-68d0f80e-...) are inactive
(\"active\": false); the other 7 GPUs keep 12 active links each.
Source: Azure/azurehpc-health-checks test/data/bad_nvlink_status.txt @ 0e0a1ac26a64b32ac4dd7632a529638505d3314a
(corpus: nvsmi/azurehpc-bad_nvlink_status.txt), \`nvidia-smi nvlink --status\` of GPU 6 of another Azure A100 VM
(\"GPU 6: NVIDIA A100-SXM4-80GB (UUID: GPU-9667d95e-...)\" then \"NVML: Unable to retrieve NVLink information
as all links are inactive\"): same model, same cloud, same GPU index, another VM (other UUID; the
test data does not name the VM size). nvidia-smi prints no link lines then; nodecheck import-nvidia-smi
records such a GPU with as many links as the other GPUs of the same capture list (here 12, as every A100
SXM4 of a100-healthy), all inactive, which is what NVML reports link by link (NVML_FEATURE_DISABLED).
Expected: nvlink fails: gpu 6 (000d:00:00.0): all 12 NVLinks inactive; every other check as in
a100-healthy."
base=h100-healthy

# --- gres.conf binds one GPU to the other socket's cores ---------------------------------------------
n=h100-gres-cores-wrong-socket
new $n
cat >$n/fs/etc/slurm/gres.conf <<'EOF'
# gres.conf of the fixture cluster, WRITTEN FOR THE NODECHECK TEST FIXTURES (see SOURCE).
# Explicit device files, no AutoDetect. GPUs 0-3 hang off socket 0, GPUs 4-7 off socket 1
# (NUMA nodes of the recorded PCI functions); Cores= uses Slurm's core numbering.
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-55
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia4 Cores=0-55
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia[5-7] Cores=56-111
EOF
source_note $n "Change: fs/etc/slurm/gres.conf gives /dev/nvidia4 a line of its own with Cores=0-55, socket 0's cores,
where its PCI device 0000:9b:00.0 hangs off NUMA node 1, socket 1 (numa_node 1, from the real lspci of
h100-healthy/SOURCE): the mistake of a line split by hand, or copied from the line above. Written for the
fixture. Slurm then pairs jobs on GPU 4 with cores of the other socket, whose memory and PCIe traffic
cross the socket interconnect.
Expected: gres_affinity warns: gpu 0000:9b:00.0 (/dev/nvidia4, /etc/slurm/gres.conf:5 Cores=0-55) is on
NUMA node 1 (cores 56-111); its Cores= name NUMA node 0's cores. The verdict stays healthy (a warning
never drains); every other check as in h100-healthy."

# --- gres.conf Links= written for another NVLink topology ---------------------------------------------
n=h100-gres-links-islands
new $n
cat >$n/fs/etc/slurm/gres.conf <<'EOF'
# gres.conf of the fixture cluster, WRITTEN FOR THE NODECHECK TEST FIXTURES (see SOURCE).
# One line per GPU with Links=, taken from Slurm's testsuite (test39.18), which describes three
# NVLink islands; this node's GPUs all hang off NVSwitches.
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-55 Links=-1,2,2,0,0,0,0,0
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia1 Cores=0-55 Links=2,-1,2,0,0,0,0,0
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia2 Cores=0-55 Links=2,2,-1,0,0,0,0,0
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia3 Cores=0-55 Links=0,0,0,-1,0,1,0,0
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia4 Cores=56-111 Links=0,0,0,0,-1,1,0,0
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia5 Cores=56-111 Links=0,0,0,1,1,-1,0,0
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia6 Cores=56-111 Links=0,0,0,0,0,0,-1,2
NodeName=gpu-h100-[01-16] Name=gpu Type=h100 File=/dev/nvidia7 Cores=56-111 Links=0,0,0,0,0,0,2,-1
EOF
# nvlinks_json: nvlinks.json with every one of the 18 links of each GPU to an NVSwitch.
nvlinks_json() {
	printf '{\n  "init": "SUCCESS",\n  "devices": [\n'
	i=0
	for b in 19 3B 4C 5D 9B BB CB DB; do
		printf '    {\n      "index": %s,\n      "minor_number": %s,\n      "pci_bus_id": "00000000:%s:00.0",\n      "links": [\n' $i $i $b
		l=0
		while [ $l -lt 18 ]; do
			if [ $l -lt 5 ]; then sw=83; elif [ $l -lt 9 ]; then sw=84; elif [ $l -lt 13 ]; then sw=85; else sw=86; fi
			sep=,
			[ $l -eq 17 ] && sep=
			printf '        {"link": %s, "remote_pci_bus_id": "00000000:%s:00.0", "remote_type": "SWITCH"}%s\n' $l $sw "$sep"
			l=$((l + 1))
		done
		sep=,
		[ $i -eq 7 ] && sep=
		printf '      ]\n    }%s\n' "$sep"
		i=$((i + 1))
	done
	printf '  ]\n}\n'
}
nvlinks_json >$n/nvlinks.json
source_note $n "Change: fs/etc/slurm/gres.conf gives each GPU a line of its own with Links= copied from Slurm's testsuite
(SchedMD/slurm testsuite/expect/test39.18 @ 284c3b95f08a2dc2478499837b03355e1b9c5c75, corpus
gres/slurm-testsuite-39.18-c10-links-topology.conf: \"3 NVLink islands\", GPUs 0-2 doubly linked, 5 singly
to 3 and 4, 6-7 doubly), with this fixture's NodeName, Type and socket Cores=; and nvlinks.json records
where each GPU's 18 active NVLinks lead, in the form \`nodecheck snapshot\` records NVML's answers
(nvmlDeviceGetNvLinkRemotePciInfo, nvmlDeviceGetNvLinkRemoteDeviceType): every link to one of the 4
NVSwitches at 0000:83:00.0-0000:86:00.0 (the NVSwitches of h100-healthy's real lspci), type SWITCH, never to
another GPU. INVENTED: no public capture of those NVML answers exists; the 18 links per GPU are h100-healthy's
(themselves invented, see its SOURCE), and which link leads to which switch (links 0-4, 5-8, 9-12, 13-17:
5, 4, 4 and 5 links per switch) is made up; only \"to a switch\" matters to the check.
On an NVSwitch board every GPU reaches every other alike, so slurmd's AutoDetect=nvml writes 0 for every
other GPU (src/plugins/gpu/nvml/gpu_nvml.c counts only links whose far end is a GPU); islands of 2 and 1
links tell Slurm to prefer pairs that are no better connected than any other.
Expected: gres_affinity warns on each of the 8 GPUs, e.g. gpu 0000:19:00.0 (/dev/nvidia0,
/etc/slurm/gres.conf:4 Links=-1,2,2,0,0,0,0,0): 0 NVLinks to device 1 (0000:3b:00.0), Links= says 2, ...;
its other 18 active NVLinks lead to NVSwitches; AutoDetect=nvml would write Links=-1,0,0,0,0,0,0,0.
Cores= are right (no warning for them). The verdict stays healthy; every other check as in h100-healthy."
# --- DCGM: the ClusterMAX injected PCIe replay ----------------------------------------------------
# h100-dcgm-pcie-replay: h100-healthy whose site runs DCGM, with its health watches set, after
# `dcgmi test --inject --gpuid 0 -f 202 -v 99999`. commands.json gains dcgmi's two answers; the
# dcgmi outputs are checks/node/dcgm/testdata/health-f-j-after-s-a.txt and
# health-c-j-pcie-replay-gpu0.json (their SOURCE there says how each was composed).
n=h100-dcgm-pcie-replay
new $n
cat >$n/commands.json <<'COMMANDS'
[
  {
    "argv": [
      "/usr/bin/nv-fabricmanager",
      "--version"
    ],
    "stdout": "\n\n\n\tFabric Manager version is : 535.161.08\n\n",
    "stderr": "",
    "exit_code": 0,
    "duration_ms": 12
  },
  {
    "argv": [
      "/usr/bin/systemctl",
      "is-active",
      "nvidia-fabricmanager"
    ],
    "stdout": "active\n",
    "stderr": "",
    "exit_code": 0,
    "duration_ms": 8
  },
  {
    "argv": [
      "/usr/bin/dcgmi",
      "health",
      "--host",
      "localhost",
      "-g",
      "a",
      "-f",
      "-j"
    ],
    "stdout": "Health monitor systems report\n{\n        \"body\" : \n        {\n                \"ConnectX\" : \n                {\n                        \"value\" : \"On\"\n                },\n                \"Driver\" : \n                {\n                        \"value\" : \"On\"\n                },\n                \"InfoROM\" : \n                {\n                        \"value\" : \"On\"\n                },\n                \"Memory\" : \n                {\n                        \"value\" : \"On\"\n                },\n                \"NVLINK\" : \n                {\n                        \"value\" : \"On\"\n                },\n                \"NvSwitch F\" : \n                {\n                        \"value\" : \"On\"\n                },\n                \"NvSwitch NF\" : \n                {\n                        \"value\" : \"On\"\n                },\n                \"PCIe\" : \n                {\n                        \"value\" : \"On\"\n                },\n                \"Power\" : \n                {\n                        \"value\" : \"On\"\n                },\n                \"SM\" : \n                {\n                        \"value\" : \"Off\"\n                },\n                \"Thermal\" : \n                {\n                        \"value\" : \"On\"\n                }\n        }\n}\n",
    "stderr": "",
    "exit_code": 0,
    "duration_ms": 41
  },
  {
    "argv": [
      "/usr/bin/dcgmi",
      "health",
      "--host",
      "localhost",
      "-g",
      "a",
      "-c",
      "-j"
    ],
    "stdout": "{\n        \"body\" : \n        {\n                \"GPU\" : \n                {\n                        \"children\" : \n                        {\n                                \"0\" : \n                                {\n                                        \"children\" : \n                                        {\n                                                \"Errors\" : \n                                                {\n                                                        \"children\" : \n                                                        {\n                                                                \"PCIe system\" : \n                                                                {\n                                                                        \"overflow\" : \n                                                                        [\n                                                                                \"Detected more than 31 PCIe replays per minute for GPU 0\",\n                                                                                \": 99999\"\n                                                                        ],\n                                                                        \"value\" : \"Warning\"\n                                                                }\n                                                        }\n                                                }\n                                        },\n                                        \"value\" : \"Warning\"\n                                }\n                        }\n                },\n                \"Overall Health\" : \n                {\n                        \"value\" : \"Warning\"\n                }\n        },\n        \"header\" : \n        [\n                \"Health Monitor Report\"\n        ]\n}\n",
    "stderr": "",
    "exit_code": 0,
    "duration_ms": 57
  }
]
COMMANDS
source_note $n "Change: commands.json adds the answers of DCGM's dcgmi (DCGM 4) to the two questions dcgm_health asks:
\`dcgmi health --host localhost -g a -f -j\` (every watch on but SM, as after \`dcgmi health -s a\`) and
\`dcgmi health --host localhost -g a -c -j\`, which reports on GPU 0, in the PCIe system, DCGM's Warning
\"Detected more than 31 PCIe replays per minute for GPU 0 : 99999\" (DCGM_FR_PCI_REPLAY_RATE, severity ISOLATE).
That is what the fault injection of the ClusterMAX review, \`dcgmi test --inject --gpuid 0 -f 202 -v 99999\`
(field 202 is DCGM_FI_DEV_PCIE_REPLAY_COUNTER), leaves in DCGM's health watches. The inject command and its value
are real (NVIDIA/DCGM#124, shared/corpus/dcgm/dcgm-124-a10g-dcgm442-inject-pcie-replay-then-diag-r2-pass.txt);
no public capture of the \`dcgmi health -c -j\` after it exists, so that answer is COMPOSED from dcgmi's code
(Health.cpp, DcgmiOutput.cpp) and DCGM's message format and limit for PCIe gen 5 x16 (31 per minute,
DcgmHealthWatch::GetExpectedPcieReplayRate), in the layout of a real healthy \`dcgmi health -c -j\`
(NVIDIA/DCGM#263); checks/node/dcgm/testdata/SOURCE gives every step.
Expected: dcgm_health fails in health and manual mode: gpu 0 (0000:19:00.0): PCIe system: ... (DCGM_FR_PCI_REPLAY_RATE (3),
ISOLATE; DCGM: Warning), remedy service; a health run with --drain drains the node with that reason. Prolog and
epilog runs never ask DCGM: their verdicts are h100-healthy's. Every other check as in h100-healthy."

# ---- >8 ----

echo "regen.sh: rebuilt 30 snapshots from h100-healthy and 1 from a100-healthy"
