package slurm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPartitionShares(t *testing.T) {
	tests := []struct {
		name, over, sel string
		want            bool
	}{
		{"default under cons_tres shares free GPUs", "", "select/cons_tres", true},
		{"unset SelectType is cons_tres", "", "", true},
		{"NO under cons_tres", "NO", "select/cons_tres", true},
		{"EXCLUSIVE", "EXCLUSIVE", "select/cons_tres", false},
		{"exclusive in lower case", "exclusive", "", false},
		{"linear allocates whole nodes", "", "select/linear", false},
		{"linear with NO", "NO", "select/linear", false},
		{"linear with YES shares", "YES", "select/linear", true},
		{"linear with FORCE:4 shares", "FORCE:4", "select/linear", true},
		{"EXCLUSIVE under linear", "EXCLUSIVE", "select/linear", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := partitionShares(tc.over, tc.sel); got != tc.want {
				t.Errorf("partitionShares(%q, %q) = %v, want %v", tc.over, tc.sel, got, tc.want)
			}
		})
	}
}

func TestIsolationGaps(t *testing.T) {
	fenced := isolationFacts{ConstrainDevices: "yes", ConstrainDevicesSet: true, HaveCgroupConf: true, TaskPlugin: "task/cgroup,task/affinity"}
	with := func(f func(*isolationFacts)) isolationFacts {
		c := fenced
		f(&c)
		return c
	}
	tests := []struct {
		name string
		in   isolationFacts
		want []string // the start of each gap
	}{
		{"fenced", fenced, nil},
		{"ConstrainDevices=true is yes", with(func(f *isolationFacts) { f.ConstrainDevices = "True" }), nil},
		{"ConstrainDevices=no", with(func(f *isolationFacts) { f.ConstrainDevices = "no" }), []string{"set ConstrainDevices=yes in cgroup.conf (it is no)"}},
		{"ConstrainDevices unset", with(func(f *isolationFacts) { f.ConstrainDevices, f.ConstrainDevicesSet = "", false }), []string{"add ConstrainDevices=yes"}},
		{"ConstrainDevices invalid", with(func(f *isolationFacts) { f.ConstrainDevices = "maybe" }), []string{"set ConstrainDevices=yes in cgroup.conf (it is maybe)"}},
		{"no cgroup.conf", with(func(f *isolationFacts) {
			f.HaveCgroupConf, f.ConstrainDevicesSet, f.ConstrainDevices = false, false, ""
		}), []string{"create cgroup.conf"}},
		{"TaskPlugin without the prefix", with(func(f *isolationFacts) { f.TaskPlugin = "affinity,cgroup" }), nil},
		{"TaskPlugin affinity only", with(func(f *isolationFacts) { f.TaskPlugin = "task/affinity" }), []string{"add task/cgroup to TaskPlugin"}},
		{"TaskPlugin unset", with(func(f *isolationFacts) { f.TaskPlugin = "" }), []string{"set TaskPlugin=task/cgroup"}},
		{"TaskPlugin cgroupv2 is not cgroup", with(func(f *isolationFacts) { f.TaskPlugin = "task/cgroupv2" }), []string{"add task/cgroup to TaskPlugin"}},
		{"proctrack/cgroup", with(func(f *isolationFacts) { f.ProctrackType = "proctrack/cgroup" }), nil},
		{"proctrack/linuxproc", with(func(f *isolationFacts) { f.ProctrackType = "proctrack/linuxproc" }), []string{"set ProctrackType=proctrack/cgroup"}},
		{"all three", isolationFacts{ProctrackType: "proctrack/pgid"}, []string{"create cgroup.conf", "set TaskPlugin=task/cgroup", "set ProctrackType=proctrack/cgroup"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := isolationGaps(tc.in)
			if len(got) != len(tc.want) {
				t.Fatalf("isolationGaps(%+v) = %q, want %d gaps starting %q", tc.in, got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("gap %d = %q, want it to start %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// lintIsolationText lints slurm.conf text with cgroup.conf text (cgroup "-" for none) and
// returns the GPU isolation problems.
func lintIsolationText(t *testing.T, slurmText, cgroupText string) []Problem {
	t.Helper()
	sc, err := ParseSlurmConf([]byte(slurmText), "slurm.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	var cg *CgroupConf
	if cgroupText != "-" {
		if cg, err = ParseCgroupConf([]byte(cgroupText), "cgroup.conf", nil); err != nil {
			t.Fatal(err)
		}
	}
	return isolationProblems(Lint(sc, nil, withoutPitfalls(), WithCgroupConf(cg, "cgroup.conf")))
}

func isolationProblems(r Report) []Problem {
	var out []Problem
	for _, p := range r.Problems {
		if strings.Contains(p.Message, "GPU isolation") {
			out = append(out, p)
		}
	}
	return out
}

func TestLintIsolation(t *testing.T) {
	const nodes = "NodeName=g[1-2] CPUs=8 Gres=gpu:2\nNodeName=c1 CPUs=8\n"
	tests := []struct {
		name          string
		slurm, cgroup string
		wantAt        string // "file:line nodes", empty for no warning
	}{
		{"fenced", "TaskPlugin=task/cgroup\n" + nodes + "PartitionName=p Nodes=ALL\n", "ConstrainDevices=yes\n", ""},
		{"ConstrainDevices=no", "TaskPlugin=task/cgroup\n" + nodes + "PartitionName=p Nodes=ALL\n", "ConstrainCores=yes\nConstrainDevices=no\n", "cgroup.conf:2 g[1-2]"},
		{"ConstrainDevices missing", "TaskPlugin=task/cgroup\n" + nodes + "PartitionName=p Nodes=ALL\n", "ConstrainCores=yes\n", "cgroup.conf:0 g[1-2]"},
		{"no cgroup.conf", "TaskPlugin=task/cgroup\n" + nodes + "PartitionName=p Nodes=ALL\n", "-", "slurm.conf:4 g[1-2]"},
		{"TaskPlugin without cgroup", "TaskPlugin=task/affinity\n" + nodes + "PartitionName=p Nodes=ALL\n", "ConstrainDevices=yes\n", "slurm.conf:1 g[1-2]"},
		{"exclusive partition", nodes + "PartitionName=p Nodes=ALL OverSubscribe=EXCLUSIVE\n", "-", ""},
		{"exclusive from DEFAULT", nodes + "PartitionName=DEFAULT OverSubscribe=EXCLUSIVE\nPartitionName=p Nodes=ALL\n", "-", ""},
		{"shared partition beside an exclusive one", nodes + "PartitionName=x Nodes=g1 OverSubscribe=EXCLUSIVE\nPartitionName=s Nodes=g[1-2]\n", "-", "slurm.conf:4 g[1-2]"},
		{"only CPU nodes shared", nodes + "PartitionName=x Nodes=g[1-2] OverSubscribe=EXCLUSIVE\nPartitionName=s Nodes=c1\n", "-", ""},
		{"select/linear", "SelectType=select/linear\n" + nodes + "PartitionName=p Nodes=ALL\n", "-", ""},
		{"select/linear with OverSubscribe=FORCE", "SelectType=select/linear\n" + nodes + "PartitionName=p Nodes=ALL OverSubscribe=FORCE:2\n", "-", "slurm.conf:4 g[1-2]"},
		{"GPU node in no partition", nodes + "PartitionName=p Nodes=c1\n", "-", ""},
		{"fenced but linuxproc", "TaskPlugin=task/cgroup\nProctrackType=proctrack/linuxproc\n" + nodes + "PartitionName=p Nodes=ALL\n", "ConstrainDevices=yes\n", "slurm.conf:2 g[1-2]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := lintIsolationText(t, tc.slurm, tc.cgroup)
			var got string
			switch len(ps) {
			case 0:
			case 1:
				got = ps[0].File + ":" + strconv.Itoa(ps[0].Line) + " " + ps[0].Nodes
			default:
				t.Fatalf("%d isolation problems, want at most 1: %v", len(ps), ps)
			}
			if got != tc.wantAt {
				t.Errorf("isolation warning at %q, want %q; problems %v", got, tc.wantAt, ps)
			}
		})
	}
}

// TestLintIsolationCorpus lints real sites' slurm.conf, cgroup.conf and gres.conf side by
// side (testdata/cgroup/*/SOURCE): a warning where GPU nodes are shared and unconstrained,
// none where devices are constrained, where nodes have no GPUs, or where the partition is
// exclusive.
func TestLintIsolationCorpus(t *testing.T) {
	tests := []struct {
		site string
		want []string // "file:line nodes" and the fixes named
	}{
		{"pal-goedel-rtx3090x8", nil},
		{"brdarji-linux1-1gpu", nil},
		{"daisytuner-edge-orin", nil}, // constrained, and no GPU Gres at all
		{"inigo-gpuops-lab-4x4", []string{"cgroup.conf:0 gpu-[1-4]", "add ConstrainDevices=yes", "add task/cgroup to TaskPlugin in slurm.conf (TaskPlugin=task/none at slurm.conf:", "set ProctrackType=proctrack/cgroup in slurm.conf (with proctrack/linuxproc at slurm.conf:"}},
		{"kristiankielhofner-docker-cuda", []string{"cgroup.conf:0 c[1-4]", "add ConstrainDevices=yes", "set TaskPlugin=task/cgroup,task/affinity in slurm.conf (unset", "set ProctrackType=proctrack/cgroup"}},
		{"kristiankielhofner-docker-cuda-exclusive", nil},
	}
	for _, tc := range tests {
		t.Run(tc.site, func(t *testing.T) {
			dir := filepath.Join("testdata", "cgroup", tc.site)
			sc, err := LoadSlurmConf(filepath.Join(dir, "slurm.conf"), os.ReadFile)
			if err != nil {
				t.Fatal(err)
			}
			cg, err := LoadCgroupConf(filepath.Join(dir, "cgroup.conf"), os.ReadFile)
			if err != nil {
				t.Fatal(err)
			}
			var gc *GresConf
			if gc, err = LoadGresConf(filepath.Join(dir, "gres.conf"), os.ReadFile); errors.Is(err, fs.ErrNotExist) {
				gc = nil
			} else if err != nil {
				t.Fatal(err)
			}
			r := Lint(sc, gc, WithCgroupConf(cg, cg.Path))
			ps := isolationProblems(r)
			if len(tc.want) == 0 {
				if len(ps) != 0 {
					t.Fatalf("isolation warnings %v, want none", ps)
				}
				return
			}
			if len(ps) != 1 {
				t.Fatalf("isolation warnings %v, want one", ps)
			}
			p := ps[0]
			if at := filepath.Base(p.File) + ":" + strconv.Itoa(p.Line) + " " + p.Nodes; at != tc.want[0] || p.Severity != SeverityWarning {
				t.Errorf("warning %s at %q, want a warning at %q", p.Severity, at, tc.want[0])
			}
			for _, fix := range tc.want[1:] {
				if !strings.Contains(p.Message, fix) {
					t.Errorf("message does not name %q:\n%s", fix, p.Message)
				}
			}
		})
	}
}

func TestParseCgroupConf(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "cgroup", "pal-goedel-rtx3090x8", "cgroup.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cg, err := ParseCgroupConf(data, "cgroup.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cg.ConstrainDevices() {
		t.Errorf("ConstrainDevices() = false for %v", cg.Settings)
	}
	s, _ := cg.Setting("cgroupreleaseagentdir")
	if diff := cmp.Diff(Setting{Key: "CgroupReleaseAgentDir", Value: "/etc/slurm/cgroup", Pos: Pos{File: "cgroup.conf", Line: s.Pos.Line}}, s); diff != "" || s.Pos.Line == 0 {
		t.Errorf("CgroupReleaseAgentDir (-want +got):\n%s", diff)
	}
	bad, err := ParseCgroupConf([]byte("ConstrainDevices=maybe\nyes\n"), "cgroup.conf", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := problemSummary(bad.Problems); !cmp.Equal(got, []string{"error cgroup.conf:2 ", "error cgroup.conf:1 "}) {
		t.Errorf("problems %q", got)
	}
	if bad.ConstrainDevices() {
		t.Error("an invalid ConstrainDevices counts as yes")
	}
	var none *CgroupConf
	if none.ConstrainDevices() {
		t.Error("no cgroup.conf counts as constrained")
	}
}

func FuzzParseCgroupConf(f *testing.F) {
	for _, site := range []string{"pal-goedel-rtx3090x8", "inigo-gpuops-lab-4x4", "daisytuner-edge-orin"} {
		if data, err := os.ReadFile(filepath.Join("testdata", "cgroup", site, "cgroup.conf")); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("ConstrainDevices=\"yes\\\n\" # x\nbare\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cg, err := ParseCgroupConf(data, "cgroup.conf", nil)
		if err != nil {
			return // an Include with no reader
		}
		_ = cg.ConstrainDevices()
		for _, p := range cg.Problems {
			if p.Line < 1 {
				t.Errorf("problem without a line: %+v", p)
			}
		}
	})
}
