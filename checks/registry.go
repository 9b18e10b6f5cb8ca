package checks

import (
	"fmt"
	"strings"
)

// Adding a check that reads facts node.Facts already has touches these files, and only these
// (counted on a throwaway check, demo_uptime, reading /proc/uptime: 77 files, all below):
//
//   - checks/<id>.go: the check. Its type implements Check: ID, Description, Section (its
//     [checks.<id>] keys and defaults), Explain, Faults (its fault constants, "<id>/<what>",
//     with their remedy rows, and any shared fault of remedy.go it gives), Run. A check that
//     judges over time also implements overTime (observes, judgementRemedy); one that reads
//     NVML, gpuFactsUser (GPUFields).
//   - checks/<id>_test.go: its judge's table test, calling assertRemedies.
//   - testdata/golden/explain/<id>.txt: its explanation (go test ./cmd/nodecheck -update).
//   - this file: one line in ordered.
//
// and the fixtures that list every check, each regenerated but the first:
//
//   - testdata/nodecheck.toml, the example config, written by hand: a [checks.<id>] section
//     setting every key (TestExampleConfig says which are missing).
//   - checks/testdata/config/default.golden (go test ./checks -update).
//   - README.md's remedies table, where the check has rows of its own (go test ./checks
//     -update).
//   - testdata/golden/explain/index.txt, testdata/golden/list.json, and the full run reports
//     testdata/golden/run/* and testdata/golden/metrics/run-* (go test ./cmd/nodecheck
//     -update): the new check's line, and the count of checks.
//
// No other check's explanation or golden changes, and no list of check ids elsewhere needs
// an edit: the remedy table, explain, the history step and the repair read the checks'
// declarations.

// ordered is the run order: cheap and decisive first. It is the one place a reviewer reads
// to know what runs, and when.
var ordered = []Check{
	gresDevices{},
	gpuCount{},
	pcieLink{},
	fabricManager{},
	imex{},
	gpuMemoryErrors{},
	gpuRecoveryAction{},
	nvLink{},
	gpuClocks{},
	gpuThermal{},
	gpuPowerLimit{},
	gpuPersistence{},
	ibPorts{},
	fsMounts{},
	fsUsage{},
	fileTests{},
	fileContents{},
	memory{},
	services{},
	interfaces{},
	hostMemoryErrors{},
	machineChecks{},
	loadAverage{},
	kernelLogPatterns{},
	jobLeftovers{},
	gpuIsolation{},
	strayProcesses{},
	ncclAllReduce{},
	gpuModels{},
	xidErrors{},
	gpuErrorRates{},
	dcgmHealth{},
	ibFlaps{},
	nodeInventory{},
	scratchDisk{},
	gresAffinity{},
	dcgmDiag{},
	validationAge{},
	siteChecks{},
}

// All returns every check in run order.
func All() []Check { return append([]Check(nil), ordered...) }

// Select returns the named checks in run order (not in the order asked), so that a partial
// run behaves like the same checks in a full one. An unknown id is an error listing the known.
func Select(ids []string) ([]Check, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		if _, ok := byID(id); !ok {
			return nil, fmt.Errorf("unknown check %q: known checks are %s", id, strings.Join(IDs(), ", "))
		}
		want[id] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("no check named: use --all or --check with one of %s", strings.Join(IDs(), ", "))
	}
	var out []Check
	for _, c := range ordered {
		if want[c.ID()] {
			out = append(out, c)
		}
	}
	return out, nil
}

// IDs lists the check ids in run order.
func IDs() []string {
	ids := make([]string, len(ordered))
	for i, c := range ordered {
		ids[i] = c.ID()
	}
	return ids
}

func byID(id string) (Check, bool) {
	for _, c := range ordered {
		if c.ID() == id {
			return c, true
		}
	}
	return nil, false
}
