package slurm

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The oracle tests run every case of hostlist_test.go through the real `scontrol show
// hostnames` / `scontrol show hostlist` and compare. Where nodecheck differs on purpose, the
// case records what Slurm 22.05 prints, and that record is checked too when the installed
// Slurm is 22.05; another version only logs what it printed, so a newer Slurm (23.11 accepts
// suffixes) shows what changed without failing.

// scontrolPath is absolute: tests, like Slurm hooks, must not depend on PATH.
const scontrolPath = "/usr/bin/scontrol"

type scontrolOracle struct {
	conf    string // SLURM_CONF for every call
	version string // "22.05.8"
}

func newScontrolOracle(t *testing.T) *scontrolOracle {
	t.Helper()
	if _, err := os.Stat(scontrolPath); err != nil {
		t.Skipf("%s not found (%v): install Debian's slurm-client to compare hostlists with Slurm; "+
			"the literal tables in hostlist_test.go still pin the behaviour", scontrolPath, err)
	}
	// scontrol refuses to start without a configuration, even for offline verbs such as
	// "show hostnames"; two keys are enough, and no daemon is contacted.
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=x\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := &scontrolOracle{conf: conf}
	out, _, err := o.run("--version")
	if err != nil {
		t.Skipf("%s --version: %v; cannot use it as the hostlist oracle", scontrolPath, err)
	}
	// "slurm-wlm 22.05.8" on Debian, "slurm 23.11.4" from SchedMD's packages.
	fields := strings.Fields(out)
	if len(fields) > 0 {
		o.version = fields[len(fields)-1]
	}
	return o
}

func (o *scontrolOracle) is2205() bool { return strings.HasPrefix(o.version, "22.05.") }

// run executes scontrol with a deadline, a minimal environment, and bounded waiting.
func (o *scontrolOracle) run(args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, scontrolPath, args...)
	cmd.Env = []string{"SLURM_CONF=" + o.conf, "PATH=/usr/bin:/bin", "LC_ALL=C"}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %q: timed out after 20s", scontrolPath, args)
	}
	return so.String(), se.String(), err
}

// hostnames returns what `scontrol show hostnames expr` prints, or invalid when scontrol says
// "Invalid hostlist" (on stderr, with exit status 0).
func (o *scontrolOracle) hostnames(t *testing.T, expr string) (names []string, invalid bool) {
	t.Helper()
	out, errOut, err := o.run("show", "hostnames", expr)
	if strings.Contains(errOut, "Invalid hostlist") {
		return nil, true
	}
	if err != nil {
		t.Fatalf("scontrol show hostnames %q: %v: %s", expr, err, errOut)
	}
	return splitLines(out), false
}

// hostlist returns what `scontrol show hostlist` prints for the names joined by commas.
func (o *scontrolOracle) hostlist(t *testing.T, names []string) string {
	t.Helper()
	list := strings.Join(names, ",")
	out, errOut, err := o.run("show", "hostlist", list)
	if err != nil || errOut != "" {
		t.Fatalf("scontrol show hostlist %q: %v: %s", list, err, errOut)
	}
	return strings.TrimSuffix(out, "\n")
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

func TestHostlistOracle(t *testing.T) {
	o := newScontrolOracle(t)
	t.Logf("oracle: %s %s", scontrolPath, o.version)
	for _, tc := range hostlistCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.slurm != nil && tc.slurm.notRun {
				t.Skipf("not compared: %s", tc.slurm.why)
			}
			gotNames, gotErr := ExpandHostlist(tc.expr)
			slurmNames, slurmInvalid := o.hostnames(t, tc.expr)

			if tc.slurm != nil {
				// A recorded difference: check the record against this Slurm.
				if !o.is2205() {
					t.Logf("Slurm %s: invalid=%v names=%q (22.05 record: invalid=%v names=%q; %s)",
						o.version, slurmInvalid, slurmNames, tc.slurm.invalid, tc.slurm.names, tc.slurm.why)
					return
				}
				if slurmInvalid != tc.slurm.invalid {
					t.Fatalf("scontrol %s: invalid=%v, but the case records invalid=%v (%s)",
						o.version, slurmInvalid, tc.slurm.invalid, tc.slurm.why)
				}
				if !tc.slurm.invalid {
					if diff := cmp.Diff(tc.slurm.names, slurmNames); diff != "" {
						t.Errorf("scontrol %s output changed from the record (-record +scontrol):\n%s", o.version, diff)
					}
				}
				return
			}

			switch {
			case gotErr != nil && !slurmInvalid:
				t.Errorf("nodecheck rejects %q (%v), scontrol expands it to %q", tc.expr, gotErr, slurmNames)
			case gotErr == nil && slurmInvalid:
				t.Errorf("nodecheck expands %q to %q, scontrol says Invalid hostlist", tc.expr, gotNames)
			case gotErr == nil:
				if diff := cmp.Diff(slurmNames, gotNames); diff != "" {
					t.Errorf("ExpandHostlist(%q) (-scontrol +nodecheck):\n%s", tc.expr, diff)
				}
			}
		})
	}
}

func TestCompressHostlistOracle(t *testing.T) {
	o := newScontrolOracle(t)
	for _, tc := range compressCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(o.hostlist(t, tc.names), CompressHostlist(tc.names)); diff != "" {
				t.Errorf("CompressHostlist(%q) (-scontrol +nodecheck):\n%s", tc.names, diff)
			}
		})
	}
}

// randomHostlist builds a valid expression in the grammar that Slurm 22.05 and nodecheck
// share: elements of literal text and brackets, the last bracket closing the element.
func randomHostlist(r *rand.Rand) string {
	prefixes := []string{"n", "gpu", "a-", "r0_", "x.y", ""}
	var elems []string
	for range 1 + r.IntN(3) {
		var sb strings.Builder
		brackets := r.IntN(4)
		if brackets == 0 {
			fmt.Fprintf(&sb, "%s%s", prefixes[r.IntN(len(prefixes))], randomNumber(r))
			elems = append(elems, sb.String())
			continue
		}
		for b := range brackets {
			p := prefixes[r.IntN(len(prefixes))]
			if b > 0 && r.IntN(3) == 0 {
				p = "" // adjacent brackets
			}
			sb.WriteString(p)
			sb.WriteByte('[')
			for i := range 1 + r.IntN(3) {
				if i > 0 {
					sb.WriteByte(',')
				}
				lo := r.IntN(12)
				width := r.IntN(4)
				if r.IntN(2) == 0 {
					fmt.Fprintf(&sb, "%0*d", width, lo)
				} else {
					fmt.Fprintf(&sb, "%0*d-%0*d", width, lo, r.IntN(3), lo+r.IntN(4))
				}
			}
			sb.WriteByte(']')
		}
		elems = append(elems, sb.String())
	}
	return strings.Join(elems, []string{",", " ", ",,"}[r.IntN(3)])
}

func randomNumber(r *rand.Rand) string {
	switch r.IntN(3) {
	case 0:
		return ""
	case 1:
		return fmt.Sprint(r.IntN(120))
	default:
		return fmt.Sprintf("%0*d", 1+r.IntN(3), r.IntN(120))
	}
}

// TestHostlistOracleRandom compares a fixed-seed sample of generated expressions, and
// compresses their expansions and generated name lists, against scontrol.
func TestHostlistOracleRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the randomized scontrol comparison")
	}
	o := newScontrolOracle(t)
	r := rand.New(rand.NewPCG(2205, 8))
	for i := range 150 {
		expr := randomHostlist(r)
		names := make([]string, 1+r.IntN(12))
		for j := range names {
			names[j] = []string{"n", "m", "n0", "rack1_n", ""}[r.IntN(5)] + randomNumber(r)
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			got, err := ExpandHostlist(expr)
			if err != nil {
				t.Fatalf("ExpandHostlist(%q): %v", expr, err)
			}
			want, invalid := o.hostnames(t, expr)
			if invalid {
				t.Fatalf("scontrol rejects generated %q", expr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ExpandHostlist(%q) (-scontrol +nodecheck):\n%s", expr, diff)
			}
			for _, list := range [][]string{got, names} {
				if diff := cmp.Diff(o.hostlist(t, list), CompressHostlist(list)); diff != "" {
					t.Errorf("CompressHostlist(%q) (-scontrol +nodecheck):\n%s", list, diff)
				}
			}
		})
	}
}
