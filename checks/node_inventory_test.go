package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// dgxH100Inventory is a DGX H100: 2 × 56 cores × 2 threads, 2 TiB less kernel reservations.
var dgxH100Inventory = node.Inventory{Sockets: 2, CoresPerSocket: 56, ThreadsPerCore: 2, CPUs: 224, MemoryUsableMiB: 2063731}

func TestNodeInventory(t *testing.T) {
	const full = "NodeName=gpu01 CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2063000 State=UNKNOWN\n"
	tests := []struct {
		name        string
		slurmConf   string // without it: no slurm.conf
		inv         node.Inventory
		invErr      error
		wantStatus  Status
		wantSummary string // a prefix
		wantDetails []string
		fixed       [3]int // sockets, cores, threads in nodecheck.toml (NHC's check_hw_cpuinfo)
		cpuinfo     string // a file of testdata/cpuinfo as /proc/cpuinfo
	}{
		{name: "NHC's fixed counts as NHC counts /proc/cpuinfo", slurmConf: "NodeName=gpu01 Gres=gpu:8\n", inv: dgxH100Inventory, fixed: [3]int{2, 8, 16},
			cpuinfo: "x86-2s4c2t.txt", wantStatus: StatusOK, wantDetails: []string{"sockets ok", "cores ok", "threads ok"}},
		{name: "on aarch64 NHC counts every CPU a socket, and so does the check", slurmConf: "NodeName=gpu01 Gres=gpu:8\n", inv: dgxH100Inventory, fixed: [3]int{72, 72, 72},
			cpuinfo: "aarch64-72.txt", wantStatus: StatusOK, wantDetails: []string{"sockets ok", "cores ok", "threads ok"}},
		{name: "a fixed count below fails, as NHC's does", slurmConf: "NodeName=gpu01 Gres=gpu:8\n", inv: dgxH100Inventory, fixed: [3]int{0, 16, 0},
			cpuinfo: "x86-2s4c2t.txt", wantStatus: StatusFail, wantSummary: "actual CPU core count (8) does not match expected (16) in nodecheck.toml", wantDetails: []string{"cores fail"}},
		{name: "a fixed count above fails too (NHC compares with -ne)", slurmConf: full, inv: dgxH100Inventory, fixed: [3]int{0, 0, 4},
			cpuinfo: "x86-2s4c2t.txt", wantStatus: StatusFail, wantSummary: "actual CPU thread count (16) does not match expected (4)",
			wantDetails: []string{"CPUs ok", "Sockets ok", "CoresPerSocket ok", "ThreadsPerCore ok", "RealMemory ok", "threads fail"}},
		{name: "no /proc/cpuinfo to count", slurmConf: "NodeName=gpu01 Gres=gpu:8\n", inv: dgxH100Inventory, fixed: [3]int{2, 0, 0},
			wantStatus: StatusError, wantSummary: "/proc/cpuinfo could not be read", wantDetails: []string{"sockets error"}},
		{name: "exact match", slurmConf: full, inv: dgxH100Inventory, wantStatus: StatusOK,
			wantSummary: "as slurm.conf says: CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2063731",
			wantDetails: []string{"CPUs ok", "Sockets ok", "CoresPerSocket ok", "ThreadsPerCore ok", "RealMemory ok"}},
		{name: "fewer CPUs fail", slurmConf: full,
			inv:        node.Inventory{Sockets: 2, CoresPerSocket: 56, ThreadsPerCore: 1, CPUs: 112, MemoryUsableMiB: 2063731},
			wantStatus: StatusFail, wantSummary: "112, slurm.conf says CPUs=224: Slurm sets the node INVAL (+1 more)",
			wantDetails: []string{"CPUs fail", "Sockets ok", "CoresPerSocket ok", "ThreadsPerCore fail", "RealMemory ok"}},
		{name: "more CPUs warn", slurmConf: "NodeName=gpu01 CPUs=192 RealMemory=1000\n", inv: dgxH100Inventory,
			wantStatus: StatusWarn, wantSummary: "224, more than slurm.conf's CPUs=192: Slurm uses only 192",
			wantDetails: []string{"CPUs warn", "RealMemory ok"}},
		{name: "memory below RealMemory fails naming MiB", slurmConf: "NodeName=gpu01 CPUs=224 RealMemory=2064384\n", inv: dgxH100Inventory,
			wantStatus: StatusFail, wantSummary: "usable memory 2063731 MiB is 653 MiB below RealMemory=2064384: Slurm sets the node INVAL",
			wantDetails: []string{"CPUs ok", "RealMemory fail"}},
		{name: "fail outranks warn in the summary", slurmConf: "NodeName=gpu01 CPUs=192 RealMemory=2064384\n", inv: dgxH100Inventory,
			wantStatus: StatusFail, wantSummary: "usable memory 2063731 MiB is 653 MiB below",
			wantDetails: []string{"CPUs warn", "RealMemory fail"}},
		{name: "only keys slurm.conf sets", slurmConf: "NodeName=gpu01 Sockets=2 Gres=gpu:8\n",
			inv:        node.Inventory{Sockets: 2, CoresPerSocket: 1, ThreadsPerCore: 1, CPUs: 2, MemoryUsableMiB: 10},
			wantStatus: StatusOK, wantSummary: "as slurm.conf says: Sockets=2", wantDetails: []string{"Sockets ok"}},
		{name: "DEFAULT line counts as set", slurmConf: "NodeName=DEFAULT ThreadsPerCore=2\nNodeName=gpu01 Gres=gpu:8\n", inv: dgxH100Inventory,
			wantStatus: StatusOK, wantDetails: []string{"ThreadsPerCore ok"}},
		{name: "SocketsPerBoard", slurmConf: "NodeName=gpu01 Boards=1 SocketsPerBoard=4\n", inv: dgxH100Inventory,
			wantStatus: StatusFail, wantSummary: "Sockets 2, slurm.conf says Sockets=4", wantDetails: []string{"Sockets fail"}},
		{name: "nothing to compare", slurmConf: "NodeName=gpu01 Gres=gpu:8\n", inv: dgxH100Inventory,
			wantStatus: StatusSkip, wantSummary: "the NodeName line of gpu01"},
		{name: "value ghw could not read", slurmConf: "NodeName=gpu01 CoresPerSocket=56\n", inv: node.Inventory{CPUs: 224},
			wantStatus: StatusError, wantSummary: "CoresPerSocket: the node's value could not be read", wantDetails: []string{"CoresPerSocket error"}},
		{name: "node not in slurm.conf", slurmConf: "NodeName=gpu02 CPUs=224\n", inv: dgxH100Inventory,
			wantStatus: StatusError, wantSummary: "node gpu01 is not defined in /etc/slurm/slurm.conf"},
		{name: "no slurm.conf", inv: dgxH100Inventory, wantStatus: StatusError, wantSummary: "read slurm.conf: "},
		{name: "inventory unreadable", slurmConf: full, invErr: errors.New("read CPU inventory: no online CPU found"),
			wantStatus: StatusError, wantSummary: "read CPU inventory: no online CPU found"},
		{name: "not recorded in a snapshot", slurmConf: full, invErr: fmt.Errorf("read CPU and memory inventory: not recorded: %w", fs.ErrNotExist),
			wantStatus: StatusSkip, wantSummary: nodeInventoryNotRecorded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeFacts{files: map[string]string{}, facts: map[string]any{node.InventoryFact.Name: tc.inv},
				factErr: map[string]error{node.InventoryFact.Name: tc.invErr}}
			if tc.slurmConf != "" {
				f.files["/etc/slurm/slurm.conf"] = tc.slurmConf
			}
			if tc.cpuinfo != "" {
				b, err := os.ReadFile(filepath.Join("testdata", "cpuinfo", tc.cpuinfo))
				if err != nil {
					t.Fatal(err)
				}
				f.files["/proc/cpuinfo"] = string(b)
			}
			cfg := config.Default(Schema())
			if tc.fixed != [3]int{} {
				var err error
				if cfg, err = cfg.WithChecks(map[string]map[string]any{idNodeInventory: {"sockets": int64(tc.fixed[0]), "cores": int64(tc.fixed[1]), "threads": int64(tc.fixed[2])}}, "test"); err != nil {
					t.Fatal(err)
				}
			}
			env := &Env{Facts: f, Config: cfg, Mode: config.ModeHealth, Node: "gpu01",
				Slurm: NewSlurmFiles(f, "/etc/slurm/slurm.conf", func(string) string { return "" })}
			got := nodeInventory{}.Run(context.Background(), env)
			assertRemedies(t, got)
			if got.Status != tc.wantStatus || !strings.Contains(got.Summary, tc.wantSummary) {
				t.Errorf("Run = %s %q, want %s containing %q", got.Status, got.Summary, tc.wantStatus, tc.wantSummary)
			}
			var details []string
			for _, d := range got.Details {
				details = append(details, d.Device+" "+string(d.Status))
			}
			if diff := cmp.Diff(tc.wantDetails, details); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeInventoryTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	f := &fakeFacts{factErr: map[string]error{node.InventoryFact.Name: fmt.Errorf("read CPU and memory inventory: %w", ctx.Err())}}
	got := nodeInventory{}.Run(ctx, &Env{Facts: f, Config: config.Default(Schema()), Node: "gpu01"})
	assertRemedies(t, got)
	if got.Status != StatusFail || got.Summary != nodeInventoryTimedOut {
		t.Errorf("Run = %s %q, want fail %q", got.Status, got.Summary, nodeInventoryTimedOut)
	}
}

func TestNodeInventoryDefaults(t *testing.T) {
	c := Settings(config.Default(Schema()), nodeInventory{})
	if !c.Enabled || c.Timeout != 3*time.Second || !cmp.Equal(c.Modes, []string{"health", "manual"}) {
		t.Errorf("default settings = %+v, want enabled, 3s, health and manual", c)
	}
}

// TestNHCCPUCounts: the counts NHC's own nhc_hw_gather_data made of each file
// (testdata/cpuinfo/SOURCE).
func TestNHCCPUCounts(t *testing.T) {
	for file, want := range map[string][3]int{"x86-vm.txt": {1, 2, 2}, "x86-2s4c2t.txt": {2, 8, 16}, "aarch64-72.txt": {72, 72, 72}} {
		b, err := os.ReadFile(filepath.Join("testdata", "cpuinfo", file))
		if err != nil {
			t.Fatal(err)
		}
		s, c, th := nhcCPUCounts(string(b))
		if [3]int{s, c, th} != want {
			t.Errorf("%s: %d %d %d, NHC counts %v", file, s, c, th, want)
		}
	}
	if s, c, th := nhcCPUCounts("vendor_id : x\n"); [3]int{s, c, th} != [3]int{1, 1, 1} {
		t.Errorf("no processor line: %d %d %d, NHC counts 1 1 1", s, c, th)
	}
}
