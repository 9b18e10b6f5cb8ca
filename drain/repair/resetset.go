package repair

import (
	"fmt"
	"slices"
	"strings"
)

// GPU architectures, in the words checks.GPUArchitecture gives a GPU's NVML name (drain never
// imports checks: the CLI hands them over, and cmd/nodecheck's TestArchitectureWords keeps the
// two lists the same). "" is a model the built-in table does not know.
const (
	ArchPascal    = "pascal"
	ArchVolta     = "volta"
	ArchTuring    = "turing"
	ArchAmpere    = "ampere"
	ArchAda       = "ada"
	ArchHopper    = "hopper"
	ArchBlackwell = "blackwell"
)

// Architectures lists the architectures ResetSet knows, oldest first.
func Architectures() []string {
	return []string{ArchPascal, ArchVolta, ArchTuring, ArchAmpere, ArchAda, ArchHopper, ArchBlackwell}
}

// archAtLeast reports whether arch is known and is base or later.
func archAtLeast(arch, base string) bool {
	i, j := slices.Index(Architectures(), arch), slices.Index(Architectures(), base)
	return i >= 0 && i >= j
}

// Fabric is what ResetSet needs to know of the node's NVLink fabric, from the health run's
// facts: the NVSwitches on the PCI bus and Fabric Manager's service state as the
// fabric_manager check read it.
type Fabric struct {
	// NVSwitches is how many NVSwitches the PCI listing shows; -1 when it could not be listed.
	NVSwitches int
	// FabricManager is systemd's state of the Fabric Manager service ("active", "inactive",
	// "failed", ...); "" when the run did not learn it (fabric_manager skipped, disabled or
	// could not ask systemd).
	FabricManager string
}

// ResetSet is the set of GPUs the driver resets in one command for a reset of want, with why
// they go together; or, with set nil, why no reset can be done (the policy then reboots).
// It follows nvidia-smi(1) for -r/--gpu-reset (docs/repairs.md, step 5):
//
//   - a GPU without NVLink, or NVIDIA Ampere and later with NVLink, can be reset alone;
//   - on an NVSwitch system with Ampere GPUs (HGX A100) only while Fabric Manager runs; from
//     Hopper on an NVSwitch system no longer needs Fabric Manager for a reset;
//   - otherwise (Fabric Manager not running where it is needed, or a GPU before Ampere:
//     V100, P100) every GPU with an NVLink connection to a GPU being reset goes into the same
//     command, and no compute application may run on any of them.
//
// all is every GPU NVML listed. A GPU has an NVLink connection when it has an active link,
// or, on a node with NVSwitches, any link at all (the links of an Ampere GPU train only once
// Fabric Manager configured the switches). The NVLink peers are not read (that is a reading
// of its own, which a health run does not make): the set is every GPU of the node with an
// NVLink connection, which holds every peer of every GPU in it. What is not known (a GPU's
// links or architecture, the NVSwitches, Fabric Manager's state) is taken the safe way: the
// set with the peers, and no reset where the peers cannot be told.
func ResetSet(want, all []GPU, fab Fabric) (set []GPU, why string, refused string) {
	var together []string
	for _, g := range want {
		if g.Links < 0 {
			return nil, "", fmt.Sprintf("the NVLinks of GPU %s were not read: the GPUs to reset with it cannot be told", g.Bus)
		}
		if !connected(g, fab) {
			continue
		}
		if !resetsAlone(g, fab) {
			together = append(together, togetherWhy(g, fab))
		}
	}
	if len(together) == 0 {
		return slices.Clone(want), "", ""
	}
	set = slices.Clone(want)
	for _, g := range all {
		if slices.ContainsFunc(set, func(s GPU) bool { return s.Bus == g.Bus }) {
			continue
		}
		if g.Links < 0 {
			return nil, "", fmt.Sprintf("%s, and the NVLinks of GPU %s were not read", together[0], g.Bus)
		}
		if connected(g, fab) {
			set = append(set, g)
		}
	}
	for _, g := range set {
		switch {
		case g.Processes < 0:
			return nil, "", fmt.Sprintf("%s, and NVML could not list the processes on GPU %s", together[0], g.Bus)
		case g.Processes > 0:
			return nil, "", fmt.Sprintf("%s, and %d process(es) hold GPU %s, which the reset would take down", together[0], g.Processes, g.Bus)
		}
	}
	slices.Sort(together)
	return set, strings.Join(slices.Compact(together), "; "), ""
}

// connected reports whether g has an NVLink connection: an active link, or any link on a
// node with NVSwitches (or where the NVSwitches could not be listed).
func connected(g GPU, fab Fabric) bool {
	return g.ActiveLinks > 0 || g.Links > 0 && fab.NVSwitches != 0
}

// resetsAlone reports whether g, which has an NVLink connection, can be reset alone: Hopper
// and later always; Ampere (and Ada) without NVSwitches, or on NVSwitches while Fabric
// Manager runs.
func resetsAlone(g GPU, fab Fabric) bool {
	switch {
	case archAtLeast(g.Arch, ArchHopper):
		return true
	case !archAtLeast(g.Arch, ArchAmpere):
		return false
	}
	return fab.NVSwitches == 0 || fab.NVSwitches > 0 && fab.FabricManager == "active"
}

// togetherWhy says why g, which cannot be reset alone, takes its NVLink peers with it.
func togetherWhy(g GPU, fab Fabric) string {
	switch {
	case g.Arch == "":
		return fmt.Sprintf("GPU %s is a model nodecheck does not know the architecture of, with NVLink: its NVLink peers are reset with it", g.Bus)
	case !archAtLeast(g.Arch, ArchAmpere):
		return fmt.Sprintf("GPU %s is %s, before Ampere, with NVLink: the driver resets it only with its NVLink peers", g.Bus, archName(g.Arch))
	case fab.NVSwitches < 0:
		return "the NVSwitches could not be listed: Ampere GPUs on NVSwitches reset alone only while Fabric Manager runs"
	case fab.FabricManager == "":
		return "Fabric Manager's state is unknown (fabric_manager did not read it): Ampere GPUs on NVSwitches reset alone only while it runs"
	}
	return fmt.Sprintf("Fabric Manager is not running (service %s): Ampere GPUs on NVSwitches reset alone only while it runs", fab.FabricManager)
}

func archName(arch string) string {
	if arch == "" {
		return "of an unknown architecture"
	}
	return strings.ToUpper(arch[:1]) + arch[1:]
}
