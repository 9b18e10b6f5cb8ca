package text

import (
	"fmt"
	"strings"
	"testing"
)

func TestDidYouMean(t *testing.T) {
	toml := []string{"enabled", "timeout", "modes", "min_rate_gbps", "expected_ports", "devices", "exclude_devices"}
	gres := []string{"NodeName", "Name", "Type", "File", "Count", "AutoDetect", "Cores", "CPUs", "Links", "MultipleFiles", "Flags"}
	tests := []struct {
		name, in   string
		candidates []string
		want       string
	}{
		{"swap counts one", "min_rate_gpbs", toml, "min_rate_gbps"},
		{"missing letter", "timout", toml, "timeout"},
		{"case only", "Timeout", toml, "timeout"},
		{"exact is no typo", "timeout", toml, ""},
		{"prefix", "min_rate", toml, "min_rate_gbps"},
		{"longer by one", "exclude_device", toml, "exclude_devices"},
		{"shorter by one", "mode", toml, "modes"},
		{"far", "colour", toml, ""},
		{"short word, one edit", "Fil", gres, "File"},
		{"short word, swap", "Tpye", gres, "Type"},
		{"short word, two edits is too far", "Fl", gres, ""},
		{"case-insensitive distance", "FILLE", gres, "File"},
		{"first of equals wins", "Cors", gres, "Cores"},
		{"long input", strings.Repeat("a", 100), toml, ""},
		{"no candidates", "x", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DidYouMean(tc.in, tc.candidates); got != tc.want {
				t.Errorf("DidYouMean(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"nodename", "nodename", 0}, {"nodenmae", "nodename", 1}, {"gress", "gres", 1},
		{"cpus", "gres", 3}, {"", "abc", 3}, {"ca", "abc", 3},
	}
	for _, tc := range tests {
		t.Run(tc.a+"/"+tc.b, func(t *testing.T) {
			if got := editDistance(tc.a, tc.b); got != tc.want {
				t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func FuzzDidYouMean(f *testing.F) {
	f.Add("timout", "timeout,modes")
	f.Add("Fille", "File,Name")
	f.Fuzz(func(t *testing.T, s, list string) {
		cands := strings.Split(list, ",")
		got := DidYouMean(s, cands)
		if got == "" {
			return
		}
		found := false
		for _, c := range cands {
			found = found || c == got
		}
		if !found || got == s {
			t.Fatalf("DidYouMean(%q, %q) = %q: not a candidate, or s itself", s, cands, got)
		}
	})
}

func ExampleDidYouMean() {
	keys := []string{"NodeName", "PartitionName", "GresTypes", "Include"}
	fmt.Println(DidYouMean("GresType", keys))
	fmt.Println(DidYouMean("NodeNmae", keys))
	fmt.Printf("%q\n", DidYouMean("SlurmctldHost", keys))
	// Output:
	// GresTypes
	// NodeName
	// ""
}
