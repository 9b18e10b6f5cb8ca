package config

import (
	"regexp"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// TestSameTypoSameSuggestion: nodecheck.toml and slurm.conf suggest through one did-you-mean
// (text.DidYouMean), so one typo of "state" (a nodecheck.toml section and a slurm.conf NodeName
// key) gets one answer in both. Before, slurm.conf had a Levenshtein of its own that counted a
// swap as two edits and allowed two edits in short words, where nodecheck.toml allowed one.
func TestSameTypoSameSuggestion(t *testing.T) {
	tomlHint := regexp.MustCompile(`\(did you mean "(\w+)"\?\)`)
	slurmHint := regexp.MustCompile(`\(did you mean (\w+)=\?\)`)
	tests := []struct{ typo, want string }{
		{"stat", "state"},
		{"sate", "state"},
		{"sttae", "state"}, // a swap is one edit
		{"states", "state"},
		{"stt", ""}, // two edits in a short word are too many (Levenshtein said State)
		{"colour", ""},
	}
	for _, tc := range tests {
		t.Run(tc.typo, func(t *testing.T) {
			_, tomlErr := ParseConfig([]byte(tc.typo+" = 1\n"), "nodecheck.toml", testSchema())
			if tomlErr == nil {
				t.Fatalf("nodecheck.toml with key %q: no error", tc.typo)
			}
			fromTOML := ""
			if m := tomlHint.FindStringSubmatch(tomlErr.Error()); m != nil {
				fromTOML = m[1]
			}

			sc, err := slurm.ParseSlurmConf([]byte("NodeName=gpu01 "+tc.typo+"=IDLE\n"), "slurm.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Problems) != 1 {
				t.Fatalf("slurm.conf with key %s=: problems %v, want one", tc.typo, sc.Problems)
			}
			fromSlurm := ""
			if m := slurmHint.FindStringSubmatch(sc.Problems[0].Message); m != nil {
				fromSlurm = m[1]
			}

			if fromTOML != tc.want || !strings.EqualFold(fromSlurm, tc.want) {
				t.Errorf("typo %q: nodecheck.toml suggests %q (%v), slurm.conf %q (%s); want %q in both",
					tc.typo, fromTOML, tomlErr, fromSlurm, sc.Problems[0].Message, tc.want)
			}
		})
	}
}
