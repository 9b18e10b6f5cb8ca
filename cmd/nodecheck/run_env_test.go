package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// runCtx is run with a context the test controls (cancelled: as SIGTERM does in main).
func runCtx(ctx context.Context, env map[string]string, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code = execute(ctx, append([]string{"nodecheck"}, args...), strings.NewReader(""), &out, &errb, getenv)
	return out.String(), errb.String(), code
}

// TestRunRelativeSlurmConf: --slurm-conf live/slurm.conf is relative to the working
// directory, as in lint; one that is not there there is a usage error naming the absolute
// path, never a HEALTHY run without slurm.conf.
func TestRunRelativeSlurmConf(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "live"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "live", "slurm.conf"), []byte("NodeName=gpu01 Gres=gpu:8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	out, stderr, _ := runCLI(t, nil, "run", "--slurm-conf", "live/slurm.conf", "--node", "gpu01", "--check", "gres_devices", "--details")
	if want := "slurm.conf " + filepath.Join(dir, "live", "slurm.conf") + " (--slurm-conf)\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q; stdout:\n%s\nstderr:\n%s", want, out, stderr)
	}
	out, stderr, code := runCLI(t, nil, "run", "--slurm-conf", "elsewhere/slurm.conf", "--node", "gpu01")
	if code != exitCannotRun || !strings.Contains(stderr, "--slurm-conf "+filepath.Join(dir, "elsewhere", "slurm.conf")+" does not exist") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(out, "HEALTHY") {
		t.Errorf("a run without its slurm.conf printed a verdict:\n%s", out)
	}
}

// TestRunNeverHealthyWithoutSlurmConf: a run on a node where no slurm.conf can be found
// (Slurm keeps it somewhere nodecheck did not look) has checks that say error, and the
// verdict is undecided, never HEALTHY; a manual run exits 3.
func TestRunNeverHealthyWithoutSlurmConf(t *testing.T) {
	snap := undecidedSnapshot(t)
	out, _, code := runCLI(t, nil, "run", "--snapshot", snap, "--check", "gres_devices,gpu_count,gpu_models")
	if code != exitUndecided {
		t.Errorf("exit %d, want %d", code, exitUndecided)
	}
	if regexp.MustCompile(`(?m)^HEALTHY`).MatchString(out) || !strings.Contains(out, "UNDECIDED: 3 checks could not decide (gres_devices, gpu_count, gpu_models)") {
		t.Errorf("output:\n%s", out)
	}
}

// TestRunInterrupted: a run told to stop (SIGTERM cancels main's context) mid-check is
// undecided and says so, acts on nothing, and exits 3 by hand (0 in a prolog).
func TestRunInterrupted(t *testing.T) {
	hang := filepath.Join(repoRoot, "testdata", "snapshots", "h100-ib-hang") // IB reads stall 60 s
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int
	}{
		{"manual", nil, exitUndecided},
		{"prolog", map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "42"}, exitHealthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, scenario := fakeSlurmConfig(t, map[string]string{"version.out": "slurm-wlm 22.05.8\n",
				"show.out": "NodeName=n1 Arch=x86_64 State=IDLE ThreadsPerCore=1\n"}, "", "")
			env := map[string]string{"SLURM_CONF": scenario}
			for k, v := range tc.env {
				env[k] = v
			}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			start := time.Now()
			out, stderr, code := runCtx(ctx, env, "run", "--config", cfg, "--snapshot", hang, "--node", "n1", "--drain", "--format", "json")
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("an interrupted run took %s", d)
			}
			if code != tc.want {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.want, stderr)
			}
			var rep struct {
				Verdict     string `json:"verdict"`
				Healthy     bool   `json:"healthy"`
				Interrupted bool   `json:"interrupted"`
				Drain       struct {
					Action, Message string
				} `json:"drain"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if rep.Verdict != "undecided" || rep.Healthy || !rep.Interrupted {
				t.Errorf("verdict %q healthy %v interrupted %v, want undecided and interrupted", rep.Verdict, rep.Healthy, rep.Interrupted)
			}
			if rep.Drain.Action != "skipped" || !strings.Contains(rep.Drain.Message, "interrupted") || strings.Contains(rep.Drain.Message, "budget") {
				t.Errorf("drain %+v, want skipped because interrupted", rep.Drain)
			}
			if calls := fakeCalls(t, scenario); len(calls) > 0 {
				t.Errorf("an interrupted run called Slurm: %q", calls)
			}
		})
	}
}

// TestRunSlurmLimitBudget: the prolog's budget stays below the PrologEpilogTimeout of the
// slurm.conf the run reads, and --details and the JSON say which limit it used.
func TestRunSlurmLimitBudget(t *testing.T) {
	snap := undecidedSnapshot(t)
	conf := "# written for this test\nPrologEpilogTimeout=3\nNodeName=gpu01 Gres=gpu:8\n"
	if err := os.MkdirAll(filepath.Join(snap, "fs", "etc", "slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "fs", "etc", "slurm", "slurm.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	prolog := map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "42"}
	out, _, _ := runCLI(t, prolog, "run", "--snapshot", snap, "--check", "gres_devices", "--details")
	if want := "budget 2s (budget.prolog, built-in default: 5s; Slurm PrologEpilogTimeout 3s (slurm.conf:2), less a margin)\n"; !strings.Contains(out, want) {
		t.Errorf("--details lacks %q:\n%s", want, out)
	}
	out, _, _ = runCLI(t, prolog, "run", "--snapshot", snap, "--check", "gres_devices", "--format", "json")
	for _, want := range []string{`"seconds": 2,`, `"slurm_limit": "PrologEpilogTimeout",`, `"slurm_limit_seconds": 3,`, `"slurm_limit_set_at": "/etc/slurm/slurm.conf:2",`} {
		if !strings.Contains(out, want) {
			t.Errorf("JSON lacks %s:\n%s", want, out)
		}
	}
}

// TestManPagesNameShippedReadme: the man pages (generated from the commands' help) refer to
// the README and the manual in docs/ at the paths the packages install them
// (scripts/nfpm.yaml), and only to pages the repository holds, not to a file the package does
// not ship.
func TestManPagesNameShippedReadme(t *testing.T) {
	nfpm, err := os.ReadFile(filepath.Join(repoRoot, "scripts", "nfpm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const docDir = "/usr/share/doc/nodecheck/"
	for _, install := range []string{"src: README.md\n    dst: " + docDir + "README.md", "src: docs/*.md\n    dst: " + docDir + "docs/"} {
		if !strings.Contains(string(nfpm), install) {
			t.Errorf("scripts/nfpm.yaml lacks %q", install)
		}
	}
	installed := regexp.MustCompile(regexp.QuoteMeta(docDir) + `((?:docs/)?[\w.-]+\.md)`)
	root := newRootCmd(&globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }})
	named := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		text := c.Long + c.Short + c.Example
		for _, m := range installed.FindAllStringSubmatch(text, -1) {
			named++
			if _, err := os.Stat(filepath.Join(repoRoot, m[1])); err != nil {
				t.Errorf("%s's help names %s, which the repository does not hold: %v", c.CommandPath(), m[0], err)
			}
		}
		if rest := installed.ReplaceAllString(text, ""); strings.Contains(rest, "README") || strings.Contains(rest, ".md") {
			t.Errorf("%s's help names a document without where it is installed:\n%s", c.CommandPath(), text)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if named == 0 {
		t.Error("no help names the installed README or manual")
	}
}
