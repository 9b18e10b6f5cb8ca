package checks

import (
	"fmt"
	"strings"
)

// ordered is the run order: cheap and decisive first (DESIGN.md section 4). It is the one
// place a reviewer reads to know what runs, and when.
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
	jobLeftovers{},
	ncclAllReduce{},
	gpuModels{},
	xidErrors{},
	gpuErrorRates{},
	ibFlaps{},
	nodeInventory{},
	gresAffinity{},
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
