package drain

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStateTable is the state table, one subtest per row: the word's stance, shown on a node
// as Slurm printed it where the test bed can reach the state (testdata/capture.sh, text form
// from 22.05 and 24.11, JSON from 24.11), else on a literal node, which the row says.
func TestStateTable(t *testing.T) {
	// evidence names, per word, the capture that shows it (file and node), or "" for a
	// literal: states a two-node test bed cannot reach or hold still.
	evidence := map[string]struct{ file, node string }{
		"IDLE":             {"show-node-idle", "n1"},
		"MIXED":            {"show-node-allocated", "n1"},
		"DOWN":             {"show-node-down", "n1"},
		"FUTURE":           {"show-node-future", "n1"},
		"DRAIN":            {"show-node-drained-nodecheck", "n1"},
		"NOT_RESPONDING":   {"show-node-not-responding", "n1"},
		"RESERVED":         {"show-node-reserved", "n1"},
		"MAINTENANCE":      {"show-node-maintenance", "n1"},
		"REBOOT_REQUESTED": {"show-node-reboot-requested", "n1"},
		"REBOOT_ISSUED":    {"show-node-reboot-issued", "n1"},
		"POWERED_DOWN":     {"show-node-n2-powered-down", "n2"},
		"FAIL":             {"show-node-fail", "n1"},
	}
	// Captured only in one version's text (the state passed too quickly for the other).
	textOnly := map[string]map[string]string{
		"POWER_DOWN":    {"24.11": "show-node-n2-power-down"},
		"POWERING_DOWN": {"22.05": "show-node-n2-power-down"},
	}
	for _, row := range StateTable {
		t.Run(row.Word, func(t *testing.T) {
			var nodes []NodeState
			var from []string
			if ev, ok := evidence[row.Word]; ok {
				for _, v := range []string{"22.05", "24.11"} {
					n, err := ParseShowNode(bytes.NewReader(readTestdata(t, "slurm-"+v+"/"+ev.file+".txt")), ev.node)
					if err != nil {
						t.Fatal(err)
					}
					nodes, from = append(nodes, n), append(from, v+" text")
				}
				n, err := ParseNodesJSON(bytes.NewReader(readTestdata(t, "slurm-24.11/"+ev.file+".json")), ev.node)
				if err != nil {
					t.Fatal(err)
				}
				nodes, from = append(nodes, n), append(from, "24.11 JSON")
			}
			for v, file := range textOnly[row.Word] {
				n, err := ParseShowNode(bytes.NewReader(readTestdata(t, "slurm-"+v+"/"+file+".txt")), "n2")
				if err != nil {
					t.Fatal(err)
				}
				nodes, from = append(nodes, n), append(from, v+" text")
			}
			if len(nodes) == 0 {
				// A literal: no capture of this state (see capture.sh).
				n := NodeState{Name: "n1", State: row.Word}
				if !row.Base {
					n = NodeState{Name: "n1", State: "IDLE", Flags: []string{row.Word}}
				}
				nodes, from = append(nodes, n), append(from, "literal")
			}
			for i, n := range nodes {
				words := append([]string{n.State}, n.Flags...)
				if !slices.Contains(words, row.Word) {
					t.Fatalf("%s: node %s does not show %s", from[i], n, row.Word)
				}
				got, why := n.Stance()
				want := row.Stance
				// The node's other words may weigh more (unknown over leave it over act).
				for _, w := range words {
					if r, _ := LookupState(w); rank(r.Stance) > rank(want) {
						want = r.Stance
					}
				}
				if got != want {
					t.Errorf("%s: %s is %q (%s), want %q", from[i], n, got, why, want)
				}
				if got == row.Stance && got != StanceAct && !strings.Contains(why, row.Word) {
					t.Errorf("%s: why %q does not name %s", from[i], why, row.Word)
				}
			}
		})
	}
}

func rank(s Stance) int {
	switch s {
	case StanceUnknown:
		return 2
	case StanceLeave:
		return 1
	}
	return 0
}

// TestStanceCombinations: the worst word wins, an unknown word is never guessed.
func TestStanceCombinations(t *testing.T) {
	tests := []struct {
		name string
		node NodeState
		want Stance
		why  string
	}{
		{"idle", NodeState{State: "IDLE"}, StanceAct, ""},
		{"mixed, drain, completing", NodeState{State: "MIXED", Flags: []string{"DRAIN", "COMPLETING"}}, StanceAct, ""},
		{"down and drained", NodeState{State: "DOWN", Flags: []string{"DRAIN"}}, StanceLeave, "DOWN"},
		{"drained, reboot requested", NodeState{State: "IDLE", Flags: []string{"DRAIN", "REBOOT_REQUESTED"}}, StanceLeave, "REBOOT_REQUESTED"},
		{"a flag nodecheck does not know", NodeState{State: "IDLE", Flags: []string{"DRAIN", "BLOCKED"}}, StanceUnknown, "BLOCKED is a state nodecheck does not know"},
		{"unknown beats leave it", NodeState{State: "DOWN", Flags: []string{"PERFCTRS"}}, StanceUnknown, "PERFCTRS"},
		{"base state UNKNOWN", NodeState{State: "UNKNOWN", Flags: []string{"NOT_RESPONDING"}}, StanceUnknown, "has not registered"},
		{"base state ERROR is not in the table", NodeState{State: "ERROR"}, StanceUnknown, "ERROR is a state"},
		{"no state", NodeState{}, StanceUnknown, "no state"},
		{"lower case from sinfo", NodeState{State: "idle", Flags: []string{"drain"}}, StanceAct, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := tc.node.Stance()
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("got %q (%s), want %q with %q", got, why, tc.want, tc.why)
			}
		})
	}
}

// TestStateTableRows: every word once, upper case, with a reason.
func TestStateTableRows(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range StateTable {
		if seen[r.Word] || r.Word != strings.ToUpper(r.Word) || r.Why == "" || rank(r.Stance) < 0 {
			t.Errorf("row %+v: repeated, not upper case or without a reason", r)
		}
		seen[r.Word] = true
	}
	for _, w := range []string{"DRAIN", "DRAINING", "DRAINED", "DOWN", "NOT_RESPONDING", "REBOOT_REQUESTED", "REBOOT_ISSUED",
		"POWERED_DOWN", "PLANNED", "MAINTENANCE", "RESERVED", "INVALID_REG", "IDLE", "ALLOCATED", "MIXED", "COMPLETING", "FUTURE", "UNKNOWN"} {
		if !seen[w] {
			t.Errorf("the table has no row for %s", w)
		}
	}
}

// TestStateTableInREADME holds the state table of the manual's draining page
// (docs/draining.md) to StateTable, row by row.
func TestStateTableInREADME(t *testing.T) {
	page := filepath.Join("..", "docs", "draining.md")
	doc, err := os.ReadFile(page)
	if err != nil {
		t.Fatalf("read the draining page: %v", err)
	}
	for _, r := range StateTable {
		row := fmt.Sprintf("| %s | %s | %s |\n", r.Word, r.Stance, r.Why)
		if !bytes.Contains(doc, []byte(row)) {
			t.Errorf("%s lacks the row %q", page, row)
		}
	}
}
