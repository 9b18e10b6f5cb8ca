package slurm

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The oracle tests run every case of hostlist_test.go through the real `scontrol show
// hostnames` / `scontrol show hostlist` of each Slurm there is here, and compare: Debian 12's
// 22.05 installed on the machine, and Debian 13's 24.11 in the root scripts/slurm-testbed.sh
// builds and caches (run with chroot; scontrol needs a slurm.conf for these offline verbs but
// contacts no daemon). Where nodecheck differs on purpose, the case records what that version
// prints, and the record is checked against it; any other version only logs what it printed,
// so it shows what changed without failing.

// scontrolPath is absolute: tests, like Slurm hooks, must not depend on PATH.
const scontrolPath = "/usr/bin/scontrol"

// trixieRoot is where scripts/slurm-testbed.sh caches the Debian 13 root with Slurm 24.11
// (NODECHECK_TESTBED_ROOT overrides it, as for the script).
func trixieRoot() string {
	if r := os.Getenv("NODECHECK_TESTBED_ROOT"); r != "" {
		return r
	}
	return "/var/cache/nodecheck-testbed/trixie-root"
}

type scontrolOracle struct {
	argv    []string // how to start scontrol: its path, or chroot ROOT and its path
	conf    string   // SLURM_CONF for every call, as scontrol sees the path
	dir     string   // the directory of conf, as this process sees it
	confDir string   // the same directory as scontrol sees it
	version string   // "22.05.8", "24.11.5"
}

// newScontrolOracles returns the Slurms this machine has to compare with; a test skips when
// there is none.
func newScontrolOracles(t *testing.T) []*scontrolOracle {
	t.Helper()
	var out []*scontrolOracle
	var why []string
	if _, err := os.Stat(scontrolPath); err != nil {
		why = append(why, fmt.Sprintf("%s not found (%v): install Debian's slurm-client", scontrolPath, err))
	} else if o, err := startOracle(t, nil, t.TempDir(), ""); err != nil {
		why = append(why, err.Error())
	} else {
		out = append(out, o)
	}
	root := trixieRoot()
	switch _, err := os.Stat(filepath.Join(root, scontrolPath)); {
	case err != nil:
		why = append(why, fmt.Sprintf("no Slurm 24.11 root at %s (%v): scripts/slurm-testbed.sh builds it", root, err))
	case os.Geteuid() != 0:
		why = append(why, "the Slurm 24.11 root needs chroot, which needs root")
	default:
		dir, err := os.MkdirTemp(filepath.Join(root, "tmp"), "nodecheck-hostlist-")
		if err != nil {
			why = append(why, fmt.Sprintf("Slurm 24.11 root: %v", err))
			break
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		inRoot := strings.TrimPrefix(dir, filepath.Clean(root))
		if o, err := startOracle(t, []string{"/usr/sbin/chroot", root}, dir, inRoot); err != nil {
			why = append(why, err.Error())
		} else {
			out = append(out, o)
		}
	}
	for _, w := range why {
		t.Logf("oracle not used: %s", w)
	}
	if len(out) == 0 {
		t.Skipf("no scontrol to compare hostlists with (%s); the literal tables in hostlist_test.go still pin the behaviour", strings.Join(why, "; "))
	}
	return out
}

// startOracle writes the minimal slurm.conf into dir (seen by scontrol as confDir, or dir when
// that is "") and asks scontrol for its version.
func startOracle(t *testing.T, prefix []string, dir, confDir string) (*scontrolOracle, error) {
	t.Helper()
	// scontrol refuses to start without a configuration, even for offline verbs such as
	// "show hostnames"; two keys are enough, and no daemon is contacted.
	if err := os.WriteFile(filepath.Join(dir, "slurm.conf"), []byte("ClusterName=x\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		return nil, err
	}
	if confDir == "" {
		confDir = dir
	}
	o := &scontrolOracle{argv: append(slices.Clone(prefix), scontrolPath), conf: filepath.Join(confDir, "slurm.conf"), dir: dir, confDir: confDir}
	out, _, err := o.run("--version")
	if err != nil {
		return nil, fmt.Errorf("%q --version: %v; cannot use it as the hostlist oracle", o.argv, err)
	}
	// "slurm-wlm 22.05.8" on Debian, "slurm 23.11.4" from SchedMD's packages.
	if fields := strings.Fields(out); len(fields) > 0 {
		o.version = fields[len(fields)-1]
	}
	t.Logf("oracle: %q: Slurm %s", o.argv, o.version)
	return o, nil
}

// record returns tc's record for this oracle's version, and whether the version is one the
// cases record (22.05 or 24.11).
func (o *scontrolOracle) record(tc hostlistCase) (*slurmRecord, bool) {
	switch {
	case strings.HasPrefix(o.version, "22.05."):
		return tc.slurm, true
	case strings.HasPrefix(o.version, "24.11."):
		switch {
		case tc.slurm2411 == nil:
			return tc.slurm, true
		case tc.slurm2411.nodecheck:
			return nil, true
		}
		return tc.slurm2411, true
	}
	return nil, false
}

// run executes scontrol with a deadline, a minimal environment, and bounded waiting.
func (o *scontrolOracle) run(args ...string) (stdout, stderr string, err error) {
	return o.runConf(o.conf, args...)
}

// runConf is run with another slurm.conf, as scontrol sees its path.
func (o *scontrolOracle) runConf(conf string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	argv := append(slices.Clone(o.argv), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"SLURM_CONF=" + conf, "PATH=/usr/bin:/bin", "LC_ALL=C"}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%q: timed out after 20s", argv)
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
		t.Fatalf("scontrol %s show hostnames %q: %v: %s", o.version, expr, err, errOut)
	}
	return splitLines(out), false
}

// hostlist returns what `scontrol show hostlist` prints for the names joined by commas.
func (o *scontrolOracle) hostlist(t *testing.T, names []string) string {
	t.Helper()
	list := strings.Join(names, ",")
	out, errOut, err := o.run("show", "hostlist", list)
	if err != nil || errOut != "" {
		t.Fatalf("scontrol %s show hostlist %q: %v: %s", o.version, list, err, errOut)
	}
	return strings.TrimSuffix(out, "\n")
}

// briefNames quotes a list of names for a message, the first few of a long one.
func briefNames(names []string) string {
	if len(names) > 8 {
		return fmt.Sprintf("%q ... (%d names)", names[:4], len(names))
	}
	return fmt.Sprintf("%q", names)
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

func TestHostlistOracle(t *testing.T) {
	for _, o := range newScontrolOracles(t) {
		t.Run(o.version, func(t *testing.T) {
			for _, tc := range hostlistCases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					compareWithScontrol(t, o, tc)
				})
			}
		})
	}
}

func compareWithScontrol(t *testing.T, o *scontrolOracle, tc hostlistCase) {
	rec, known := o.record(tc)
	if tc.slurm != nil && tc.slurm.notRun {
		t.Skipf("not compared: %s", tc.slurm.why)
	}
	gotNames, gotErr := ExpandHostlist(tc.expr)
	slurmNames, slurmInvalid := o.hostnames(t, tc.expr)
	if !known && (tc.slurm != nil || tc.slurm2411 != nil) {
		t.Logf("Slurm %s: invalid=%v names=%q (records: 22.05 %+v, 24.11 %+v)", o.version, slurmInvalid, slurmNames, tc.slurm, tc.slurm2411)
		return
	}
	if rec != nil {
		// A recorded difference: check the record against this Slurm.
		if slurmInvalid != rec.invalid {
			t.Fatalf("scontrol %s: invalid=%v, but the case records invalid=%v (%s)", o.version, slurmInvalid, rec.invalid, rec.why)
		}
		if !rec.invalid {
			if diff := cmp.Diff(rec.names, slurmNames); diff != "" {
				t.Errorf("scontrol %s output changed from the record (-record +scontrol):\n%s", o.version, diff)
			}
		}
		return
	}
	switch {
	case gotErr != nil && !slurmInvalid:
		t.Errorf("nodecheck rejects %q (%v), scontrol %s expands it to %s", tc.expr, gotErr, o.version, briefNames(slurmNames))
	case gotErr == nil && slurmInvalid:
		t.Errorf("nodecheck expands %q to %s, scontrol %s says Invalid hostlist", tc.expr, briefNames(gotNames), o.version)
	case gotErr == nil:
		if diff := cmp.Diff(slurmNames, gotNames); diff != "" {
			t.Errorf("ExpandHostlist(%q) (-scontrol %s +nodecheck):\n%s", tc.expr, o.version, diff)
		}
	}
}

func TestCompressHostlistOracle(t *testing.T) {
	for _, o := range newScontrolOracles(t) {
		t.Run(o.version, func(t *testing.T) {
			for _, tc := range compressCases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					if diff := cmp.Diff(o.hostlist(t, tc.names), CompressHostlist(tc.names)); diff != "" {
						t.Errorf("CompressHostlist(%q) (-scontrol %s +nodecheck):\n%s", tc.names, o.version, diff)
					}
				})
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
	for _, o := range newScontrolOracles(t) {
		t.Run(o.version, func(t *testing.T) {
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
						t.Fatalf("scontrol %s rejects generated %q", o.version, expr)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("ExpandHostlist(%q) (-scontrol %s +nodecheck):\n%s", expr, o.version, diff)
					}
					for _, list := range [][]string{got, names} {
						if diff := cmp.Diff(o.hostlist(t, list), CompressHostlist(list)); diff != "" {
							t.Errorf("CompressHostlist(%q) (-scontrol %s +nodecheck):\n%s", list, o.version, diff)
						}
					}
				})
			}
		})
	}
}
