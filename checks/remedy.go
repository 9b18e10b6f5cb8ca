package checks

import (
	"slices"
	"strings"

	"github.com/nodecheck/nodecheck/checks/node"
)

// Remedy is what brings a failing device, or the node, back into service (DESIGN.md section
// 5, issue 15): the step the repair flow takes, cheapest first, and what an admin reads in
// the drain reason. Every failing detail names one, from remedyTable below, and a failing
// result summarises them (settleRemedy).
type Remedy string

// The remedies, from the cheapest to the most drastic.
const (
	// RemedyResetGPU: reset the GPU the detail names (nvidia-smi -r -i N, once nothing holds
	// it); a result whose reset_gpu names no GPU means every GPU of the node. Minutes.
	RemedyResetGPU Remedy = "reset_gpu"
	// RemedyReboot: reboot the node (scontrol reboot). About 30 minutes on bare metal.
	RemedyReboot Remedy = "reboot"
	// RemedyAdmin: a person changes configuration or software; no reset or reboot fixes it.
	RemedyAdmin Remedy = "admin"
	// RemedyService: hardware to replace, or a vendor case (RMA).
	RemedyService Remedy = "service"
)

// Remedies lists every remedy, cheapest first, in the order metrics and docs list them.
func Remedies() []Remedy {
	return []Remedy{RemedyResetGPU, RemedyReboot, RemedyAdmin, RemedyService}
}

// rank orders remedies by what they cost: a reset takes minutes, a reboot half an hour, and
// the last two need a person (service also a part or a vendor). 0 is no remedy.
func (r Remedy) rank() int { return slices.Index(Remedies(), r) + 1 }

// Valid reports whether r is one of Remedies.
func (r Remedy) Valid() bool { return r.rank() > 0 }

// MostDrastic is the most drastic of rs ("" for none): what a node needs when its devices
// need each of rs, since a cheaper remedy leaves the other devices failing.
func MostDrastic(rs ...Remedy) Remedy {
	var out Remedy
	for _, r := range rs {
		if r.rank() > out.rank() {
			out = r
		}
	}
	return out
}

// settleRemedy sets res.Remedy, the result's summary of its remedies: for a failing result
// the most drastic of the remedies of its failing details and of the one the check set on
// the result itself (a failure no device carries: a timeout, a count that is short);
// nothing for any other status. The most drastic, not the first: a reset that fixes GPU 3
// leaves GPU 5 waiting for its replacement, so the node needs what the worst device needs.
// The cheaper per-device remedies stay on the details, where the repair flow reads them to
// take the cheapest first (README "Remedies").
func settleRemedy(res *Result) {
	if res.Status != StatusFail {
		res.Remedy = ""
		return
	}
	for _, d := range res.Details {
		if d.Status == StatusFail {
			res.Remedy = MostDrastic(res.Remedy, d.Remedy)
		}
	}
}

// fault names one way a check fails: a row of remedyTable. Judges set the remedy of a
// failing detail or result with remedyOf(fault), so that every failure maps to one
// documented row (TestRemedyTable holds each fault constant to one row).
type fault string

// The faults, "<check>/<what>"; generic ones start with a word that is no check id.
const (
	faultTimeout       fault = "any/timeout"
	faultSlurmTimeout  fault = "any/slurm_files_timeout"
	faultNVMLDriver    fault = "any/nvml_driver"
	faultNVMLMissing   fault = "any/nvml_not_installed"
	faultGresNoDriver  fault = "gres_devices/driver_files_missing"
	faultGresMissing   fault = "gres_devices/file_missing"
	faultGresWrongFile fault = "gres_devices/file_wrong"

	faultGPULost       fault = "gpu_count/gpu_lost"
	faultGPUNeedsReset fault = "gpu_count/reset_required"
	faultGPUOffBus     fault = "gpu_count/not_on_pci"
	faultGPUsShort     fault = "gpu_count/fewer_than_slurm"
	faultGPUsExtra     fault = "gpu_count/more_than_slurm"

	faultPCIeWidth fault = "pcie_link/width"

	faultFMNotInstalled fault = "fabric_manager/not_installed"
	faultFMVersion      fault = "fabric_manager/version"
	faultFMService      fault = "fabric_manager/service"
	faultFMFabric       fault = "fabric_manager/fabric"

	faultRemapFailed     fault = "gpu_memory_errors/remap_failed"
	faultRetiredLimit    fault = "gpu_memory_errors/retired_pages_limit"
	faultUncorrectable   fault = "gpu_memory_errors/uncorrectable"
	faultRemapPending    fault = "gpu_memory_errors/remap_pending"
	faultRetirePending   fault = "gpu_memory_errors/retirement_pending"
	faultECCOff          fault = "gpu_memory_errors/ecc_off"
	faultECCOnAfterReset fault = "gpu_memory_errors/ecc_on_after_reset"

	faultNVLinkDown fault = "nvlink/inactive"

	faultRecoveryReset  fault = "gpu_recovery_action/reset"
	faultRecoveryReboot fault = "gpu_recovery_action/reboot"
	faultRecoveryIMEX   fault = "gpu_recovery_action/recover_imex"

	faultClocksThermal    fault = "gpu_clocks/thermal"
	faultClocksPowerBrake fault = "gpu_clocks/power_brake"
	faultClocksConfigured fault = "gpu_clocks/configured"
	faultThermalHot       fault = "gpu_thermal/hot"

	faultIMEXService fault = "imex/service"
	faultIMEXChannel fault = "imex/channel"

	faultIBNoLink   fault = "ib_ports/no_link"
	faultIBDisabled fault = "ib_ports/disabled"
	faultIBNotSM    fault = "ib_ports/not_active"
	faultIBSlow     fault = "ib_ports/slow"
	faultIBMissing  fault = "ib_ports/missing"
	faultIBFlaps    fault = "ib_flaps/flaps"

	faultRateECC    fault = "gpu_error_rates/ecc_corrected"
	faultRateNVLink fault = "gpu_error_rates/nvlink"
	faultRatePCIe   fault = "gpu_error_rates/pcie_replay"

	faultLeftProcess fault = "job_leftovers/process"
	faultLeftMemory  fault = "job_leftovers/memory"

	faultNCCLCorrupt   fault = "nccl_allreduce/corruption"
	faultNCCLSlow      fault = "nccl_allreduce/low_busbw"
	faultNCCLFailed    fault = "nccl_allreduce/run_failed"
	faultNCCLMissing   fault = "nccl_allreduce/not_installed"
	faultModelMismatch fault = "gpu_models/mismatch"

	faultXIDReset     fault = "xid_errors/reset"
	faultXIDResetSoon fault = "xid_errors/reset_when_convenient"
	faultXIDReboot    fault = "xid_errors/reboot"
	faultXIDSupport   fault = "xid_errors/contact_support"
	faultXIDSoftware  fault = "xid_errors/software"
	faultXID154Reset  fault = "xid_errors/recovery_reset"
	faultXID154Reboot fault = "xid_errors/recovery_reboot"

	faultMemoryLost   fault = "node_inventory/memory_lost"
	faultMemoryConfig fault = "node_inventory/memory_config"
	faultSocketLost   fault = "node_inventory/socket_lost"
	faultCPUsConfig   fault = "node_inventory/cpus_config"
)

// remedyRow is one row of the remedy table: a way checks fail, the remedy, and why.
type remedyRow struct {
	fault  fault
	checks []string // the checks that fail this way; nil: every check
	when   string   // the failure, as `nodecheck explain` and the README print it
	remedy Remedy
	source string // where the mapping comes from
}

// Sources the table cites more than once.
const (
	srcXIDCatalog = "NVIDIA XID catalog, Resolution Bucket (Immediate Action), https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
	srcDCGMNext   = "DCGM's next steps for its failure codes (dcgm_errors.h, DCGM_FR_*_NEXT)"
	srcADR050     = "NVIDIA NVSentinel ADR-050 (docs/designs/050-system-services-monitor-scope.md): FabricManagerServiceDown and FabricStateUnhealthy -> RESTART_BM, the cheapest first try"
	srcIBSysfs    = "the IBTA port states as sysfs shows them (Linux ABI sysfs-class-infiniband)"
)

// remedyTable is the one table of remedies (README "Remedies" prints it): every way a check
// fails, in run order of the checks, then the generic rows.
var remedyTable = []remedyRow{
	{faultGresNoDriver, []string{idGresDevices}, "an NVIDIA device file gres.conf lists (/dev/nvidiaN, /dev/nvidiactl) is missing: the driver did not create it", RemedyReboot,
		"the NVIDIA driver creates /dev/nvidiaN for every GPU it has and /dev/nvidiactl when it loads (nvidia-modprobe, udev, nvidia-persistenced at boot), in /dev, which a boot makes afresh"},
	{faultGresMissing, []string{idGresDevices}, "another device file gres.conf lists is missing: a MIG capability under /dev/nvidia-caps, another GRES's file", RemedyAdmin,
		"gres.conf(5) File=: the files must exist on the node; set up MIG (nvidia-smi mig) or fix gres.conf"},
	{faultGresWrongFile, []string{idGresDevices}, "a device file is not a character device, or has another major or minor than its name says", RemedyAdmin,
		"something other than the driver made it (a copy, a script): find it, remove the file and let the driver create it"},

	{faultGPULost, []string{idGPUCount}, "a GPU on the PCI bus that NVML cannot use (ERROR_GPU_IS_LOST: fallen off the bus) or does not list", RemedyReboot,
		"XID 79 \"GPU has fallen off the bus\": RESTART_BM (" + srcXIDCatalog + ")"},
	{faultGPUNeedsReset, []string{idGPUCount}, "NVML answers a GPU with ERROR_RESET_REQUIRED", RemedyResetGPU,
		"nvml.h NVML_ERROR_RESET_REQUIRED: \"The GPU requires a reset before it can be used again\""},
	{faultGPUOffBus, []string{idGPUCount}, "NVML lists a GPU that the PCI bus no longer shows", RemedyReboot,
		"a GPU the driver holds but the bus lost is fallen off the bus: XID 79, RESTART_BM (" + srcXIDCatalog + ")"},
	{faultGPUsShort, []string{idGPUCount}, "NVML and the PCI bus agree on fewer GPUs than slurm.conf gives the node (and than gres.conf lists): a GPU absent from the PCI bus", RemedyService,
		"a GPU that does not enumerate on the PCI bus is a board, riser or slot to reseat or replace (XID 79's investigatory action: CONTACT_SUPPORT)"},
	{faultGPUsExtra, []string{idGPUCount}, "slurm.conf gives the node another GPU count than NVML and the PCI bus show, and gres.conf lists as many GPU files as they show", RemedyAdmin,
		"slurm.conf(5) Gres=: the count is configuration; fix the NodeName line"},

	{faultPCIeWidth, []string{idPCIeLink}, "a GPU, NVSwitch or HCA runs its PCIe link narrower than its max width (or min_width)", RemedyService,
		"the width is trained from the physical lanes: reseat the card, riser or cable (DCGM: \"Reconnect PCIe card\", DCGM_FR_PCI_REPLAY_RATE_NEXT; its diag's pcie plugin flags link downtraining as a hardware fault)"},

	{faultFMNotInstalled, []string{idFabricManager}, "Fabric Manager is not installed on a node with NVSwitches", RemedyAdmin,
		"Fabric Manager user guide, Installation: NVSwitch systems need the nvidia-fabricmanager package of the driver's version"},
	{faultFMVersion, []string{idFabricManager}, "Fabric Manager and the driver have different versions", RemedyAdmin,
		"Fabric Manager user guide: FM must match the driver's version exactly, else it refuses to start (CUDA error 802)"},
	{faultFMService, []string{idFabricManager}, "the Fabric Manager service is not active", RemedyReboot, srcADR050},
	{faultFMFabric, []string{idFabricManager}, "a GPU's fabric registration is not COMPLETED, or completed with an error", RemedyReboot,
		srcADR050 + "; on HGX the GPUs and NVSwitches are set up together when FM starts, which a reboot redoes"},
	{faultNVMLDriver, []string{idGPUCount, idFabricManager}, "NVML does not initialise where GPUs are expected (ERROR_DRIVER_NOT_LOADED, ERROR_LIB_RM_VERSION_MISMATCH after a driver upgrade, other errors)", RemedyReboot,
		"nvml.h: the kernel module is not loaded, or differs from the library installed: a boot loads the installed driver"},
	{faultNVMLMissing, []string{idGPUCount, idFabricManager}, "NVML is not there to ask: ERROR_LIBRARY_NOT_FOUND (no driver installed), ERROR_NO_PERMISSION, or a nodecheck built without NVML", RemedyAdmin,
		"software to install or a permission to fix; no reboot installs a driver"},

	{faultRemapFailed, []string{idGPUMemoryErrors}, "row remapping failed", RemedyService,
		"NVIDIA's RMA policy: \"the RMA criteria is met when the row-remapping failure flag is set\", https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/rma-policy-thresholds-for-row-remapping.html"},
	{faultRetiredLimit, []string{idGPUMemoryErrors}, "retired pages at or above retired_pages_limit (63)", RemedyService,
		"DCGM_LIMIT_MAX_RETIRED_PAGES, matched to the field diagnostic; DCGM_FR_RETIRED_PAGES_LIMIT_NEXT: run a field diagnostic (RMA)"},
	{faultUncorrectable, []string{idGPUMemoryErrors}, "uncorrectable ECC errors since the driver loaded (volatile)", RemedyResetGPU,
		"DCGM_FR_VOLATILE_DBE_DETECTED_NEXT: \"Drain the GPU and reset it or reboot the node\""},
	{faultRemapPending, []string{idGPUMemoryErrors}, "a row remapping pending", RemedyResetGPU,
		"a remap \"will happen at the next GPU reset\", https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html"},
	{faultRetirePending, []string{idGPUMemoryErrors}, "a page retirement pending (before Ampere)", RemedyResetGPU,
		"DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS_NEXT: \"Drain the GPU and reset it or reboot the node\"; https://docs.nvidia.com/deploy/dynamic-page-retirement/"},
	{faultECCOff, []string{idGPUMemoryErrors}, "ECC off on a GPU that has it, and not set to turn on", RemedyAdmin,
		"DCGM_FR_ECC_DISABLED_NEXT: enable it with nvidia-smi -i N -e 1, then a reset: a setting a person chooses"},
	{faultECCOnAfterReset, []string{idGPUMemoryErrors}, "ECC off until the next reset, which turns it on", RemedyResetGPU,
		"nvidia-smi -e takes effect at the next GPU reset (DCGM_FR_ECC_DISABLED_NEXT)"},

	{faultNVLinkDown, []string{idNVLink}, "an NVLink inactive, or fewer NVLinks than the GPU's model has", RemedyResetGPU,
		"XID 74 in the catalog: \"A GPU reset or node reboot is needed to clear this error\", and a vendor case only if that fails; DCGM_FR_NVLINK_DOWN_NEXT: reset the GPU, rerun diagnostics"},

	{faultRecoveryReset, []string{idGPURecoveryAction}, "the driver's recovery action is GPU_RESET, DRAIN_AND_RESET or DRAIN_P2P", RemedyResetGPU,
		"NVIDIA's recovery action flag (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html): GPU_RESET \"requires a reset to recover\"; DRAIN_P2P asks to quiesce peer-to-peer traffic, then names another action, and a drained GPU's reset is what the repair flow takes first; as XID 154 of the same actions"},
	{faultRecoveryReboot, []string{idGPURecoveryAction}, "the driver's recovery action is NODE_REBOOT, SYSTEM_REBOOT, BUS_RESET, or one nodecheck does not know", RemedyReboot,
		"NVIDIA's recovery action flag: NODE_REBOOT, a fault that \"may have left the OS in an inconsistent state\"; nvml.h (NVML 615) SYSTEM_REBOOT \"Reboot the system\" and BUS_RESET \"Reset the GPU's PCIe bus\", more than the GPU reset reset_gpu names, which a reboot does; a reboot also clears an action nodecheck cannot read"},
	{faultRecoveryIMEX, []string{idGPURecoveryAction}, "the driver's recovery action is RECOVER_IMEX_DOMAIN", RemedyAdmin,
		"nvml.h NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN: the IMEX domain, a service across the NVLink domain's nodes, is recovered by a person (nvidia-imex on every node of the domain), not by this node's reset or reboot"},

	{faultClocksThermal, []string{idGPUClocks}, "a GPU in HW slowdown or HW thermal slowdown (or a thermal reason the site fails)", RemedyService,
		"DCGM_FR_CLOCK_THROTTLE_THERMAL_NEXT (DEBUG_COOLING_MSG): verify the cooling, including fans, thermal interface material and airflow; nvml.h lists temperature first among HW slowdown's causes"},
	{faultClocksPowerBrake, []string{idGPUClocks}, "a GPU in HW power brake slowdown", RemedyService,
		"nvml.h: \"External Power Brake Assertion being triggered (e.g. by the system power supply)\": a power supply or the board's power delivery to check and replace"},
	{faultClocksConfigured, []string{idGPUClocks}, "a GPU with a clocks event reason the site put in fail (a software or policy reason)", RemedyAdmin,
		"a reason that is the GPU's own power management (power cap, application clocks, sync boost) fails only by the site's choice, and a setting changes it"},
	{faultThermalHot, []string{idGPUThermal}, "a GPU at or over its slowdown or shutdown temperature", RemedyService,
		"DCGM_FR_CLOCK_THROTTLE_THERMAL_NEXT (DEBUG_COOLING_MSG): verify the cooling; a GPU over its own slowdown threshold is its heatsink, fans, coolant or airflow"},

	{faultIMEXService, []string{idIMEX}, "the IMEX service is not active on a multi-node NVLink tray", RemedyAdmin,
		"NVIDIA's MNNVL user guide, IMEX: the service runs on every node of the NVLink domain from its configuration (nodes_config.cfg): a person checks the configuration and the domain's nodes, then restarts it"},
	{faultIMEXChannel, []string{idIMEX}, "an IMEX channel device is missing or not a character device", RemedyAdmin,
		"the driver makes channel 0 only when loaded with NVreg_CreateImexChannel0=1 (or nvidia-modprobe -i 0 makes it): configuration, or Slurm's switch/nvidia_imex plugin"},

	{faultIBNoLink, []string{idIBPorts}, "a port without a physical link: phys_state Polling or any other but LinkUp, and Disabled on a RoCE (Ethernet) port", RemedyService,
		srcIBSysfs + ": Polling is a port seeking a peer; the RoCE drivers report Disabled for a netdev without carrier (drivers/infiniband/hw/mlx5/main.c, mlx5_query_port_roce; ip link tells one set down by hand): reseat or replace the cable or transceiver, or fix the switch port"},
	{faultIBDisabled, []string{idIBPorts}, "an InfiniBand port Disabled (phys_state 3)", RemedyAdmin,
		srcIBSysfs + ": Disabled is a port turned off by management: enable it again (ibportstate, mlxlink) after finding who disabled it and why (the subnet manager's log)"},
	{faultIBNotSM, []string{idIBPorts}, "a port LinkUp but not ACTIVE (DOWN, INIT, ARMED)", RemedyAdmin, srcIBSysfs + ": INIT and ARMED are a link the subnet manager has not activated: check the subnet manager"},
	{faultIBSlow, []string{idIBPorts}, "a port below min_rate_gbps", RemedyService,
		"a link trained down runs on a cable or transceiver that cannot hold the speed: reseat or replace it (mlxlink shows the errors)"},
	{faultIBMissing, []string{idIBPorts}, "fewer ports than expected_ports: an HCA vanished", RemedyService,
		"an HCA that does not enumerate is reseated, reflashed (mlxfwmanager) or replaced"},
	{faultIBFlaps, []string{idIBFlaps}, "a port that went down and up again too often in the window (history)", RemedyService,
		"a link that keeps going down and up is a cable, transceiver or switch port to reseat or replace"},

	{faultRateECC, []string{idGPUErrorRates}, "correctable ECC errors climbing at the fail rate (history)", RemedyService,
		"the XID catalog's XID 92, high single-bit ECC error rate: investigatory action CONTACT_SUPPORT; DCGM's DCGM_FR_SBE_VIOLATION: run a field diagnostic (dcgmi diag -r 3) and replace the GPU when it persists"},
	{faultRateNVLink, []string{idGPUErrorRates}, "NVLink CRC, replay or recovery errors climbing at the fail rate (history)", RemedyResetGPU,
		"the XID catalog's XID 74 (NVLink error): \"A GPU reset or node reboot is needed to clear this error\"; DCGM_FR_NVLINK_ERROR_THRESHOLD: a reset retrains the links, a vendor case if they keep erring"},
	{faultRatePCIe, []string{idGPUErrorRates}, "PCIe replays climbing at the fail rate (history)", RemedyService,
		"DCGM_FR_PCI_REPLAY_RATE: \"Reconnect PCIe card. Run system side PCIE diagnostic utilities to verify hops off the GPU board. If issue is on the board, run the field diagnostic.\""},

	{faultLeftProcess, []string{idJobLeftovers}, "a process still on one of the job's GPUs after it (or before it, in a prolog)", RemedyReboot,
		"it escaped or outlived slurmstepd's kill (slurm.conf(5) UnkillableStepTimeout drains a node whose processes do not die), and nvidia-smi(1) -r refuses a GPU a process still uses: the repair that always clears it is a reboot (a person may kill it first)"},
	{faultLeftMemory, []string{idJobLeftovers}, "GPU memory held with no process on the GPU", RemedyResetGPU,
		"nvidia-smi(1) -r resets the GPU and frees its memory once nothing uses it"},

	{faultNCCLCorrupt, []string{idNCCLAllReduce}, "all_reduce_perf finds wrong or out of bounds data", RemedyService,
		"wrong data from a node is a faulty GPU or memory: DCGM_FR_MEMORY_MISMATCH_NEXT, run a field diagnostic"},
	{faultNCCLSlow, []string{idNCCLAllReduce}, "bus bandwidth below the threshold", RemedyService,
		"DCGM_FR_LOW_BANDWIDTH_NEXT: check the threshold, and if the low figure is consistent, run a field diagnostic"},
	{faultNCCLFailed, []string{idNCCLAllReduce}, "all_reduce_perf failed (exit code, a failure line) or ran out of time; the reset concerns every GPU of the node", RemedyResetGPU,
		"DCGM_FR_CUDA_API_NEXT: \"Check DCGM and system logs for errors. Reset GPU. ... Rerun diagnostics.\""},
	{faultNCCLMissing, []string{idNCCLAllReduce}, "all_reduce_perf is not installed and required = true", RemedyAdmin, "software to install"},

	{faultModelMismatch, []string{idGPUModels}, "the GPUs are not the model slurm.conf's Feature= or Gres type says", RemedyAdmin,
		"Feature= and Gres types are configuration: correct the NodeName line, or fit the board it names"},

	{faultXIDReset, []string{idXIDErrors}, "an XID the catalog resolves with RESET_GPU, or with a workflow that says a reset clears it (48, 74, 144-150)", RemedyResetGPU, srcXIDCatalog},
	{faultXIDResetSoon, []string{idXIDErrors}, "an XID the catalog asks no immediate node action for, failed by fail_xids or repeats: 63 (row remap: the driver says \"reset gpu to activate\"), 94 (\"reset the GPU when convenient\"), IGNORE/IGNORE ones, and XIDs the catalog does not list", RemedyResetGPU,
		srcXIDCatalog + " (trigger conditions of 63, 64, 94); the cheapest remedy that clears the GPU's state, repeated repairs escalate"},
	{faultXIDReboot, []string{idXIDErrors}, "an XID the catalog resolves with RESTART_BM or RESTART_VM (79 fallen off the bus)", RemedyReboot, srcXIDCatalog},
	{faultXIDSupport, []string{idXIDErrors}, "an XID whose action is CONTACT_SUPPORT or CHECK_MECHANICALS (61, 54, the unused ones), or one with no immediate node action whose investigatory action is CONTACT_SUPPORT (92, 43, 68)", RemedyService,
		srcXIDCatalog + ", and its Investigatory Action column"},
	{faultXIDSoftware, []string{idXIDErrors}, "an XID whose action is UPDATE_SWFW, or one with no immediate node action whose investigatory action is software (13, 31: WORKFLOW_XID_13/31, CHECK_APP/CUDA, INVESTIGATE_SW; 45: RESTART_FM)", RemedyAdmin,
		srcXIDCatalog + ", and its Investigatory Action column"},
	{faultXID154Reset, []string{idXIDErrors}, "XID 154 saying GPU Reset Required, Drain and Reset, Drain P2P, or None", RemedyResetGPU,
		"XID 154 \"summarizes the recovery action required for other Xids\" (" + srcXIDCatalog + ")"},
	{faultXID154Reboot, []string{idXIDErrors}, "XID 154 saying Node Reboot Required, or an action nodecheck cannot read", RemedyReboot,
		"XID 154 (" + srcXIDCatalog + "); a reboot also clears any action nodecheck could not read"},

	{faultMemoryLost, []string{idNodeInventory}, "usable memory 2% or more below RealMemory: a DIMM lost at boot", RemedyService,
		"a DIMM is 2% or more of a node's memory (48 DIMMs at most on two sockets); the kernel's and firmware's share is less: dmidecode and the BMC's log name the DIMM to reseat or replace"},
	{faultMemoryConfig, []string{idNodeInventory}, "usable memory less than 2% below RealMemory", RemedyAdmin,
		"RealMemory set above MemTotal, which firmware and kernel reservations keep under the installed memory: set it from slurmd -C"},
	{faultSocketLost, []string{idNodeInventory}, "fewer sockets than slurm.conf says", RemedyService, "a CPU package that did not come up is a board or CPU fault"},
	{faultCPUsConfig, []string{idNodeInventory}, "fewer CPUs, cores per socket or threads per core than slurm.conf says", RemedyAdmin,
		"CPUs offline, maxcpus= or nosmt on the kernel command line, or cores or SMT off in the BIOS: configuration, or a NodeName line to correct"},

	{faultSlurmTimeout, []string{idGresDevices, idGPUCount, idJobLeftovers, idGPUModels, idNodeInventory, idGresAffinity}, "reading slurm.conf or gres.conf did not end in time", RemedyAdmin,
		"the file system that holds Slurm's configuration (NFS, slurmd's configless cache) hangs: a person fixes the mount"},
	{faultTimeout, nil, "a check, or a read of the node (NVML, sysfs, /dev, dmesg, systemd), did not end in time, or the run's budget ran out", RemedyReboot,
		"a wedged GPU blocks NVML calls for minutes (go-nvml gives no way to cancel one), and a task blocked in the kernel (state D) cannot be killed: only a reboot clears either"},
}

// rowOf is f's row of remedyTable; ok is false for a fault the table lacks (a bug
// TestRemedyTable catches).
func rowOf(f fault) (remedyRow, bool) {
	i := slices.IndexFunc(remedyTable, func(r remedyRow) bool { return r.fault == f })
	if i < 0 {
		return remedyRow{}, false
	}
	return remedyTable[i], true
}

// remedyOf is the remedy of fault f ("" for a fault the table lacks).
func remedyOf(f fault) Remedy {
	r, _ := rowOf(f)
	return r.remedy
}

// failDetail makes d a failing detail with f's remedy.
func failDetail(d *Detail, f fault) {
	d.Status = StatusFail
	d.Remedy = remedyOf(f)
}

// rowsFor are the rows of the check id, its own first, then the generic ones.
func rowsFor(id string) []remedyRow {
	var own, generic []remedyRow
	for _, r := range remedyTable {
		switch {
		case r.checks == nil:
			generic = append(generic, r)
		case slices.Contains(r.checks, id):
			own = append(own, r)
		}
	}
	return append(own, generic...)
}

// RemedyRow is one row of the remedy table as the README prints it.
type RemedyRow struct {
	Checks  []string // nil: every check
	Failure string
	Remedy  Remedy
	Source  string
}

// RemedyTable returns the remedy table, in its order.
func RemedyTable() []RemedyRow {
	out := make([]RemedyRow, len(remedyTable))
	for i, r := range remedyTable {
		out[i] = RemedyRow{Checks: slices.Clone(r.checks), Failure: r.when, Remedy: r.remedy, Source: r.source}
	}
	return out
}

// nvmlInitFault is the fault of NVML failing to initialise with init (GPUInventory.Init)
// where GPUs are expected: software to install or a permission where it is not there to
// ask, else the driver to load.
func nvmlInitFault(init string) fault {
	switch init {
	case "ERROR_LIBRARY_NOT_FOUND", "ERROR_NO_PERMISSION", "ERROR_FUNCTION_NOT_FOUND", node.InitNotBuilt:
		return faultNVMLMissing
	}
	return faultNVMLDriver
}

// nvmlDeviceFault is the fault of a GPU NVML lists but cannot use (node.GPU.Error).
func nvmlDeviceFault(err string) fault {
	if err == "ERROR_RESET_REQUIRED" {
		return faultGPUNeedsReset
	}
	return faultGPULost
}

// GPUOfDevice reads the PCI bus id out of a GPU detail's Device ("gpu 3 (0000:9b:00.0)", or
// "gpu 0000:9b:00" where NVML could not name the GPU): the device a reset_gpu remedy
// concerns. ok is false for a device that names no bus id.
func GPUOfDevice(device string) (busID string, ok bool) {
	rest, found := strings.CutPrefix(device, "gpu ")
	if !found {
		return "", false
	}
	if _, in, paren := strings.Cut(rest, " ("); paren {
		rest = strings.TrimSuffix(in, ")")
	}
	if strings.Count(rest, ":") < 2 {
		return "", false
	}
	return rest, true
}
