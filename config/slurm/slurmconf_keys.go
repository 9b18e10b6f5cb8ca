package slurm

// The top-level keys of slurm.conf, release by release, as Slurm's own parser knows them
// (slurmconf_keys.txt, written by scripts/slurm-conf-keys.sh from read_config.c's
// slurm_conf_options[]): slurmctld refuses a file with a key its release does not know
// ("Parsing error at unrecognized key", src/common/parse_config.c, with ignore_new false for
// slurm.conf), so lint reports such keys with the releases that know them.

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nodecheck/nodecheck/config/text"
)

//go:embed slurmconf_keys.txt
var slurmConfKeysText string

// supportedReleases are the Slurm releases nodecheck is tested with (the test beds' 22.05.8
// and 24.11.5): a key either of them refuses is reported.
var supportedReleases = []string{"22.05", "24.11"}

// confKeyTable is slurmconf_keys.txt parsed.
type confKeyTable struct {
	releases []string          // column names, oldest first; "master" last
	names    []string          // keys as Slurm spells them, in file order (for suggestions)
	marks    map[string][]byte // lower-case key -> per release 'K' (read), 'D' (defunct), '-'
	spelt    map[string]string // lower-case key -> Slurm's spelling
}

// slurmConfKeys parses the embedded table once. The table is generated and tested
// (TestSlurmConfKeysTable), so a malformed line is a build mistake: it panics in tests.
var slurmConfKeys = sync.OnceValue(func() *confKeyTable {
	t, err := parseConfKeyTable(slurmConfKeysText)
	if err != nil {
		panic("slurmconf_keys.txt: " + err.Error())
	}
	return t
})

func parseConfKeyTable(text string) (*confKeyTable, error) {
	t := &confKeyTable{marks: map[string][]byte{}, spelt: map[string]string{}}
	for n, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case fields[0] == "#" && len(fields) > 2 && fields[1] == "key":
			t.releases = fields[2:]
			continue
		case strings.HasPrefix(fields[0], "#"):
			continue
		}
		if t.releases == nil || len(fields) != len(t.releases)+1 {
			return nil, fmt.Errorf("line %d: %d fields, want a key and %d marks after the header", n+1, len(fields), len(t.releases))
		}
		m := make([]byte, len(t.releases))
		for i, f := range fields[1:] {
			if f != "K" && f != "D" && f != "-" {
				return nil, fmt.Errorf("line %d: mark %q, want K, D or -", n+1, f)
			}
			m[i] = f[0]
		}
		lk := strings.ToLower(fields[0])
		if _, dup := t.marks[lk]; dup {
			return nil, fmt.Errorf("line %d: %s twice", n+1, fields[0])
		}
		t.marks[lk], t.spelt[lk] = m, fields[0]
		t.names = append(t.names, fields[0])
	}
	for _, r := range supportedReleases {
		if !slices.Contains(t.releases, r) {
			return nil, fmt.Errorf("no column for release %s", r)
		}
	}
	if len(t.names) < 100 {
		return nil, fmt.Errorf("%d keys: too few for slurm.conf", len(t.names))
	}
	return t, nil
}

// releaseText names releases for a message: runs of neighbouring columns become
// "22.05 to 23.11", a run to the development branch "24.11 and later", the development
// branch alone "after 25.11 (its development branch)". The words follow "Slurm".
func (t *confKeyTable) releaseText(which []bool) string {
	var parts []string
	last := len(t.releases) - 1
	for i := 0; i <= last; i++ {
		if !which[i] {
			continue
		}
		j := i
		for j < last && which[j+1] {
			j++
		}
		switch {
		case t.releases[j] == "master" && i == j:
			parts = append(parts, "after "+t.releases[last-1]+" (its development branch)")
		case t.releases[j] == "master":
			parts = append(parts, t.releases[i]+" and later")
		case i == j:
			parts = append(parts, t.releases[i])
		default:
			parts = append(parts, t.releases[i]+" to "+t.releases[j])
		}
		i = j
	}
	return strings.Join(parts, ", ")
}

// checkKey judges a top-level key as the releases' parsers do. It returns "" for a key every
// supported release reads; otherwise the severity (error: no release knows it; warning: a
// supported release refuses it or ignores it as defunct) and the message, after "Key=".
func (t *confKeyTable) checkKey(key string) (sev, msg string) {
	m, ok := t.marks[strings.ToLower(key)]
	if !ok {
		hint := ""
		if s := text.DidYouMean(key, t.names); s != "" {
			hint = " (did you mean " + s + "=?)"
		}
		return SeverityError, fmt.Sprintf("unknown key %s=%s: no Slurm release from %s to %s, nor the development branch, reads it, and slurmctld refuses the file (Parsing error at unrecognized key: %s): fix or remove it",
			key, hint, t.releases[0], t.releases[len(t.releases)-2], key)
	}
	name := t.spelt[strings.ToLower(key)]
	known, refused, defunct := make([]bool, len(m)), make([]bool, len(m)), make([]bool, len(m))
	var refusedBy, defunctIn []string
	for i, c := range m {
		known[i], refused[i], defunct[i] = c != '-', c == '-', c == 'D'
		if r := t.releases[i]; slices.Contains(supportedReleases, r) {
			switch c {
			case '-':
				refusedBy = append(refusedBy, r)
			case 'D':
				defunctIn = append(defunctIn, r)
			}
		}
	}
	switch {
	case len(refusedBy) > 0:
		return SeverityWarning, fmt.Sprintf("%s= is read only by Slurm %s: slurmctld %s refuses the file (Parsing error at unrecognized key: %s): keep it only where every Slurm that reads this file knows it",
			name, t.releaseText(known), t.releaseText(refused), key)
	case len(defunctIn) > 0:
		return SeverityWarning, fmt.Sprintf("%s= is defunct in Slurm %s: slurmctld logs an error (The option \"%s\" is defunct) and ignores it: remove it",
			name, t.releaseText(defunct), key)
	}
	return "", ""
}
