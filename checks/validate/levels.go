package validate

import (
	"fmt"
	"time"
)

// Level is how hard a validation exercises the node.
type Level string

// The levels, cheapest first. Each is a fixed list of tests (Tests) with a time budget on an
// 8-GPU node ([validate.budget]; docs/validation.md).
const (
	LevelQuick  Level = "quick"   // about 10 minutes: DCGM r2, nvbandwidth, NCCL
	LevelFull   Level = "full"    // about 45 minutes: DCGM r3, ib_write_bw per HCA, NCCL over the network path
	LevelBurnIn Level = "burn-in" // hours, set by the site: DCGM r4, gpu_burn, NCCL repeated
)

// Levels lists the levels, cheapest first.
func Levels() []Level { return []Level{LevelQuick, LevelFull, LevelBurnIn} }

// ParseLevel reads a level's name.
func ParseLevel(s string) (Level, error) {
	for _, l := range Levels() {
		if s == string(l) {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown level %q: use quick, full or burn-in", s)
}

// The tests' names, as a report's tests list them.
const (
	TestDCGM        = "dcgm_diag"
	TestNCCL        = "nccl_allreduce"
	TestNCCLNet     = "nccl_allreduce_net"
	TestNVBandwidth = "nvbandwidth"
	TestIBWriteBW   = "ib_write_bw"
	TestGPUBurn     = "gpu_burn"
)

// spec is one test of a level: which tool, with what, within how long.
type spec struct {
	name string
	// dcgmLevel is dcgmi diag's -r for TestDCGM.
	dcgmLevel int
	// timeout bounds the test; the level's budget bounds it too. For gpu_burn it is added
	// to the configured burn-in time.
	timeout time.Duration
}

// Timeouts of the tests on an 8-GPU node. DCGM's user guide gives its run levels as about 2
// minutes (r2), about 15 minutes (r3) and 1-2 hours (r4) ("Run Levels"), more where more GPUs
// share the node's power and PCIe; the others take a minute or two, given room to spare.
var levelTests = map[Level][]spec{
	LevelQuick: {
		{name: TestDCGM, dcgmLevel: 2, timeout: 5 * time.Minute},
		{name: TestNVBandwidth, timeout: 3 * time.Minute},
		{name: TestNCCL, timeout: 3 * time.Minute},
	},
	LevelFull: {
		{name: TestDCGM, dcgmLevel: 3, timeout: 35 * time.Minute},
		{name: TestNVBandwidth, timeout: 3 * time.Minute},
		{name: TestNCCL, timeout: 3 * time.Minute},
		{name: TestIBWriteBW, timeout: time.Minute}, // per HCA
		{name: TestNCCLNet, timeout: 5 * time.Minute},
	},
	LevelBurnIn: {
		{name: TestDCGM, dcgmLevel: 4, timeout: 2 * time.Hour},
		{name: TestGPUBurn, timeout: 5 * time.Minute},
		{name: TestNVBandwidth, timeout: 3 * time.Minute},
		{name: TestNCCL, timeout: 3 * time.Minute}, // per repeat
	},
}

// TestNames lists the tests of level l, in the order they run.
func TestNames(l Level) []string {
	var out []string
	for _, s := range levelTests[l] {
		out = append(out, s.name)
	}
	return out
}
