package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
)

// testGlobals are globals writing to buffers, with the environment env.
func testGlobals(env map[string]string) (*globals, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &globals{argv0: "nodecheck", stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return env[k] }}, &out, &errb
}

// verdict is a result without its timing: what must replay identically.
type verdict struct {
	Check    string
	Status   checks.Status
	Summary  string
	Observed string
	Expected string
	Details  []checks.Detail
}

// jsonReport is the part of `nodecheck run --format json` compared here.
type jsonReport struct {
	Node    string `json:"node"`
	Healthy bool   `json:"healthy"`
	Results []struct {
		Check    string          `json:"check"`
		Status   checks.Status   `json:"status"`
		Summary  string          `json:"summary"`
		Observed string          `json:"observed"`
		Expected string          `json:"expected"`
		Remedy   checks.Remedy   `json:"remedy"`
		Details  []checks.Detail `json:"details"`
	} `json:"results"`
}

// runVerdicts runs `nodecheck run --all --format json` with o's source and returns the
// report's verdicts and the exit code.
func runVerdicts(t *testing.T, env map[string]string, o runOpts) (string, []verdict, int) {
	t.Helper()
	g, out, errb := testGlobals(env)
	o.all, o.format = true, "json"
	if o.mode == "" {
		o.mode = "manual"
	}
	if o.snapshot == "" && o.stateDir == "" {
		// A live run keeps the node's history: in the test's own directory, never the
		// machine's /var/lib/nodecheck.
		o.stateDir = t.TempDir()
	}
	code := runChecks(context.Background(), g, o)
	if code == exitCannotRun {
		t.Fatalf("run: exit 2; stderr:\n%s", errb)
	}
	var rep jsonReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("run: %v; output:\n%s", err, out)
	}
	var vs []verdict
	for _, r := range rep.Results {
		vs = append(vs, verdict{r.Check, r.Status, r.Summary, r.Observed, r.Expected, r.Details})
	}
	return rep.Node, vs, code
}

func verdictsOf(rep checks.Report) []verdict {
	var vs []verdict
	for _, r := range rep.Results {
		d := []checks.Detail{}
		for _, x := range r.Details {
			x.Subject = checks.Subject{} // not in the JSON report the replay is read from
			d = append(d, x)
		}
		vs = append(vs, verdict{r.Check, r.Status, r.Summary, r.Observed, r.Expected, d})
	}
	return vs
}

// volatileChecks judge facts that change between two runs on a live machine: free memory and
// space, and the processes (other tests start and stop daemons here). A second live run is
// not compared with the replay for them; the recorded run is, exactly.
var volatileChecks = []string{"fs_usage", "memory", "services", "load_average"}

func withoutVolatile(vs []verdict) []verdict {
	var out []verdict
	for _, v := range vs {
		if !slices.Contains(volatileChecks, v.Check) {
			out = append(out, v)
		}
	}
	return out
}

// TestSnapshotLiveRoundTrip records the machine running the test (no GPU, a real /sys),
// replays the recording, and checks that the replay says what the live run said.
func TestSnapshotLiveRoundTrip(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	// A slurm.conf that makes this machine a 2-GPU node, so that the GPU checks look at
	// /dev, the PCI bus and NVML rather than skip; away from the default paths, so that the
	// replay must find it through meta.json.
	etc := t.TempDir()
	slurmConf := filepath.Join(etc, "slurm.conf")
	short, _, _ := strings.Cut(host, ".")
	writeFiles(t, map[string]string{
		slurmConf:                            "ClusterName=test\nGresTypes=gpu\nNodeName=" + short + " Gres=gpu:h100:2 CPUs=2\n",
		filepath.Join(etc, "gres.conf"):      "Name=gpu Type=h100 File=/dev/nvidia[0-1]\n",
		filepath.Join(etc, "nodecheck.toml"): "[checks.ib_ports]\nmin_rate_gbps = 200\n",
	})
	if err := os.Chmod(filepath.Join(etc, "nodecheck.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    snapshotOpts
	}{
		{name: "defaults"},
		{name: "slurm.conf and config elsewhere", o: snapshotOpts{slurmConf: slurmConf, configPath: filepath.Join(etc, "nodecheck.toml")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "snap")
			o := tc.o
			o.out = dir
			g, out, errb := testGlobals(nil)
			res, err := recordNode(context.Background(), g, o)
			if err != nil {
				t.Fatalf("recordNode: %v; stderr:\n%s", err, errb)
			}
			printRecorded(out, dir, res)
			t.Logf("snapshot:\n%s", out)

			// The live run keeps the node's history (in a directory of the test's), and so
			// does its replay with --state-dir; the recording keeps none, nor does a replay
			// without --state-dir.
			liveNode, live, liveCode := runVerdicts(t, nil, runOpts{slurmConf: o.slurmConf, configPath: o.configPath})
			replayNode, replay, replayCode := runVerdicts(t, nil, runOpts{snapshot: dir, stateDir: t.TempDir()})
			if diff := cmp.Diff(withoutVolatile(live), withoutVolatile(replay)); diff != "" {
				t.Errorf("replay differs from the live run (-live +replay):\n%s", diff)
			}
			_, replay, _ = runVerdicts(t, nil, runOpts{snapshot: dir})
			if diff := cmp.Diff(verdictsOf(res.report), replay); diff != "" {
				t.Errorf("replay differs from the recorded run (-recorded +replay):\n%s", diff)
			}
			if liveNode != replayNode || liveCode != replayCode {
				t.Errorf("live node %q exit %d, replay node %q exit %d", liveNode, liveCode, replayNode, replayCode)
			}
			if len(live) != len(checks.All()) {
				t.Errorf("%d results, want one per check", len(live))
			}
			checkSnapshotTree(t, dir)
		})
	}
}

// checkSnapshotTree checks what a recording of this machine holds: the PCI bus with its
// links (names with ':'), no secrets, and an nvml.json.
func checkSnapshotTree(t *testing.T, dir string) {
	t.Helper()
	if ents, err := os.ReadDir("/sys/bus/pci/devices"); err == nil && len(ents) > 0 {
		name := ents[0].Name()
		link := filepath.Join(dir, "fs/sys/bus/pci/devices", name)
		fi, err := os.Lstat(link)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s: %v, %v; want a link as in sysfs", link, fi, err)
		}
		if b, err := os.ReadFile(filepath.Join(link, "vendor")); err != nil || !strings.HasPrefix(string(b), "0x") {
			t.Errorf("vendor of %s through its link = %q, %v", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nvml.json")); err != nil {
		t.Errorf("no nvml.json: %v", err)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		for _, bad := range []string{"munge", "shadow", "ssh", "fs/root", "fs/home", "counters"} {
			if strings.Contains(rel, bad) {
				t.Errorf("snapshot holds %s", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFiles(t *testing.T, files map[string]string) {
	t.Helper()
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSnapshotOfSnapshot records each repository snapshot again, through a Recorder over the
// replay, and checks that the copy replays exactly as the original.
func TestSnapshotOfSnapshot(t *testing.T) {
	metas, err := filepath.Glob(filepath.Join(repoRoot, "testdata", "snapshots", "*", "meta.json"))
	if err != nil || len(metas) == 0 {
		t.Skipf("no repository snapshots here (%v): they exist only in a checkout", err)
	}
	for _, meta := range metas {
		orig := filepath.Dir(meta)
		t.Run(filepath.Base(orig), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "again")
			g, _, errb := testGlobals(nil)
			res, err := recordNode(context.Background(), g, snapshotOpts{out: dir, from: orig})
			if err != nil {
				t.Fatalf("recordNode: %v; stderr:\n%s", err, errb)
			}
			node1, want, code1 := runVerdicts(t, nil, runOpts{snapshot: orig})
			node2, got, code2 := runVerdicts(t, nil, runOpts{snapshot: dir})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the copy replays differently (-original +copy):\n%s", diff)
			}
			if diff := cmp.Diff(verdictsOf(res.report), got); diff != "" {
				t.Errorf("the copy replays differently from the recording run (-recorded +copy):\n%s", diff)
			}
			if node1 != node2 || code1 != code2 {
				t.Errorf("original node %q exit %d, copy node %q exit %d", node1, code1, node2, code2)
			}
			s, err := node.OpenSnapshot(dir)
			if err != nil {
				t.Fatal(err)
			}
			if m := s.Meta(); m.NodeName != res.meta.NodeName || m.NodecheckVersion == "" || m.TakenAt.IsZero() {
				t.Errorf("meta.json = %+v", m)
			}
		})
	}
}

// TestSnapshotCommand drives the verb through cobra, as the root command will once it is
// registered there.
func TestSnapshotCommand(t *testing.T) {
	h100 := filepath.Join(repoRoot, "testdata", "snapshots", "h100-healthy")
	if _, err := os.Stat(h100); err != nil {
		t.Skip("no repository snapshots here")
	}
	exec := func(args ...string) (string, string, int) {
		g, out, errb := testGlobals(nil)
		root := newRootCmd(g)
		root.AddCommand(newSnapshotCmd(g))
		root.SetArgs(args)
		root.SetOut(out)
		root.SetErr(errb)
		err := root.ExecuteContext(context.Background())
		code := exitHealthy
		var ee exitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			code = ee.code
		default:
			code = exitCannotRun
			errb.WriteString(err.Error())
		}
		return out.String(), errb.String(), code
	}

	t.Run("no --out", func(t *testing.T) {
		_, stderr, code := exec("snapshot")
		if code != exitCannotRun || !strings.Contains(stderr, "--out DIR is required") {
			t.Errorf("exit %d, stderr %q; want 2 and a usage error", code, stderr)
		}
	})
	t.Run("not empty", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, map[string]string{filepath.Join(dir, "x"): "x"})
		_, stderr, code := exec("snapshot", "--out", dir)
		if code != exitCannotRun || !strings.Contains(stderr, "directory is not empty") {
			t.Errorf("exit %d, stderr %q; want 2 and a clear error", code, stderr)
		}
	})
	t.Run("live", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "snap")
		stdout, stderr, code := exec("snapshot", "--out", dir, "--node", "testnode")
		if code != exitHealthy {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		for _, want := range []string{"recorded node testnode", "checks:", "files:", "devices:", "commands:", "nvml:", "size:", "replay with: nodecheck run --all --snapshot " + dir} {
			if !strings.Contains(stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
		s, err := node.OpenSnapshot(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m := s.Meta(); m.NodeName != "testnode" || m.Hostname == "" || m.NodecheckVersion != versionString() {
			t.Errorf("meta.json = %+v", m)
		}
	})
}

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {150 << 10, "150.0 KiB"}, {3 << 20, "3.0 MiB"},
	} {
		if got := humanBytes(tc.n); got != tc.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
