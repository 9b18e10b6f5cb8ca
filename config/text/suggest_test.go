package text

import (
	"fmt"
	"math"
	"slices"
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
		{"prefix wins when closest", "abcdef", []string{"abcdefghi", "abcxyz"}, "abcdefghi"},
		{"prefix loses a tie to an earlier word", "abcdef", []string{"abcxyz", "abcdefghi"}, ""},
		{"prefix loses to a closer word", "abcdef", []string{"abcdefghij", "abcxyz"}, ""},
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
		{"cpus", "gres", 3}, {"", "abc", 3}, {"ca", "abc", 3}, {"NodeNmae", "nodename", 1},
	}
	for _, tc := range tests {
		t.Run(tc.a+"/"+tc.b, func(t *testing.T) {
			if got := editDistance(tc.a, tc.b, math.MaxInt); got != tc.want {
				t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// refDidYouMean is the did-you-mean as config/toml.go had it at 7543d79: both words lowered,
// a full matrix for every candidate. DidYouMean must answer exactly as it does.
func refDidYouMean(s string, candidates []string) string {
	best, bestD := "", math.MaxInt
	for _, c := range candidates {
		if d := refDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || best == s {
		return ""
	}
	limit := 2
	if len(s) < 5 {
		limit = 1
	}
	ls, lb := strings.ToLower(s), strings.ToLower(best)
	if bestD <= limit || len(s) >= 4 && (strings.HasPrefix(lb, ls) || strings.HasPrefix(ls, lb)) {
		return best
	}
	return ""
}

func refDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return math.MaxInt / 2
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// FuzzDidYouMean: the answer is a candidate other than s itself, and exactly the answer of the
// plain full-matrix algorithm (refDidYouMean): the stack rows, the ASCII folding and the
// length pruning change the cost, never the suggestion.
func FuzzDidYouMean(f *testing.F) {
	f.Add("timout", "timeout,modes")
	f.Add("Fille", "File,Name")
	f.Add("min_rate", "min_rate_gbps,timeout,min")
	f.Add("ÉTAT", "état,State")
	f.Fuzz(func(t *testing.T, s, list string) {
		cands := strings.Split(list, ",")
		got := DidYouMean(s, cands)
		if want := refDidYouMean(s, cands); got != want {
			t.Fatalf("DidYouMean(%q, %q) = %q, the full algorithm says %q", s, cands, got, want)
		}
		if got != "" && (!slices.Contains(cands, got) || got == s) {
			t.Fatalf("DidYouMean(%q, %q) = %q: not a candidate, or s itself", s, cands, got)
		}
	})
}

func BenchmarkDidYouMean(b *testing.B) {
	keys := []string{"NodeName", "PartitionName", "GresTypes", "Include", "NodeSet", "DownNodes"}
	b.ReportAllocs()
	for b.Loop() {
		DidYouMean("SlurmctldParameters", keys)
		DidYouMean("NodeNmae", keys)
	}
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
