package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

func TestJudgeSiteCheck(t *testing.T) {
	sc := config.SiteCheck{Name: "scratch", Command: "/usr/local/sbin/check-scratch"}
	ran := func(code int, stdout string) siteOutcome {
		return siteOutcome{Check: sc, Timeout: 10 * time.Second, Res: node.CmdResult{ExitCode: code, Stdout: stdout}}
	}
	tests := []struct {
		name    string
		o       siteOutcome
		status  Status
		message string
		remedy  Remedy
		devices int
	}{
		{"exit 0 quiet", ran(0, ""), StatusOK, "ok", "", 0},
		{"exit 0 with summary", ran(0, "scratch fine\n"), StatusOK, "scratch fine", "", 0},
		{"exit 1", ran(1, "/scratch not mounted\nmore\n"), StatusFail, "/scratch not mounted", RemedyAdmin, 0},
		{"exit 1 quiet", ran(1, ""), StatusFail, "failed (exit 1) without a summary", RemedyAdmin, 0},
		{"exit 2", ran(2, "slow disk\n"), StatusWarn, "slow disk", "", 0},
		{"exit 3, the neighbour of warn", ran(3, "confused\n"), StatusError, "exit 3 is not in the protocol (0 ok, 1 fail, 2 warn): confused", "", 0},
		{"exit 128 is no signal", ran(128, ""), StatusError, "exit 128 is not in the protocol (0 ok, 1 fail, 2 warn)", "", 0},
		{"exit 137", ran(137, "about to die\n"), StatusError, "killed by signal 9 (exit 137)", "", 0},
		{"exit -1", ran(-1, ""), StatusError, "exit -1 is not in the protocol (0 ok, 1 fail, 2 warn)", "", 0},
		{"JSON devices", ran(1, "two bad\n{\"device\":\"gpu0\",\"status\":\"fail\",\"remedy\":\"reset_gpu\"}\n{\"device\":\"gpu1\",\"status\":\"warn\",\"message\":\"hot\"}\n"),
			StatusFail, "two bad", RemedyAdmin, 2},
		{"JSON line worse than the exit", ran(0, "fine\n{\"device\":\"gpu0\",\"status\":\"fail\"}\n"),
			StatusError, "exit 0 (ok) but its line for scratch: gpu0 says fail", "", 0},
		{"JSON line as bad as the exit", ran(2, "meh\n{\"device\":\"gpu0\",\"status\":\"warn\"}\n"), StatusWarn, "meh", "", 1},
		{"garbage JSON", ran(0, "fine\n{\"device\": gpu0}\n"), StatusError, "printed garbage: line 2: not a JSON object", "", 0},
		{"JSON with an unknown key", ran(0, "fine\n{\"device\":\"gpu0\",\"status\":\"ok\",\"sev\":1}\n"), StatusError, "printed garbage: line 2: not a JSON object", "", 0},
		{"JSON with a bad status", ran(1, "x\n{\"device\":\"gpu0\",\"status\":\"bad\"}\n"), StatusError, "printed garbage: line 2: status \"bad\"", "", 0},
		{"JSON with a bad remedy", ran(1, "x\n{\"device\":\"gpu0\",\"status\":\"fail\",\"remedy\":\"pray\"}\n"), StatusError, "printed garbage: line 2: remedy \"pray\"", "", 0},
		{"JSON without a device", ran(1, "x\n{\"status\":\"fail\"}\n"), StatusError, "printed garbage: line 2: no device", "", 0},
		{"binary output", ran(0, "ok\x00\n"), StatusError, "printed garbage: control character U+0000 at byte 2", "", 0},
		{"not UTF-8", ran(0, "ok \xff\n"), StatusError, "printed garbage: output is not UTF-8 text", "", 0},
		{"flood", siteOutcome{Check: sc, Res: node.CmdResult{ExitCode: 0, Truncated: true}}, StatusError, "flooded its output", "", 0},
		{"hang", siteOutcome{Check: sc, Timeout: 2 * time.Second, Res: node.CmdResult{ExitCode: 137, Stdout: "child 42\n"},
			Err: fmt.Errorf("run x: killed after 2s: %w", context.DeadlineExceeded)}, StatusError, `hung: killed with its process group after 2s (it had printed "child 42")`, "", 0},
		{"no budget left", siteOutcome{Check: sc, Err: fmt.Errorf("not run: %w", context.DeadlineExceeded)}, StatusError, "not run: the run's budget was used up", "", 0},
		{"not installed", siteOutcome{Check: sc, Timeout: time.Second, Err: fmt.Errorf("run: %w", fs.ErrNotExist)}, StatusError, "/usr/local/sbin/check-scratch is not there", "", 0},
		{"unknown user", siteOutcome{Check: sc, Timeout: time.Second, Err: errors.New(`run x as "nobodyx": look up user: unknown user nobodyx`)}, StatusError, `run x as "nobodyx"`, "", 0},
		{"skipped", siteOutcome{Check: sc, Skipped: "does not run in prolog mode"}, StatusSkip, "does not run in prolog mode", "", 0},
		{"long summary cut", ran(1, strings.Repeat("x", 200)+"\n"), StatusFail, strings.Repeat("x", siteLineLimit) + "...", RemedyAdmin, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := judgeSiteCheck(tc.o)
			d := ds[0]
			if d.Status != tc.status || !strings.HasPrefix(d.Message, tc.message) || d.Remedy != tc.remedy || d.Device != "scratch" {
				t.Errorf("got %s %q remedy %q device %q, want %s %q... remedy %q", d.Status, d.Message, d.Remedy, d.Device, tc.status, tc.message, tc.remedy)
			}
			if len(ds)-1 != tc.devices {
				t.Errorf("got %d device details, want %d: %+v", len(ds)-1, tc.devices, ds)
			}
			assertRemedies(t, Result{Status: d.Status, Details: ds})
		})
	}
}

func TestSiteCheckDeviceRemedy(t *testing.T) {
	o := siteOutcome{Check: config.SiteCheck{Name: "gpu", Remedy: "reboot"}, Res: node.CmdResult{ExitCode: 1,
		Stdout: "bad\n{\"device\":\"gpu0\",\"status\":\"fail\",\"remedy\":\"reset_gpu\"}\n{\"device\":\"gpu1\",\"status\":\"fail\"}\n"}}
	ds := judgeSiteCheck(o)
	got := []string{}
	for _, d := range ds {
		got = append(got, d.Device+"="+string(d.Remedy))
	}
	if want := "gpu=reboot gpu: gpu0=reset_gpu gpu: gpu1=reboot"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
}

func TestJudgeSiteChecks(t *testing.T) {
	out := func(name string, code int, line string) siteOutcome {
		return siteOutcome{Check: config.SiteCheck{Name: name}, Res: node.CmdResult{ExitCode: code, Stdout: line}}
	}
	tests := []struct {
		name    string
		outs    []siteOutcome
		status  Status
		summary string
	}{
		{"all ok", []siteOutcome{out("a", 0, ""), out("b", 0, "")}, StatusOK, "2 site checks passed"},
		{"one warn", []siteOutcome{out("a", 0, ""), out("b", 2, "meh")}, StatusWarn, "b: meh"},
		{"fail beats error", []siteOutcome{out("a", 3, "x"), out("b", 1, "bad"), out("c", 1, "worse")}, StatusFail, "b: bad (+1 more)"},
		{"error beats warn", []siteOutcome{out("a", 2, "meh"), out("b", 5, "odd")}, StatusError, "b: exit 5 is not in the protocol (0 ok, 1 fail, 2 warn): odd"},
		{"all skipped", []siteOutcome{{Check: config.SiteCheck{Name: "a"}, Skipped: "not here"}}, StatusSkip, "no site check runs in this mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := judgeSiteChecks(tc.outs)
			if res.Status != tc.status || res.Summary != tc.summary {
				t.Errorf("got %s %q, want %s %q", res.Status, res.Summary, tc.status, tc.summary)
			}
			assertRemedies(t, res)
		})
	}
}

// siteBin is the absolute path of a test program: testdata/sitecheck's, or else the repo's
// testdata/bin's.
func siteBin(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range []string{"testdata/sitecheck", "../testdata/bin"} {
		p, err := filepath.Abs(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("no test program %s", name)
	return ""
}

// TestSiteChecksLive runs real hostile scripts through the runner, under a health budget:
// every one is judged by name, the hung one (and the child it forked) is killed at its
// deadline, and the whole check ends within the run's budget.
func TestSiteChecksLive(t *testing.T) {
	live, err := node.NewLive(node.DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(Schema())
	cfg.SiteChecks = []config.SiteCheck{
		{Name: "quiet", Command: siteBin(t, "ok-quiet")},
		{Name: "devices", Command: siteBin(t, "fail-with-devices"), Remedy: "reboot"},
		{Name: "garbage", Command: siteBin(t, "print-garbage")},
		{Name: "badjson", Command: siteBin(t, "garbage-json")},
		{Name: "oom", Command: siteBin(t, "killed-9")},
		{Name: "flood", Command: siteBin(t, "huge-stdout")},
		{Name: "hang", Command: siteBin(t, "sleep-forever"), Timeout: 1 * time.Second},
		{Name: "exit3", Command: siteBin(t, "exit-3")},
		{Name: "missing", Command: "/nonexistent/site-check"},
		{Name: "prolog-only", Command: siteBin(t, "ok-quiet"), Modes: []string{"prolog"}},
	}
	env := &Env{Facts: live, Config: cfg, Mode: config.ModeHealth}
	start := time.Now()
	rep := Run(context.Background(), env, []Check{siteChecks{}}, RunOptions{Budget: 5 * time.Second})
	took := time.Since(start)
	if took > 4*time.Second {
		t.Errorf("took %s: the hung check's 1 s deadline should end it in about 1 s", took)
	}
	res := rep.Results[0]
	if res.Status != StatusFail || res.Summary != "devices: scratch: /scratch is 97% full" {
		t.Errorf("result %s %q, want fail naming devices", res.Status, res.Summary)
	}
	want := map[string]string{
		"quiet":                 "ok ok",
		"devices":               "fail scratch: /scratch is 97% full",
		"devices: /scratch":     "fail 97% used, limit 90%",
		"devices: /dev/nvme1n1": "warn media wearout 80%",
		"garbage":               "error printed garbage: control character U+0000",
		"badjson":               "error printed garbage: line 2",
		"oom":                   "error killed by signal 9 (exit 137)",
		"flood":                 "error flooded its output",
		"hang":                  "error hung: killed with its process group after 1s",
		"exit3":                 "error exit 3 is not in the protocol",
		"missing":               "error /nonexistent/site-check is not there",
		"prolog-only":           "skip does not run in health mode",
	}
	var childPID int
	for _, d := range res.Details {
		w, ok := want[d.Device]
		if !ok {
			t.Errorf("unexpected detail %q: %s %s", d.Device, d.Status, d.Message)
			continue
		}
		delete(want, d.Device)
		if got := string(d.Status) + " " + d.Message; !strings.HasPrefix(got, w) {
			t.Errorf("%s: got %q, want %q...", d.Device, got, w)
		}
		if d.Device == "hang" {
			_, after, _ := strings.Cut(d.Message, `printed "child `)
			childPID, _ = strconv.Atoi(strings.TrimSuffix(after, `")`))
		}
	}
	for dev := range want {
		t.Errorf("no detail for %s", dev)
	}
	if childPID <= 0 {
		t.Fatalf("the hung check's message does not give its child's pid")
	}
	// The child slept holding stdout; only the process-group kill ends it.
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(childPID, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(childPID, syscall.SIGKILL)
			t.Fatalf("the hung check's child %d outlived its deadline", childPID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSiteCheckEnvAndUser: a site check sees only nodecheck's fixed environment, and runs as
// the user its entry names.
func TestSiteCheckEnvAndUser(t *testing.T) {
	live, err := node.NewLive(node.DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NODECHECK_SECRET_TEST", "leak")
	sc := config.SiteCheck{Name: "who", Command: siteBin(t, "print-user")}
	o := siteOutcome{Check: sc}
	runSiteCheck(context.Background(), live, &o)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	wantUID := strconv.Itoa(os.Geteuid())
	if want := "uid " + wantUID + " env LANG PATH PWD"; !strings.HasPrefix(strings.TrimSpace(o.Res.Stdout), want) {
		// sh sets PWD itself; nothing of nodecheck's environment may arrive.
		t.Errorf("got %q, want %q", o.Res.Stdout, want)
	}
	if os.Geteuid() != 0 {
		t.Skip("running as another user needs root")
	}
	o = siteOutcome{Check: config.SiteCheck{Name: "who", Command: siteBin(t, "print-user"), User: "nobody"}}
	runSiteCheck(context.Background(), live, &o)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	if !strings.HasPrefix(o.Res.Stdout, "uid 65534 ") {
		t.Errorf("as nobody: got %q, want uid 65534", o.Res.Stdout)
	}
	o = siteOutcome{Check: config.SiteCheck{Name: "who", Command: siteBin(t, "print-user"), User: "no-such-user-here"}}
	runSiteCheck(context.Background(), live, &o)
	if o.Err == nil || !strings.Contains(o.Err.Error(), "no-such-user-here") {
		t.Errorf("unknown user: got %v, %q; want an error naming the user", o.Err, o.Res.Stdout)
	}
}

// TestSiteChecksRecordReplay: a site check's output is recorded in the snapshot
// (commands.json) and replays to the same verdicts, its hang included, without running it.
func TestSiteChecksRecordReplay(t *testing.T) {
	live, err := node.NewLive(node.DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(Schema())
	cfg.SiteChecks = []config.SiteCheck{
		{Name: "devices", Command: siteBin(t, "fail-with-devices")},
		{Name: "oom", Command: siteBin(t, "killed-9")},
		{Name: "hang", Command: siteBin(t, "sleep-forever"), Timeout: 500 * time.Millisecond},
	}
	rec := node.NewRecorder(live)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recorded := siteChecks{}.Run(ctx, &Env{Facts: rec, Config: cfg, Mode: config.ModeHealth})
	dir := filepath.Join(t.TempDir(), "snap")
	if _, err := rec.Save(dir, node.Meta{Format: node.SnapshotFormat, Hostname: "n1", NodeName: "n1", TakenAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	snap, err := node.OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	replayed := siteChecks{}.Run(ctx, &Env{Facts: snap, Config: cfg, Mode: config.ModeHealth})
	summary := func(r Result) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s\n", r.Status, r.Summary)
		for _, d := range r.Details {
			msg := d.Message
			if d.Device == "hang" {
				msg, _, _ = strings.Cut(msg, " (it had printed") // the child's pid
			}
			fmt.Fprintf(&b, "%s %s %s\n", d.Device, d.Status, msg)
		}
		return b.String()
	}
	if got, want := summary(replayed), summary(recorded); got != want {
		t.Errorf("replayed:\n%s\nrecorded:\n%s", got, want)
	}
	if !strings.Contains(summary(replayed), "hang error hung") {
		t.Errorf("the hang did not replay as a hang:\n%s", summary(replayed))
	}
}

// TestSiteChecksWithinBudget: a site check whose own timeout is longer than what the run has
// left is killed before the run's budget ends, and reported as hung (error), not as the
// runner's timeout of the whole check.
func TestSiteChecksWithinBudget(t *testing.T) {
	live, err := node.NewLive(node.DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(Schema())
	cfg.SiteChecks = []config.SiteCheck{{Name: "hang", Command: siteBin(t, "sleep-forever"), Timeout: time.Minute}}
	env := &Env{Facts: live, Config: cfg, Mode: config.ModeHealth}
	start := time.Now()
	rep := Run(context.Background(), env, []Check{siteChecks{}}, RunOptions{Budget: 2 * time.Second})
	took := time.Since(start)
	res := rep.Results[0]
	if took > 2*time.Second+500*time.Millisecond {
		t.Errorf("took %s with a 2s budget", took)
	}
	if res.Status != StatusError || !strings.HasPrefix(res.Summary, "hang: hung: killed with its process group after") {
		t.Errorf("got %s %q, want the hang as an error", res.Status, res.Summary)
	}
}

// FuzzJudgeSiteCheck: whatever a site check prints and however it exits, the judge answers
// without panicking, says ok only for exit 0, fail only for exit 1, and keeps its summary to
// one printable line.
func FuzzJudgeSiteCheck(f *testing.F) {
	f.Add(0, "ok\n")
	f.Add(1, "bad\n{\"device\":\"gpu0\",\"status\":\"fail\",\"remedy\":\"reset_gpu\"}\n")
	f.Add(2, "meh\n{\"device\":\"x\",\"status\":\"warn\"} trailing\n")
	f.Add(137, "\x00\xff")
	f.Add(1, "{\"device\":\"\",\"status\":\"fail\"}\n{")
	f.Fuzz(func(t *testing.T, code int, out string) {
		o := siteOutcome{Check: config.SiteCheck{Name: "s"}, Timeout: time.Second, Res: node.CmdResult{ExitCode: code, Stdout: out}}
		ds := judgeSiteCheck(o)
		d := ds[0]
		switch {
		case d.Status == StatusOK && code != 0, d.Status == StatusFail && code != 1, d.Status == StatusWarn && code != 2:
			t.Fatalf("exit %d judged %s", code, d.Status)
		case strings.ContainsAny(d.Message, "\n\r\x00"):
			t.Fatalf("message %q is not one line", d.Message)
		}
		res := judgeSiteChecks([]siteOutcome{o})
		if res.Status != d.Status {
			t.Fatalf("result %s, detail %s", res.Status, d.Status)
		}
	})
}
