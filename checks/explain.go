package checks

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nodecheck/nodecheck/config"
)

// Explanation is what `nodecheck explain CHECK` tells an admin about a check: what it reads,
// when it gives each status, what its settings mean, and what to do when it fails. The
// settings' defaults are not written here: Explain takes them from config.Default(), so they
// cannot drift from the code.
type Explanation struct {
	Reads  []string // what the check reads from the node, one item each
	Passes string
	Warns  string // "" when the check never warns
	Fails  string
	Skips  string
	Errors string // when it says error: it could not decide
	// Keys describes the check's own keys in its [checks.ID] section; the keys every check
	// has (enabled, timeout, modes) are described once, in commonKeys.
	Keys map[string]string
	Fix  []string // what an admin does when the check fails, in order
}

// commonKeys describes the keys every check's section has.
var commonKeys = map[string]string{
	"enabled": "false turns the check off everywhere (it reports skip).",
	"timeout": "The check's own time limit; a check that runs out of time fails.",
	"modes":   `The modes the check runs in, from "prolog", "epilog", "health" and "manual"; in the others it reports skip.`,
}

// explanations holds one Explanation per check id; TestExplanations requires one for every
// registered check and a description for every key of its config section.
var explanations = map[string]Explanation{
	idGPUMemoryErrors: explainGPUMemoryErrors,
	idNVLink:          explainNVLink,
	idJobLeftovers:    explainJobLeftovers,
	idGresDevices: {
		Reads: []string{
			"slurm.conf, to find gres.conf beside it (--slurm-conf, slurm_conf, SLURM_CONF, slurmd's configless cache, /etc/slurm).",
			"gres.conf: the File= and MultipleFiles= device paths of the lines for this node, and AutoDetect.",
			"Each of those device files (stat only): its type and its major and minor numbers.",
		},
		Passes: "Every device file gres.conf lists for this node exists as a character device: /dev/nvidiaN as char 195:N, and /dev/nvidiactl, which every NVIDIA GPU needs and which is checked whenever GPU files are listed, as char 195:255. Other files (MIG capabilities under /dev/nvidia-caps) need only be character devices.",
		Fails:  "A listed device file is missing, is not a character device (a regular file left by a copy, a directory), or has another major or minor number than its name promises. Slurm would give jobs a GPU device that is not there, or the wrong GPU.",
		Skips:  "There is no gres.conf, gres.conf has no File= entry for this node, or it uses AutoDetect for this node so that there are no File= entries to check (gpu_count still compares the GPU counts).",
		Errors: "slurm.conf cannot be found, gres.conf cannot be read, a gres.conf line that Slurm would refuse may concern this node, or a device file cannot be examined.",
		Fix: []string{
			"ls -l /dev/nvidia*: are the files there, as character devices 195, N?",
			"If none are, check that the driver is loaded: lsmod | grep nvidia, dmesg | grep -i -e nvrm -e nvidia. Load it (modprobe nvidia) and create the device files: nvidia-modprobe -c N for each GPU N, or nvidia-smi once as root. udev rules or nvidia-persistenced normally do this at boot: find out why they did not.",
			"A device file that is a regular file or has the wrong numbers: remove it and create it again as above.",
			"If gres.conf is wrong (File= naming devices this node does not have, a NodeName= range that takes in the wrong nodes), fix it, check it with nodecheck lint and run scontrol reconfigure.",
		},
	},
	idGPUCount: {
		Reads: []string{
			"slurm.conf: the Gres= of this node's NodeName line (gpu[:type]:N, summed over types).",
			"NVML: the number of GPUs, each GPU's name and PCI bus id, and the GPUs NVML cannot open.",
			"The PCI bus (/sys/bus/pci/devices): the NVIDIA (vendor 0x10de) display and 3D controllers.",
		},
		Passes: "NVML and the PCI bus show the same GPUs, as many as slurm.conf gives the node, and each typed Gres element (gpu:h100:8) matches the NVML name of as many GPUs as it counts. Where a Gres type names a MIG profile (gpu:a100_3g.20gb:2) the count is of MIG instances, and only NVML and the PCI bus are compared.",
		Warns:  "The counts agree but a Gres type does not match the NVML names (a node in the wrong NodeName range, a swapped board); slurm.conf gives the node no GPU although it has some (Slurm will not schedule them); or NVML and the bus disagree on a node where Slurm schedules no GPU.",
		Fails:  "A GPU is on the PCI bus but NVML cannot open it (it fell off the bus, GPU_IS_LOST, the driver did not attach), NVML shows a GPU the bus does not, NVML does not initialise where GPUs are expected, or NVML and the bus agree on a number other than slurm.conf's.",
		Skips:  "slurm.conf gives the node no GPU and there is no NVIDIA GPU on the PCI bus: a CPU node.",
		Errors: "How many GPUs Slurm expects cannot be told (slurm.conf unreadable, the node not in it) while NVML and the bus agree, or the PCI bus or NVML cannot be read.",
		Fix: []string{
			"nvidia-smi: which GPUs are listed? nvidia-smi -q | grep -i 'bus id' against lspci -d 10de: names the missing one.",
			"dmesg -T | grep -i xid: Xid 79 (the GPU fell off the bus), 48, 63, 64, 94 or 95 (memory errors) or 119 and 120 (GSP firmware) mean a hardware or firmware fault.",
			"Reboot, with a full power cycle for a GPU that fell off the bus. If the GPU is still missing or the Xid comes back, reseat it or replace it (RMA, with the output of nvidia-bug-report.sh).",
			"If the node is right and slurm.conf is wrong (the Gres= count or type), fix slurm.conf, check it with nodecheck lint and run scontrol reconfigure.",
		},
	},
	idPCIeLink: {
		Reads: []string{
			"The PCI bus (/sys/bus/pci/devices): each device's vendor, class, current_link_width, max_link_width, current_link_speed and max_link_speed.",
			"NVML, for the GPUs whose link it reports (current and max width and generation); sysfs for the others.",
			"It judges the GPUs, the NVSwitches, and the Mellanox (0x15b3) InfiniBand and Ethernet functions, one per card.",
		},
		Passes: "Every GPU, NVSwitch and Mellanox HCA runs its PCIe link at its max width, or at least at min_width where that is lower. Link speed is only noted, never judged: GPUs slow their links down when idle.",
		Fails:  "A device runs its link with fewer lanes than expected (x8 of x16), which halves the bandwidth to it or worse: a badly seated card or riser, a damaged slot or cable, or a link that trained down after errors.",
		Skips:  "There is no GPU, NVSwitch or Mellanox HCA on the PCI bus, every one is excluded by config, or none reports a link width (a virtual machine).",
		Errors: "The PCI bus cannot be read.",
		Keys: map[string]string{
			"min_width":       "Lowest acceptable width in lanes, for devices whose max is wider: 8 accepts a x16 GPU at x8. 0: each device must run at its own max width.",
			"exclude_devices": `PCI addresses never judged, as sysfs writes them ("0000:1a:00.0"): a card in a narrower slot on purpose, say.`,
		},
		Fix: []string{
			"lspci -vv -s ADDRESS | grep -E 'LnkCap|LnkSta': a LnkSta width below the LnkCap width confirms it (recent lspci adds \"(downgraded)\").",
			"Power the node off, reseat the card or the riser and its cables, check the slot for damage, and check the link again after boot.",
			"If it stays narrow, move the card to another slot to tell a bad card from a bad slot, and replace the part at fault.",
			"A card that sits in a narrower slot on purpose goes in exclude_devices; a fleet that accepts x8 links sets min_width = 8.",
		},
	},
	idFabricManager: {
		Reads: []string{
			"The PCI bus: the NVSwitches (NVIDIA bridge devices, class 0x0680).",
			"NVML: the driver version, and each GPU's fabric state and status (Hopper and later).",
			"binary --version (nv-fabricmanager); where it is absent, the installed nvidia-fabricmanager package (dpkg-query, then rpm).",
			"systemctl is-active SERVICE (nvidia-fabricmanager).",
		},
		Passes: "Fabric Manager has exactly the driver's version, its service is active, and every GPU that reports a fabric state has registered with the fabric: state COMPLETED, status SUCCESS. A100 GPUs report no fabric state, which is not a failure.",
		Fails:  "Fabric Manager is not installed or has another version than the driver (it then refuses to start, and CUDA fails with error 802, \"system not yet initialized\"), its service is not active, a GPU's fabric registration has not completed or completed with an error, or NVML does not give the driver version to compare with.",
		Skips:  "There is no NVSwitch on the PCI bus (PCIe-only systems), unless force = true.",
		Errors: "systemctl or the package manager cannot be asked, or the version cannot be read from binary --version.",
		Keys: map[string]string{
			"force":     "Run even where no NVSwitch is on the PCI bus.",
			"binary":    `Asked for its version ("--version"). Where it is absent, the installed package is asked instead (dpkg-query, then rpm).`,
			"systemctl": `Asked whether the service runs ("systemctl is-active SERVICE").`,
			"service":   "The Fabric Manager systemd unit.",
		},
		Fix: []string{
			"Compare the driver version (nvidia-smi) with nv-fabricmanager --version, and install the Fabric Manager of exactly the driver's version (Debian, Ubuntu: nvidia-fabricmanager-BRANCH at the driver's version; RHEL: nvidia-fabric-manager). Hold both packages so that they are upgraded together.",
			"systemctl restart nvidia-fabricmanager; journalctl -u nvidia-fabricmanager and /var/log/fabricmanager.log say why it stopped or would not start.",
			"nvidia-smi -q | grep -i -A 3 fabric: every GPU shows State Completed, Status Success once Fabric Manager runs. If it stays In Progress or fails, reboot the node: a driver upgrade without a reboot leaves the old kernel module loaded.",
		},
	},
	idIBPorts: {
		Reads: []string{
			"/sys/class/infiniband/DEVICE/ports/PORT: state, phys_state, rate and link_layer of every port, RoCE ports included. Never the port counters: reading them floods the kernel log on some ConnectX-7 cards.",
		},
		Passes: "Every port judged (after devices and the exclusions) is ACTIVE and LinkUp, at min_rate_gbps or faster, and there are at least expected_ports of them.",
		Warns:  "There are more ports than expected_ports (a new HCA, or expected_ports set too low).",
		Fails:  "A port is not ACTIVE (DOWN; INIT or ARMED: the subnet manager has not brought it up) or not LinkUp (Polling: no cable or no peer; Disabled), runs below min_rate_gbps (a link trained down, NDR at HDR), or fewer than expected_ports ports are present (an HCA that vanished).",
		Skips:  "There is no device under /sys/class/infiniband, or every port is excluded by config and expected_ports is 0.",
		Errors: "/sys/class/infiniband cannot be read.",
		Keys: map[string]string{
			"min_rate_gbps":       `Lowest acceptable rate in Gb/s, as in the port's rate file ("400 Gb/sec (4X NDR)"): 100 for EDR, 200 for HDR, 400 for NDR. 0: no minimum.`,
			"expected_ports":      "How many ports must be present, after devices and the exclusions. 0: any number.",
			"devices":             `Judge only these devices ("mlx5_0") or ports ("mlx5_0/1"). Empty: all of them.`,
			"exclude_devices":     "Never judge these devices or ports, e.g. a storage HCA that is allowed to be down.",
			"exclude_link_layers": `Leave out the ports of these link layers: "InfiniBand" or "Ethernet" (RoCE ports).`,
		},
		Fix: []string{
			"ibstat DEVICE PORT: State, Physical state and Rate as the HCA sees them.",
			"Physical state Polling or Disabled: reseat the cable at both ends, check the switch port (enabled, up, its error counters), and swap in a known-good cable or transceiver; replace the part at fault.",
			"LinkUp but state INIT or ARMED: the subnet manager has not activated the port: check the subnet manager (sminfo; OpenSM or UFM logs) and the switch.",
			"Rate too low: a cable or transceiver that cannot run the speed, or a port that trained down: reseat or replace the cable (mlxlink -d DEVICE shows the negotiated speed and the errors).",
			"A port missing: lspci | grep -i mellanox, dmesg | grep -i mlx5; the HCA may need reseating, a firmware update (mlxfwmanager) or replacement.",
		},
	},
	idGPUModels: {
		Reads: []string{
			"NVML: each GPU's index and device name (\"NVIDIA H100 80GB HBM3\").",
			"slurm.conf: the Feature= tokens and the gpu Gres types of this node's NodeName line.",
		},
		Passes: "Every GPU NVML names has the same name, and each Feature= token or Gres type that names a GPU model (h100, a100, l40s, rtx4090, ...) names the model of every GPU. A feature or type that names no known model (ndr, ib, tesla) is not judged. Model tokens come from the NVML names through a table of rules \"words=token\": the rule's words must appear one after another among the name's words (split at blanks, '-', '_' and '/'), so a10 matches \"NVIDIA A10\" but not \"NVIDIA A100-SXM4-80GB\". The built-in table covers gb200, b200, b100, gh200, h200, h100, h800, h20, a100, a800, a40, a30, a16, a10g, a10, a2, l40s, l40, l20, l4, v100, t4, p100, rtx6000ada (\"rtx 6000 ada\"), rtxa6000, rtxa5000, rtxa4000, rtx5090, rtx4090, rtx3090 and titanv (\"titan v\"); a Gres type as AutoDetect writes it (nvidia_h100_80gb_hbm3) or a MIG type (a100_3g.20gb) is read with the same rules.",
		Warns:  "The GPUs are of more than one model (NVML names differ): mixed generations on one node trouble the driver, Fabric Manager and NCCL. The warning names each model and its GPU indices.",
		Fails:  "A Feature= token or Gres type names a GPU model that some or all GPUs are not (Feature=h100 on a node with A100s): jobs that asked for that model get other GPUs. The summary names the token, the GPUs and their model.",
		Skips:  "NVML is unavailable, or lists no GPU, and slurm.conf names no GPU model for this node.",
		Errors: "slurm.conf names a GPU model but NVML is unavailable (\"cannot check Feature=h100: NVML ERROR_LIBRARY_NOT_FOUND\") or names no GPU; slurm.conf cannot be read or does not define the node; or a models rule is invalid.",
		Keys: map[string]string{
			"models": "Extra rules \"words=token\", tried before the built-in table, in order: [\"h100 nvl=h100nvl\", \"rtx 4000 ada=rtx4000ada\"]. The token is the word your slurm.conf uses for the model as a Feature or Gres type.",
		},
		Fix: []string{
			"nvidia-smi -L: which GPUs does the node carry?",
			"If slurm.conf is wrong (a NodeName range that takes in nodes of another model, a stale Feature=), fix it and run scontrol reconfigure.",
			"If the hardware is wrong (a board swapped for another model), replace it, or move the node to the right NodeName line and features.",
			"If the token is right but the built-in table reads the name differently, add a models rule.",
		},
	},
	idXIDErrors: {
		Reads: []string{
			"The kernel log since boot: dmesg --kernel --nopager (the first 64 KiB of its output), its \"NVRM: Xid (PCI:0000:9b:00): 79, ...\" lines.",
			"NVML, where available: the GPUs' indices and bus ids, to name the GPU of each XID.",
		},
		Passes: "The kernel log holds no NVIDIA XID message (none but ignore_xids).",
		Warns:  "The kernel log holds an XID not in fail_xids: by default the application-caused ones (13 graphics engine exception, 31 memory page fault, 43 GPU stopped processing, 45 preemptive cleanup, 68 video processor exception) and any XID in no list. Also when the kernel log is longer than what is read (64 KiB): later XIDs are then not seen.",
		Fails:  "The kernel log holds an XID in fail_xids: by default those NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors) resolves with a GPU reset or a reboot: 48 double-bit ECC, 61 and 62 micro-controller halt, 63 and 64 page retirement or row remapping pending or failed, 74 NVLink error, 79 GPU fallen off the bus, 92 high single-bit ECC rate, 94 and 95 contained and uncontained ECC error, 119 and 120 GSP timeout and error, 140 unrecovered ECC, 154 recovery action changed. The summary names the XID, the GPU by index and bus id, and the driver's message. An XID stays in the kernel log until the next boot, so the node stays failed until it is rebooted (or the log is cleared with dmesg --clear after a GPU reset). Only health and manual mode by default: the kernel log is the node's, not a job's.",
		Skips:  "NVML finds no NVIDIA driver library (ERROR_LIBRARY_NOT_FOUND): a node without NVIDIA GPUs.",
		Errors: "dmesg is missing (or, replaying a snapshot, its output was not recorded), or cannot read the kernel log (kernel.dmesg_restrict=1 and not root: \"Operation not permitted\").",
		Keys: map[string]string{
			"dmesg":       "util-linux dmesg, run as \"dmesg --kernel --nopager\". Absolute path.",
			"fail_xids":   "XIDs that fail the node.",
			"warn_xids":   "XIDs that only warn; an XID in no list warns too. Each XID may be in one list only.",
			"ignore_xids": "XIDs never reported.",
		},
		Fix: []string{
			"dmesg -T | grep -i xid: which GPU (bus id), which XID, what happened just before (an application's XID 13 or 31 before a 43 or 45 is the application's)?",
			"Look the XID up in NVIDIA's catalog (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) for its immediate action: RESET_GPU (nvidia-smi -r -i N on an idle GPU) or RESTART_BM (reboot the node).",
			"Repeated ECC (48, 63, 64, 92, 94, 95), fallen-off-the-bus (79) or NVLink (74) XIDs on the same GPU after a reset point at the hardware: run field diagnostics (dcgmi diag -r 3) and have the board replaced.",
			"After the fix, reboot (or dmesg --clear after a GPU reset) so that the old XIDs leave the kernel log, and run nodecheck run --check xid_errors.",
		},
	},
	idNCCLAllReduce: {
		Reads: []string{
			"The output of all_reduce_perf from nccl-tests, run as binary with args and -g set to the number of GPUs NVML reports: the bus bandwidth per message size, the #wrong column and the out of bounds count.",
			"Before it runs, whether the GPUs are in use: nvidia-smi --query-compute-apps, and in health and epilog mode also pgrep -x slurmstepd.",
			"NVML: the number and names of the GPUs, for -g and the built-in thresholds.",
			"Its last result, kept in [state] dir (nccl_allreduce.json), to report in the modes it does not run in.",
		},
		Passes: "all_reduce_perf exits 0, no element is wrong, and the best bus bandwidth at 1 GiB and more (or at the largest sizes, when the sweep ends below 1 GiB) is at least min_busbw_gbps, or the built-in threshold: 390 GB/s for 8x H100 80GB HBM3, 195 GB/s for 8x A100-SXM4.",
		Warns:  "No threshold applies (GPUs the built-in table does not know, and min_busbw_gbps unset): the figure is reported so that you can set one.",
		Fails:  "The bus bandwidth is below the threshold (a GPU fallen back to PCIe, NVLinks or an NVSwitch lost, NVLS off because Fabric Manager's multicast does not work, throttled clocks), an element is wrong or out of bounds (data corruption), a CUDA or NCCL call failed, all_reduce_perf exited non-zero or ran out of time, or it is not installed and required = true.",
		Skips:  "The mode is not in modes (manual only by default, never a prolog): the last result is shown with its age. Or the node is busy (a job step, compute processes on the GPUs), all_reduce_perf is not installed, or there is no NVIDIA driver or GPU.",
		Errors: "The number of GPUs for -g cannot be had from NVML, all_reduce_perf cannot be started, or its output cannot be read.",
		Keys: map[string]string{
			"binary":         "all_reduce_perf from https://github.com/NVIDIA/nccl-tests (build/all_reduce_perf). It runs with PATH and LANG only: where NCCL is not in the linker's default path, point this at a wrapper script that sets LD_LIBRARY_PATH.",
			"args":           "Arguments of all_reduce_perf; \"-g N\" with the GPU count NVML reports is added unless they set -g themselves.",
			"min_busbw_gbps": "Least acceptable bus bandwidth in GB/s at the largest sizes; set it per node type in [[group]] sections. 0: the built-in table.",
			"required":       "true: a missing binary fails instead of skipping.",
			"nvidia_smi":     "Asked for the compute processes on the GPUs before a run: a node whose GPUs are in use is not tested.",
			"pgrep":          "Asked for slurmstepd before a health or epilog run: a node with a Slurm job step is not tested.",
		},
		Fix: []string{
			"nvidia-smi topo -m and nvidia-smi nvlink -s: every GPU pair should be joined by NVLink (NV18 on HGX H100, NV12 on HGX A100) with every link up at full speed; a missing link points to a GPU, the baseboard or an NVSwitch.",
			"Check Fabric Manager first (nodecheck explain fabric_manager): without it NVLink jobs fail, and without its multicast NCCL runs without NVLS, at about 370 GB/s instead of 480 on 8x H100.",
			"Wrong data: run it again. Wrong data that comes back means a faulty GPU or memory: dmesg | grep -i xid, nvidia-smi -q -d ECC, then replace the GPU.",
			"Run it by hand with NCCL_DEBUG=INFO: the log names the transport of each channel (NVLS, P2P over NVLink, SHM). nccl-tests built against another CUDA or NCCL than the node's, or an old NCCL, gives low figures: rebuild nccl-tests against the NCCL installed.",
			"For an RMA case, dcgmi diag -r 3 runs NVIDIA's own NVLink and memory tests.",
		},
	},
	idNodeInventory: {
		Reads: []string{
			"The CPU topology and memory through github.com/jaypipes/ghw: /proc/cpuinfo and /sys/devices/system/cpu (online logical CPUs, their physical package and core) and /proc/meminfo (MemTotal, the usable memory, in MiB).",
			"slurm.conf: the node's NodeName line, only the keys it sets among CPUs, Sockets (or Boards and SocketsPerBoard), CoresPerSocket, ThreadsPerCore and RealMemory.",
		},
		Passes: "Every key the NodeName line sets matches the node, and the usable memory is at least RealMemory.",
		Warns:  "The node has more CPUs, sockets, cores per socket or threads per core than slurm.conf says: Slurm uses only what is configured. Memory above RealMemory is normal and passes.",
		Fails:  "The node has fewer CPUs, sockets, cores per socket or threads per core than slurm.conf says, or less usable memory than RealMemory (the summary says how many MiB short): slurmd registers with what it finds and slurmctld sets the node INVAL. Or reading the inventory ran out of time.",
		Skips:  "The mode is not in modes (health and manual by default: the inventory does not change between jobs), the NodeName line sets none of the keys compared, or a snapshot replayed has no inventory.json.",
		Errors: "The inventory cannot be read, slurm.conf cannot be read, or the node is not defined in it.",
		Fix: []string{
			"Memory a little below RealMemory: MemTotal is the installed memory less what firmware and the kernel reserve (crashkernel=, hugepages reserved at boot), and it changes with a BIOS or kernel update. Set RealMemory a few percent under MemTotal (slurmd -C prints what slurmd finds), then scontrol reconfigure.",
			"Memory well below RealMemory: a DIMM lost at boot. Look at dmidecode -t memory and the BMC's event log (ipmitool sel elist), then reseat or replace it.",
			"Fewer CPUs: CPUs taken offline (cat /sys/devices/system/cpu/offline), maxcpus= or nosmt on the kernel command line, or hyper-threading or sockets turned off in the BIOS. Compare lscpu and slurmd -C with the NodeName line.",
			"More than configured: complete the NodeName line (slurmd -C prints one), or ignore it where the spare CPUs are kept out of Slurm on purpose (then prefer CpuSpecList or CoreSpecCount).",
		},
	},
}

// afterFix is the last step of every check's fix list: how the node gets back into service.
const afterFix = "Check the fix with nodecheck run --check %s. A node nodecheck drained is resumed by the health check once resume_after_passes runs in a row pass ([drain] in nodecheck.toml); a node someone else drained is left to them."

// ExplainIndex writes the checks in run order, one line each, and how to explain one.
func ExplainIndex(w io.Writer) error {
	var b strings.Builder
	width := 0
	for _, c := range ordered {
		width = max(width, len(c.ID()))
	}
	b.WriteString("Checks, in run order:\n")
	for _, c := range ordered {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.ID(), c.Description())
	}
	b.WriteString("\nnodecheck explain CHECK says what a check reads, when it passes, fails and skips, its\nsettings, and what to do when it fails.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Explain writes the explanation of the check id, with its settings' built-in defaults. An
// unknown id is an error that lists the known ones.
func Explain(w io.Writer, id string) error {
	c, ok := byID(id)
	if !ok {
		return fmt.Errorf("unknown check %q: known checks are %s", id, strings.Join(IDs(), ", "))
	}
	e, ok := explanations[id]
	if !ok {
		return fmt.Errorf("check %q has no explanation", id) // TestExplanations rules this out
	}
	keys, err := sectionDefaults(id)
	if err != nil {
		return err
	}
	pos := slices.Index(IDs(), id) + 1

	var b strings.Builder
	fmt.Fprintf(&b, "%s (check %d of %d in run order)\n", id, pos, len(ordered))
	wrap(&b, "  ", "  ", c.Description())
	heading := func(h string) { b.WriteString("\n" + h + "\n") }
	para := func(h, text string) {
		if text == "" {
			return
		}
		heading(h)
		wrap(&b, "  ", "  ", text)
	}
	heading("Reads")
	for _, r := range e.Reads {
		wrap(&b, "  - ", "    ", r)
	}
	para("Passes (ok)", e.Passes)
	para("Warns (warn: reported, never drains)", e.Warns)
	para("Fails (fail: the node is unhealthy, and the hooks drain it)", e.Fails)
	para("Skips (skip)", e.Skips)
	para("Cannot decide (error: drains only with error_is_failure = true)", e.Errors)
	heading(fmt.Sprintf("Settings: [checks.%s] in nodecheck.toml, with the built-in defaults", id))
	for _, kv := range keys {
		b.WriteString("  " + kv[0] + " = " + kv[1] + "\n")
		desc, ok := commonKeys[kv[0]]
		if !ok {
			desc = e.Keys[kv[0]]
		}
		wrap(&b, "      ", "      ", desc)
	}
	wrap(&b, "  ", "  ", "A [[group]] section can set any of these for some nodes; nodecheck config show --node NAME prints what a node gets.")
	heading("When it fails")
	for i, f := range append(slices.Clip(e.Fix), fmt.Sprintf(afterFix, id)) {
		lead := fmt.Sprintf("  %d. ", i+1)
		wrap(&b, lead, strings.Repeat(" ", len(lead)), f)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// sectionDefaults returns the keys of [checks.ID] with their built-in values, as
// Encode(Default()) writes them (TOML values), in the order of the section.
func sectionDefaults(id string) ([][2]string, error) {
	var buf bytes.Buffer
	if err := config.Default().Encode(&buf); err != nil {
		return nil, err
	}
	header := "[checks." + id + "]"
	var out [][2]string
	in := false
	for line := range strings.Lines(buf.String()) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			if in {
				break
			}
			in = line == header
			continue
		}
		if !in || line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, " = ")
		if !ok {
			return nil, fmt.Errorf("read the defaults of %s: unexpected line %q", header, line)
		}
		out = append(out, [2]string{k, v})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read the defaults of %s: no such section in the built-in config", header)
	}
	return out, nil
}

// explainWidth is the width explain's text is wrapped to.
const explainWidth = 80

// wrap writes text as lines of at most explainWidth columns, the first starting with first,
// the others with rest. A word longer than a line gets a line of its own.
func wrap(b *strings.Builder, first, rest, text string) {
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len(line)+1+len(word) > explainWidth {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
}
