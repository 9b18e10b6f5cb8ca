package drain

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormatReason(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name     string
		prefix   string
		failures []Failure
		want     string
	}{
		{"none", "nodecheck:", nil, ""},
		{"one", "nodecheck:", []Failure{{Check: "ib_ports", Summary: "mlx5_5/1: state 1: DOWN, want 4: ACTIVE"}},
			"nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE"},
		{"several", "nodecheck:", []Failure{{Check: "gres_devices", Summary: "/dev/nvidia5: missing"}, {Check: "gpu_count", Summary: "7 of 8"}, {Check: "ib_ports", Summary: "x"}},
			"nodecheck: gres_devices: /dev/nvidia5: missing (+2 more)"},
		{"empty summary", "nodecheck:", []Failure{{Check: "ib_ports", Summary: ""}}, "nodecheck: ib_ports"},
		{"control characters and quotes", "nodecheck:", []Failure{{Check: "ib_ports", Summary: "line1\nline2\t\"DOWN\"\x1b[31m"}},
			"nodecheck: ib_ports: line1 line2 'DOWN'?[31m"},
		{"non-ASCII", "nodecheck:", []Failure{{Check: "nccl_allreduce", Summary: "busbw 12.5 GB/s after 30µs — low"}},
			"nodecheck: nccl_allreduce: busbw 12.5 GB/s after 30?s ? low"},
		{"long summary is cut, count kept", "nodecheck:", []Failure{{Check: "ib_ports", Summary: long}, {Check: "gpu_count", Summary: "y"}},
			"nodecheck: ib_ports: " + strings.Repeat("x", 200-len("nodecheck: ib_ports: ")-len("... (+1 more)")) + "... (+1 more)"},
		{"custom prefix", "[nhc]", []Failure{{Check: "ib_ports", Summary: "down"}}, "[nhc] ib_ports: down"},
		{"remedy", "nodecheck:", []Failure{{Check: "gpu_memory_errors", Summary: "gpu 3 (0000:9b:00.0): row remapping pending: reset the GPU", Remedy: "reset_gpu"}},
			"nodecheck: gpu_memory_errors: gpu 3 (0000:9b:00.0): row remapping pending: reset the GPU [reset_gpu]"},
		{"remedy before the count", "nodecheck:", []Failure{{Check: "ib_ports", Summary: "mlx5_5/1 down", Remedy: "service"}, {Check: "gpu_count", Summary: "y", Remedy: "reboot"}},
			"nodecheck: ib_ports: mlx5_5/1 down [service] (+1 more)"},
		{"long summary is cut, remedy and count kept", "nodecheck:", []Failure{{Check: "ib_ports", Summary: long, Remedy: "service"}, {Check: "gpu_count", Summary: "y"}},
			"nodecheck: ib_ports: " + strings.Repeat("x", 200-len("nodecheck: ib_ports: ")-len("... [service] (+1 more)")) + "... [service] (+1 more)"},
		{"remedy sanitised", "nodecheck:", []Failure{{Check: "ib_ports", Summary: "down", Remedy: "re\"boot\n"}}, "nodecheck: ib_ports: down [re'boot]"},
		{"remedy without a summary", "nodecheck:", []Failure{{Check: "gpu_count", Remedy: "service"}}, "nodecheck: gpu_count [service]"},
		{"absurd prefix keeps the count", strings.Repeat("p", 250), []Failure{{Check: "ib_ports", Summary: "down"}, {Check: "b", Summary: "c"}},
			strings.Repeat("p", 200-len(" (+1 more)")) + " (+1 more)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FormatReason(tc.prefix, tc.failures)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("FormatReason (-want +got):\n%s", diff)
			}
			if len(got) > MaxReasonLen {
				t.Errorf("reason is %d bytes, over %d", len(got), MaxReasonLen)
			}
		})
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "mlx5_5/1: state DOWN", "mlx5_5/1: state DOWN"},
		{"blanks collapse and trim", "  a \t\n b  ", "a b"},
		{"double quotes", `"DOWN"`, "'DOWN'"},
		{"equals and single quotes stay", "x=y 'z'", "x=y 'z'"},
		{"DEL and NUL", "a\x7fb\x00c", "a?b?c"},
		{"invalid UTF-8", "a\xffb", "a?b"},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Sanitize(tc.in)); diff != "" {
				t.Errorf("Sanitize(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestOwned(t *testing.T) {
	tests := []struct {
		name, reason, prefix string
		want                 bool
	}{
		{"ours", "nodecheck: ib_ports: down", "nodecheck:", true},
		{"admin", "maintenance", "nodecheck:", false},
		{"slurm's prolog error", "Prolog error", "nodecheck:", false},
		{"prefix later in the text", "see nodecheck: later", "nodecheck:", false},
		{"no reason", "", "nodecheck:", false},
		{"empty prefix owns nothing", "anything", "", false},
		{"prefix compared as written in reasons", "nodecheck ib_ports", " nodecheck ", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Owned(tc.reason, tc.prefix); got != tc.want {
				t.Errorf("Owned(%q, %q) = %v, want %v", tc.reason, tc.prefix, got, tc.want)
			}
		})
	}
}

// FuzzFormatReason: whatever the checks say, the reason is one line of printable ASCII
// without double quotes, at most MaxReasonLen bytes, starting with the prefix and check id,
// and says how many failures it leaves out.
func FuzzFormatReason(f *testing.F) {
	f.Add("nodecheck:", "ib_ports", "mlx5_5/1: state DOWN", "service", 1)
	f.Add("nodecheck:", "gres_devices", "line\nbreak \"quoted\" µs", "", 3)
	f.Add("nodecheck:", "x", strings.Repeat("long ", 80), "reset_gpu", 12)
	f.Fuzz(func(t *testing.T, prefix, check, summary, remedy string, n int) {
		if n < 1 || n > 1000 || Sanitize(prefix) == "" || len(prefix) > 64 || len(remedy) > 16 {
			return
		}
		failures := make([]Failure, n)
		failures[0] = Failure{Check: check, Summary: summary, Remedy: remedy}
		got := FormatReason(prefix, failures)
		if len(got) > MaxReasonLen {
			t.Fatalf("reason is %d bytes: %q", len(got), got)
		}
		for i := 0; i < len(got); i++ {
			if c := got[i]; c < 0x20 || c > 0x7e || c == '"' {
				t.Fatalf("byte %#x at %d in %q", c, i, got)
			}
		}
		if !Owned(got, prefix) {
			t.Fatalf("%q does not start with the prefix %q", got, Sanitize(prefix))
		}
		if n > 1 && !strings.HasSuffix(got, fmt.Sprintf(" (+%d more)", n-1)) {
			t.Fatalf("%q lacks (+%d more)", got, n-1)
		}
		if r := Sanitize(remedy); r != "" && !strings.Contains(got, " ["+r+"]") {
			t.Fatalf("%q lacks the remedy [%s]", got, r)
		}
		if c := Sanitize(check); c != "" && len(Sanitize(prefix))+1+len(c)+12 < MaxReasonLen && !strings.HasPrefix(got, Sanitize(prefix)+" "+c) {
			t.Fatalf("%q does not name the check %q after the prefix", got, c)
		}
	})
}

func ExampleFormatReason() {
	fmt.Println(FormatReason("nodecheck:", []Failure{
		{Check: "ib_ports", Summary: "mlx5_5/1: state 1: DOWN, want 4: ACTIVE"},
		{Check: "gpu_count", Summary: "7 of 8 GPUs visible to NVML"},
	}))
	// Output: nodecheck: ib_ports: mlx5_5/1: state 1: DOWN, want 4: ACTIVE (+1 more)
}
