package drain

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeBin is the scontrol and sinfo stand-in; see its header.
func fakeBin(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "bin", "fake-slurm"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// scenario writes the fake's files into a new directory and returns it; Client passes it to
// the fake as SLURM_CONF.
func scenario(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func calls(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "argv.log"))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func TestClientNodeFormats(t *testing.T) {
	text := string(readTestdata(t, "slurm-22.05/show-node-drained-admin.txt"))
	js := string(readTestdata(t, "slurm-24.11/show-node-draining.json"))
	draining := NodeState{Name: "n1", State: "MIXED", Flags: []string{"DRAIN"}, Reason: "nodecheck: gres_devices: /dev/nvidia5: missing", ReasonUser: "root",
		ReasonTime: time.Unix(1796286655, 0).UTC()}
	admin := NodeState{Name: "n1", State: "IDLE", Flags: []string{"DRAIN", "NOT_RESPONDING"}, Reason: "maintenance", ReasonUser: "root"}
	tests := []struct {
		name      string
		files     map[string]string
		format    Format
		node      string
		want      NodeState
		wantCalls []string
	}{
		{"22.05 reads text", map[string]string{"version.out": "slurm-wlm 22.05.8\n", "show.out": text}, FormatAuto, "n1", admin,
			[]string{"[--version]", "[show][node][-o][--future][n1]"}},
		{"24.11 reads JSON", map[string]string{"version.out": string(readTestdata(t, "slurm-24.11/version.txt")), "json.out": js}, FormatAuto, "n1", draining,
			[]string{"[--version]", "[--json][show][node][--future][n1]"}},
		{"version unknown falls back to text", map[string]string{"version.exit": "1", "show.out": text}, FormatAuto, "n1", admin,
			[]string{"[--version]", "[show][node][-o][--future][n1]"}},
		{"fixed text format asks no version", map[string]string{"show.out": text}, FormatText, "n1", admin,
			[]string{"[show][node][-o][--future][n1]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := scenario(t, tc.files)
			c := New(fakeBin(t), fakeBin(t), WithSlurmConf(dir), WithFormat(tc.format))
			got, err := c.Node(context.Background(), tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("node (-want +got):\n%s", diff)
			}
			// The version is asked once per client, not once per call.
			if _, err := c.Node(context.Background(), tc.node); err != nil {
				t.Fatal(err)
			}
			want := append(tc.wantCalls, tc.wantCalls[len(tc.wantCalls)-1])
			if diff := cmp.Diff(want, calls(t, dir)); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClientUpdateArgv: the reason is one argument, passed as is; nodecheck's environment does
// not leak into scontrol's.
func TestClientUpdateArgv(t *testing.T) {
	t.Setenv("NODECHECK_TEST_LEAK", "1")
	dir := scenario(t, nil)
	c := New(fakeBin(t), fakeBin(t), WithSlurmConf(dir))
	reason := "nodecheck: ib_ports: mlx5_5/1: x=y 'DOWN' $HOME `id` ;"
	if err := c.Update(context.Background(), Update{Node: "n1", State: "DRAIN", Reason: reason}); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(context.Background(), Update{Node: "n1", State: "RESUME"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"[update][NodeName=n1][State=DRAIN][Reason=" + reason + "]", "[update][NodeName=n1][State=RESUME]"}
	if diff := cmp.Diff(want, calls(t, dir)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	env, err := os.ReadFile(filepath.Join(dir, "env.log"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(env, []byte("NODECHECK_TEST_LEAK")) || !bytes.Contains(env, []byte("LANG=C")) || !bytes.Contains(env, []byte("SLURM_CONF="+dir)) {
		t.Errorf("scontrol's environment:\n%s", env)
	}
}

func TestClientFailures(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		prog     string
		timeout  time.Duration
		wantErr  string
		deadline bool // the error wraps context.DeadlineExceeded
		maxTime  time.Duration
	}{
		{"controller unreachable", map[string]string{"show.stderr": "slurm_load_node error: Unable to contact slurm controller (connect failure)\n", "show.exit": "1"},
			"", time.Second, "fake-slurm show node -o --future n1: exit 1: slurm_load_node error: Unable to contact slurm controller (connect failure)", false, 0},
		{"unknown node: scontrol says so on stdout", map[string]string{"show.out": "Node n1 not found\n", "show.exit": "1"}, "", time.Second, "show node -o --future n1: exit 1: Node n1 not found", false, 0},
		{"hangs past the timeout", map[string]string{"show.sleep": "30"}, "", 200 * time.Millisecond, "no answer within", true, 2 * time.Second},
		{"child holds stdout open", map[string]string{"show.sleep": "30", "show.fork": ""}, "", 200 * time.Millisecond, "no answer within", true, 2 * time.Second},
		{"not installed", nil, "/nonexistent/scontrol", time.Second, "/nonexistent/scontrol show node -o --future n1: no such file or directory", false, 0},
		{"relative path", nil, "scontrol", time.Second, "program path is not absolute", false, 0},
		{"garbage output", map[string]string{"show.out": "hello\n"}, "", time.Second, `scontrol printed no NodeName= line for "n1"`, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := scenario(t, tc.files)
			prog := tc.prog
			if prog == "" {
				prog = fakeBin(t)
			}
			c := New(prog, prog, WithSlurmConf(dir), WithFormat(FormatText), WithTimeout(tc.timeout))
			start := time.Now()
			_, err := c.Node(context.Background(), "n1")
			el := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if errors.Is(err, context.DeadlineExceeded) != tc.deadline {
				t.Errorf("errors.Is(err, DeadlineExceeded) = %v, want %v", !tc.deadline, tc.deadline)
			}
			if tc.maxTime > 0 && el > tc.maxTime {
				t.Errorf("took %s, want under %s", el, tc.maxTime)
			}
		})
	}
}

// TestClientJSONOn2205: forcing JSON on a Slurm without `scontrol --json` (what FormatAuto
// avoids by asking the version) fails with scontrol's own complaint, captured from 22.05.
func TestClientJSONOn2205(t *testing.T) {
	dir := scenario(t, map[string]string{"json.stderr": string(readTestdata(t, "slurm-22.05/json-unsupported.txt")), "json.exit": "1"})
	c := New(fakeBin(t), fakeBin(t), WithSlurmConf(dir), WithFormat(FormatJSON))
	_, err := c.Node(context.Background(), "n1")
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 1 || ce.Stderr != "/usr/bin/scontrol: unrecognized option '--json'" {
		t.Errorf("error %v, want exit 1 with scontrol's complaint", err)
	}
}

// TestClientContextDeadline: the run's remaining budget wins over the client's own timeout.
func TestClientContextDeadline(t *testing.T) {
	dir := scenario(t, map[string]string{"show.sleep": "30"})
	c := New(fakeBin(t), fakeBin(t), WithSlurmConf(dir), WithFormat(FormatText), WithTimeout(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.Node(ctx, "n1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a deadline", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %s with 150ms left in the budget", el)
	}
}

func TestClientNodes(t *testing.T) {
	dir := scenario(t, map[string]string{"sinfo.out": string(readTestdata(t, "slurm-24.11/sinfo-nodes-resumed.txt"))})
	c := New(fakeBin(t), fakeBin(t), WithSlurmConf(dir))
	got, err := c.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !Owned(got[0].Reason, "nodecheck:") || got[0].OutOfService() || got[0].ReasonTime.IsZero() {
		t.Errorf("got %+v", got)
	}
	if diff := cmp.Diff([]string{"[--all][--noheader][--Node][-O][NodeList:0|,StateComplete:0|,Timestamp:0|,Reason:0]"}, calls(t, dir)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	// Only sinfo gets seconds for its times: scontrol's reasons keep their stamps as usual.
	env, err := os.ReadFile(filepath.Join(dir, "env.log"))
	if err != nil || !bytes.Contains(env, []byte("SLURM_TIME_FORMAT=%s\n")) {
		t.Errorf("sinfo's environment:\n%s", env)
	}

	// An output over the bound is an error, not a cut list that would undercount.
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("node|idle|Unknown|none\n"), sinfoLimit/23+1), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = scenario(t, nil)
	if err := os.Symlink(big, filepath.Join(dir, "sinfo.out")); err != nil {
		t.Fatal(err)
	}
	c = New(fakeBin(t), fakeBin(t), WithSlurmConf(dir))
	if _, err := c.Nodes(context.Background()); err == nil || !strings.Contains(err.Error(), "printed more than") {
		t.Errorf("error %v, want one about too much output", err)
	}
}
