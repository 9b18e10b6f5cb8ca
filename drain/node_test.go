package drain

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestParseShowNodeCaptured reads `scontrol show node -o` as Slurm 22.05 printed it on the
// test bed (testdata/capture.sh).
func TestParseShowNodeCaptured(t *testing.T) {
	tests := []struct {
		file    string
		want    NodeState
		drained bool
	}{
		{"show-node-idle.txt", NodeState{Name: "n1", State: "IDLE"}, false},
		{"show-node-allocated.txt", NodeState{Name: "n1", State: "MIXED"}, false},
		{"show-node-drained-nodecheck.txt", NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"},
			Reason: "nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE", ReasonUser: "root"}, true},
		{"show-node-drained-admin.txt", NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN", "NOT_RESPONDING"},
			Reason: "maintenance", ReasonUser: "root"}, true},
		{"show-node-draining.txt", NodeState{Name: "n1", State: "MIXED", Flags: []string{"DRAIN"},
			Reason: "nodecheck: gres_devices: /dev/nvidia5: missing", ReasonUser: "root"}, true},
		{"show-node-down.txt", NodeState{Name: "n1", State: "DOWN", Flags: []string{"NOT_RESPONDING"},
			Reason: "power cycle; ticket #4711 = open", ReasonUser: "root"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseShowNode(bytes.NewReader(readTestdata(t, "slurm-22.05/"+tc.file)), "n1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Drained() != tc.drained {
				t.Errorf("Drained() = %v, want %v", got.Drained(), tc.drained)
			}
		})
	}
}

// TestParseShowNodeLines covers what the captures do not: the fields newer versions print
// after Reason=, a reason without a stamp, continuation lines, other nodes.
func TestParseShowNodeLines(t *testing.T) {
	const head = "NodeName=gpu01 Arch=x86_64 OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)  RealMemory=1 "
	tests := []struct {
		name    string
		in      string
		node    string
		want    NodeState
		wantErr string
	}{
		{"comment after the reason (23.02+)", "NodeName=gpu01 State=IDLE+DRAIN Reason=nodecheck: ib_ports: down [root@2024-01-02T03:04:05] Comment=rack 4 Extra=x",
			"gpu01", NodeState{Name: "gpu01", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: down", ReasonUser: "root"}, ""},
		{"no stamp, comment after", "NodeName=gpu01 State=DOWN Reason=Not responding Comment=x y",
			"gpu01", NodeState{Name: "gpu01", State: "DOWN", Reason: "Not responding"}, ""},
		{"no stamp, end of line", "NodeName=gpu01 State=DOWN+DRAIN Reason=Kill task failed",
			"gpu01", NodeState{Name: "gpu01", State: "DOWN", Flags: []string{"DRAIN"}, Reason: "Kill task failed"}, ""},
		{"reason that looks like fields", "NodeName=gpu01 State=IDLE+DRAIN Reason=Reason=foo State=IDLE [alice@2024-01-02T03:04:05]",
			"gpu01", NodeState{Name: "gpu01", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "Reason=foo State=IDLE", ReasonUser: "alice"}, ""},
		{"slurm's own reason", "NodeName=gpu01 State=IDLE+DRAIN Reason=Prolog error [slurm@2024-01-02T03:04:05]",
			"gpu01", NodeState{Name: "gpu01", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "Prolog error", ReasonUser: "slurm"}, ""},
		{"multi-line reason continues after the stamp", "NodeName=gpu01 State=IDLE+DRAIN Reason=line1 [root@2024-01-02T03:04:05]        line2",
			"gpu01", NodeState{Name: "gpu01", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "line1", ReasonUser: "root"}, ""},
		{"blanks in OS= before State=", head + "State=ALLOCATED ThreadsPerCore=1",
			"gpu01", NodeState{Name: "gpu01", State: "ALLOCATED"}, ""},
		{"several nodes", "NodeName=a State=IDLE\nNodeName=gpu01 State=MIXED+DRAIN+COMPLETING Reason=x [root@now]\n",
			"gpu01", NodeState{Name: "gpu01", State: "MIXED", Flags: []string{"DRAIN", "COMPLETING"}, Reason: "x", ReasonUser: "root"}, ""},
		{"other node only", "NodeName=a State=IDLE\n", "gpu01", NodeState{}, `scontrol printed nodes a but not "gpu01"`},
		{"nothing", "", "gpu01", NodeState{}, `scontrol printed no NodeName= line for "gpu01"`},
		{"no state", "NodeName=gpu01 Arch=x86_64", "gpu01", NodeState{}, "node gpu01: no State= field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseShowNode(strings.NewReader(tc.in), tc.node)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseNodesJSON(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		node    string
		want    NodeState
		wantErr string
	}{
		{"22.05 sinfo --json, drained", "slurm-22.05/sinfo.json", "n1",
			NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE", ReasonUser: "root"}, ""},
		{"22.05 sinfo --json, idle, null user", "slurm-22.05/sinfo.json", "n2",
			NodeState{Name: "n2", State: "IDLE"}, ""},
		{"24.11 shape, draining", "slurm-24.11/show-node-draining.json", "gpu17",
			NodeState{Name: "gpu17", State: "MIXED", Flags: []string{"DRAIN"}, Reason: "nodecheck: gpu_count: 7 of 8 GPUs visible to NVML, 8 on PCI bus", ReasonUser: "root"}, ""},
		{"24.11 shape, idle", "slurm-24.11/show-node-draining.json", "gpu18", NodeState{Name: "gpu18", State: "IDLE"}, ""},
		{"24.11 shape, unknown node", "slurm-24.11/show-node-unknown.json", "gpu99", NodeState{},
			`scontrol JSON has no node "gpu99": slurm_load_node_single() failed Invalid node name specified`},
		{"absent node", "slurm-22.05/sinfo.json", "n9", NodeState{}, `scontrol JSON has no node "n9"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNodesJSON(bytes.NewReader(readTestdata(t, tc.file)), tc.node)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{`{"nodes": [{"name": "n1", "state": 3}]}`, `{"nodes": [{"name": "n1", "state": []}]}`, `not json`} {
		if _, err := ParseNodesJSON(strings.NewReader(bad), "n1"); err == nil {
			t.Errorf("ParseNodesJSON(%q): no error", bad)
		}
	}
}

func TestParseSinfoReasons(t *testing.T) {
	got, err := ParseSinfoReasons(bytes.NewReader(readTestdata(t, "slurm-22.05/sinfo-reasons.txt")))
	if err != nil {
		t.Fatal(err)
	}
	want := []NodeReason{{"n1", "nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE"}, {"n2", ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("captured (-want +got):\n%s", diff)
	}

	tests := []struct {
		name    string
		in      string
		want    []NodeReason
		wantErr string
	}{
		{"node in two partitions listed once", "a|none\nb|x|y\na|none\n", []NodeReason{{"a", ""}, {"b", "x|y"}}, ""},
		{"blank lines", "\na|r\n\n", []NodeReason{{"a", "r"}}, ""},
		{"empty", "", nil, ""},
		{"no bar", "a none\n", nil, `sinfo line 1: "a none": want NODE|REASON`},
		{"no name", "|r\n", nil, `sinfo line 1: "|r": want NODE|REASON`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSinfoReasons(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in           string
		major, minor int
		wantErr      bool
	}{
		{string(readTestdata(t, "slurm-22.05/version.txt")), 22, 5, false},
		{"slurm 23.02.7\n", 23, 2, false},
		{"slurm 24.11.0-0rc1", 24, 11, false},
		{"slurm", 0, 0, true},
		{"slurm x.y", 0, 0, true},
		{"scontrol: fatal: Could not establish a configuration source", 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			major, minor, err := ParseVersion(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if major != tc.major || minor != tc.minor {
				t.Errorf("got %d.%d, want %d.%d", major, minor, tc.major, tc.minor)
			}
		})
	}
}

// FuzzParseShowNode: never panics; what it returns is the node asked for, with a state, and a
// reason that is one line.
func FuzzParseShowNode(f *testing.F) {
	for _, name := range []string{"show-node-idle.txt", "show-node-drained-admin.txt", "show-node-draining.txt", "show-node-down.txt"} {
		f.Add(readTestdata(f, "slurm-22.05/"+name))
	}
	f.Add([]byte("NodeName=n1 State=IDLE+DRAIN Reason=x [a@b] Comment=y"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := ParseShowNode(bytes.NewReader(data), "n1")
		if err != nil {
			return
		}
		if n.Name != "n1" || n.State == "" {
			t.Fatalf("got %+v", n)
		}
		if strings.ContainsAny(n.Reason, "\n") || n.Reason != strings.TrimSpace(n.Reason) {
			t.Fatalf("reason %q is not one trimmed line", n.Reason)
		}
	})
}

// FuzzParseNodesJSON: never panics; what it returns is the node asked for, with a state.
func FuzzParseNodesJSON(f *testing.F) {
	f.Add(readTestdata(f, "slurm-22.05/sinfo.json"))
	f.Add(readTestdata(f, "slurm-24.11/show-node-draining.json"))
	f.Add(readTestdata(f, "slurm-24.11/show-node-unknown.json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := ParseNodesJSON(bytes.NewReader(data), "n1")
		if err != nil {
			return
		}
		if n.Name != "n1" || n.State == "" {
			t.Fatalf("got %+v", n)
		}
	})
}

// FuzzParseSinfoReasons: never panics; names are unique, non-empty and blank-free.
func FuzzParseSinfoReasons(f *testing.F) {
	f.Add(readTestdata(f, "slurm-22.05/sinfo-reasons.txt"))
	f.Add([]byte("a|none\na|x\nb|y|z\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseSinfoReasons(bytes.NewReader(data))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, n := range got {
			if n.Name == "" || strings.ContainsAny(n.Name, " \t|") || seen[n.Name] {
				t.Fatalf("bad or repeated name %q in %+v", n.Name, got)
			}
			seen[n.Name] = true
		}
	})
}

func ExampleParseNodesJSON() {
	doc := `{"nodes": [{"name": "gpu01", "state": ["IDLE", "DRAIN"], "reason": "maintenance", "reason_set_by_user": "alice"}], "errors": []}`
	n, err := ParseNodesJSON(strings.NewReader(doc), "gpu01")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s drained=%v reason=%q by %s\n", n, n.Drained(), n.Reason, n.ReasonUser)
	// Output: IDLE+DRAIN drained=true reason="maintenance" by alice
}

func ExampleParseSinfoReasons() {
	out := "gpu01|nodecheck: ib_ports: mlx5_5/1 down\ngpu02|none\ngpu01|nodecheck: ib_ports: mlx5_5/1 down\n"
	nodes, err := ParseSinfoReasons(strings.NewReader(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range nodes {
		fmt.Printf("%s %q owned=%v\n", n.Name, n.Reason, Owned(n.Reason, "nodecheck:"))
	}
	// Output:
	// gpu01 "nodecheck: ib_ports: mlx5_5/1 down" owned=true
	// gpu02 "" owned=false
}

func ExampleParseVersion() {
	major, minor, err := ParseVersion("slurm-wlm 22.05.8")
	fmt.Println(major, minor, err, major > 23 || major == 23 && minor >= 2)
	// Output: 22 5 <nil> false
}

func ExampleParseShowNode() {
	line := "NodeName=gpu01 Arch=x86_64 State=MIXED+DRAIN ThreadsPerCore=2 Reason=nodecheck: ib_ports: mlx5_5/1 down [root@2024-05-01T10:00:00]\n"
	n, err := ParseShowNode(strings.NewReader(line), "gpu01")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s drained=%v reason=%q by %s\n", n, n.Drained(), n.Reason, n.ReasonUser)
	// Output: MIXED+DRAIN drained=true reason="nodecheck: ib_ports: mlx5_5/1 down" by root
}
