package repair

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/drain"
)

// fakeSlurm keeps node states as slurmctld would for the calls a repair makes: a drain sets
// the reason, a resume clears DRAIN and DOWN, a reboot request sets REBOOT_REQUESTED and the
// reason (its end, below, is the test's: reboot()).
type fakeSlurm struct {
	mu      sync.Mutex
	nodes   map[string]drain.NodeState
	jobs    int
	jobsErr error
	nodeErr error // the controller does not answer
	calls   []string
}

func newFake(nodes ...drain.NodeState) *fakeSlurm {
	f := &fakeSlurm{nodes: map[string]drain.NodeState{}}
	for _, n := range nodes {
		f.nodes[n.Name] = n
	}
	return f
}

func (f *fakeSlurm) Node(_ context.Context, name string) (drain.NodeState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nodes[name], f.nodeErr
}

func (f *fakeSlurm) Nodes(context.Context) ([]drain.NodeState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []drain.NodeState
	for _, n := range f.nodes {
		out = append(out, n)
	}
	return out, nil
}

func (f *fakeSlurm) Update(_ context.Context, u drain.Update) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[u.Node]
	switch u.State {
	case "DRAIN":
		if !slices.Contains(n.Flags, "DRAIN") {
			n.Flags = append(n.Flags, "DRAIN")
		}
		n.Reason, n.ReasonTime = u.Reason, time.Now().Truncate(time.Second)
	case "RESUME":
		n.Flags = slices.DeleteFunc(n.Flags, func(s string) bool { return s == "DRAIN" })
		n.State = "IDLE"
	}
	f.nodes[u.Node] = n
	f.calls = append(f.calls, u.State+" "+u.Reason)
	return nil
}

func (f *fakeSlurm) Argv(u drain.Update) []string {
	return drain.New("/usr/bin/scontrol", "/usr/bin/sinfo").Argv(u)
}

func (f *fakeSlurm) Jobs(context.Context, string) ([]drain.Job, error) {
	return make([]drain.Job, f.jobs), f.jobsErr
}

func (f *fakeSlurm) JobsArgv(node string) []string { return []string{"/usr/bin/squeue", node} }

func (f *fakeSlurm) Reboot(_ context.Context, node, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[node]
	n.Flags, n.Reason = append(n.Flags, "REBOOT_REQUESTED"), reason
	f.nodes[node] = n
	f.calls = append(f.calls, "REBOOT "+reason)
	return nil
}

func (f *fakeSlurm) RebootArgv(node, reason string) []string {
	return drain.New("/usr/bin/scontrol", "/usr/bin/sinfo").RebootArgv(node, reason)
}

// reboot ends a requested reboot as Slurm 22.05 and 24.11 do with ReturnToService=1 and
// nextstate=DOWN (scripts/testbed TestReboot).
func (f *fakeSlurm) reboot(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[node]
	n.State, n.Flags, n.Reason = "DOWN", nil, n.Reason+" : reboot issued : reboot complete"
	f.nodes[node] = n
}

// runner is a reset command's stand-in: it prints what the test gives it (nvidia-smi's words,
// from the test bed's captured outputs) and records the argv.
type runner struct {
	code   int
	out    string
	argv   [][]string
	during func() // called while the command "runs"
}

func (r *runner) run(_ context.Context, argv []string) (int, string, error) {
	r.argv = append(r.argv, argv)
	if r.during != nil {
		r.during()
	}
	return r.code, r.out, nil
}

func applyPolicy() Policy {
	p := testPolicy()
	p.Settle = time.Millisecond
	return p
}

func request(t *testing.T, dir, boot string, passes int, faults ...Fault) Request {
	t.Helper()
	return Request{Node: "gpu01", Faults: faults, GPUs: []GPU{gpu19, gpu9b}, GPUsKnown: true, BootID: boot, Passes: passes, PassesKnown: true,
		State: files.NewState(dir, "[state] dir", os.Geteuid(), false)}
}

func readRecord(t *testing.T, dir string) Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := decodeRecords(data)
	if err != nil {
		t.Fatal(err)
	}
	return recs["gpu01"]
}

// TestApplyResetThenResume: a reset-class fault is reset (the reason tagged first), the node
// waits for its clean runs, drain resumes it, and the record closes the repair ok.
func TestApplyResetThenResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f := newFake(node("IDLE", xidReason, "DRAIN"), drain.NodeState{Name: "gpu02", State: "IDLE"})
	r := &runner{out: "GPU 00000000:9B:00.0 was successfully reset.\nAll done.\n"}
	p := applyPolicy()
	out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 0, xidFault))
	if out.Action != StepReset || out.Reason != resetTagged || len(r.argv) != 1 || strings.Join(r.argv[0], " ") != "/usr/bin/nvidia-smi -r -i 0000:9b:00.0" {
		t.Fatalf("first run: %+v, reset argv %q", out, r.argv)
	}
	if got := f.nodes["gpu01"].Reason; got != resetTagged {
		t.Errorf("reason %q, want the tag", got)
	}
	if out.Started == nil || out.Started.Action != RemedyReset || out.Closed != nil {
		t.Errorf("started %+v closed %+v", out.Started, out.Closed)
	}
	if rec := readRecord(t, dir); len(rec.Entries) != 1 || rec.Entries[0].Outcome != OutcomePending || rec.Entries[0].Detail != "GPU 00000000:9B:00.0 was successfully reset. All done." {
		t.Errorf("record %+v", rec)
	}
	if out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 1)); out.Action != StepWait {
		t.Errorf("second run: %+v", out)
	}
	_ = f.Update(context.Background(), drain.Update{Node: "gpu01", State: "RESUME"}) // drain's resume
	if out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 2)); out.Action != StepNone {
		t.Errorf("after drain's resume: %+v", out)
	}
	if rec := readRecord(t, dir); rec.Entries[0].Outcome != OutcomeOK {
		t.Errorf("record after the resume %+v", rec)
	}
}

// TestApplyRebootThenResume: a reboot-class fault asks Slurm for a reboot once, waits while
// it runs, and resumes the node Slurm brought back DOWN after the clean post-boot runs.
func TestApplyRebootThenResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f := newFake(node("IDLE", lostReason, "DRAIN"))
	r := &runner{}
	p := applyPolicy()
	out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 0, lostFault))
	want := []string{"DRAIN " + bootTagged, "REBOOT " + bootTagged}
	if out.Action != StepReboot || !slices.Equal(f.calls, want) || len(r.argv) != 0 {
		t.Fatalf("first run: %+v, calls %q", out, f.calls)
	}
	if !strings.Contains(strings.Join(out.Commands, "\n"), "/usr/bin/scontrol reboot ASAP nextstate=DOWN 'reason="+bootTagged+"' gpu01") {
		t.Errorf("commands %q", out.Commands)
	}
	if out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 0, lostFault)); out.Action != StepWait || len(f.calls) != 2 {
		t.Errorf("while rebooting: %+v, calls %q (asked twice?)", out, f.calls)
	}
	f.reboot("gpu01")
	if out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-2", 1)); out.Action != StepWait {
		t.Errorf("one clean run after the boot: %+v", out)
	}
	if out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-2", 2)); out.Action != StepResume || f.nodes["gpu01"].State != "IDLE" ||
		out.Closed == nil || out.Closed.Outcome != OutcomeOK || out.Closed.Action != RemedyReboot {
		t.Errorf("two clean runs after the boot: %+v, node %s", out, f.nodes["gpu01"])
	}
	if rec := readRecord(t, dir); rec.Entries[0].Outcome != OutcomeOK || rec.Entries[0].BootID != "boot-1" {
		t.Errorf("record %+v", rec)
	}
}

// TestApplyNoRepair: with a job on the node, its jobs unknown, or max_repairing reached,
// nothing is changed in Slurm and nothing runs.
func TestApplyNoRepair(t *testing.T) {
	other := drain.NodeState{Name: "gpu02", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "nodecheck: nvlink: down [repair: reboot]"}
	for _, tc := range []struct {
		name string
		f    *fakeSlurm
		want Step
	}{
		{"a job", func() *fakeSlurm { f := newFake(node("IDLE", xidReason, "DRAIN")); f.jobs = 1; return f }(), StepBusy},
		{"jobs unknown", func() *fakeSlurm {
			f := newFake(node("IDLE", xidReason, "DRAIN"))
			f.jobsErr = os.ErrDeadlineExceeded
			return f
		}(), StepBusy},
		{"max_repairing = 1, another node in repair", newFake(node("IDLE", xidReason, "DRAIN"), other), StepHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{}
			out := Apply(context.Background(), tc.f, r.run, applyPolicy(), request(t, filepath.Join(t.TempDir(), "state"), "boot-1", 0, xidFault))
			if out.Action != tc.want || len(tc.f.calls) != 0 || len(r.argv) != 0 {
				t.Errorf("%+v, calls %q, runs %q", out, tc.f.calls, r.argv)
			}
		})
	}
}

// TestApplyResetRecordedBeforeItRuns: the reset is in repair.json before its command runs, so
// that a run killed during the reset (SIGTERM at HealthCheckTimeout, SIGKILL) leaves a repair
// that counts toward gpu_repairs; the next run finds it under way.
func TestApplyResetRecordedBeforeItRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f := newFake(node("IDLE", xidReason, "DRAIN"))
	var during Record
	r := &runner{out: "GPU 00000000:9B:00.0 was successfully reset.\n", during: func() { during = readRecord(t, dir) }}
	p := applyPolicy()
	if out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 0, xidFault)); out.Action != StepReset {
		t.Fatalf("first run: %+v", out)
	}
	if len(during.Entries) != 1 || during.Entries[0].Action != RemedyReset || during.Entries[0].Outcome != OutcomePending || during.Entries[0].Detail != resetStarted {
		t.Fatalf("record while the reset ran: %+v; want the reset, pending, marked started", during)
	}
	// The run that was killed: its record is what was written before the command ran.
	writeRecord(t, dir, during)
	out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 0, xidFault))
	if out.Action != StepReboot || out.Closed == nil || out.Closed.Action != RemedyReset {
		t.Errorf("the run after an interrupted reset: %+v; want the reset closed failed and a reboot", out)
	}
	if out.Counts == nil || out.Counts.Node != 2 {
		t.Errorf("counts %+v: the interrupted reset must count toward escalation", out.Counts)
	}
}

func writeRecord(t *testing.T, dir string, rec Record) {
	t.Helper()
	data, err := encodeRecords(map[string]Record{"gpu01": rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RecordFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestApplyDryRunOffline: a dry run shows the repair plan when the controller cannot be read,
// for the node as drain would leave it, marked as a plan; a real run repairs nothing then.
func TestApplyDryRunOffline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f := newFake()
	f.nodeErr = errors.New("scontrol: Unable to contact slurm controller")
	r := &runner{}
	req := request(t, dir, "boot-1", 0, xidFault)
	req.DrainReason = xidReason
	if out := Apply(context.Background(), f, r.run, applyPolicy(), req); out.Action != StepSkipped || len(r.argv) != 0 {
		t.Errorf("a real run without the controller: %+v, reset %q; want skipped, nothing run", out, r.argv)
	}
	req.DryRun = true
	req.State = files.NewState(dir, "[state] dir", os.Geteuid(), true)
	out := Apply(context.Background(), f, r.run, applyPolicy(), req)
	if out.Action != StepReset || !strings.HasPrefix(out.Message, "plan, the controller not reached") || !strings.Contains(out.Message, "would reset") ||
		!slices.Contains(out.Commands, "/usr/bin/nvidia-smi -r -i 0000:9b:00.0") || len(f.calls) != 0 || len(r.argv) != 0 {
		t.Errorf("offline plan: %+v", out)
	}
}

// TestApplyDryRun prints the tag and the reset and changes nothing.
func TestApplyDryRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f := newFake(node("IDLE", xidReason, "DRAIN"))
	r := &runner{}
	req := request(t, dir, "boot-1", 0, xidFault)
	req.DryRun = true
	req.State = files.NewState(dir, "[state] dir", os.Geteuid(), true)
	out := Apply(context.Background(), f, r.run, applyPolicy(), req)
	want := []string{"/usr/bin/scontrol update NodeName=gpu01 State=DRAIN 'Reason=" + resetTagged + "'", "/usr/bin/nvidia-smi -r -i 0000:9b:00.0"}
	if out.Action != StepReset || !strings.HasPrefix(out.Message, "dry run, would reset") || !slices.Equal(out.Commands, want) || len(f.calls) != 0 || len(r.argv) != 0 {
		t.Errorf("%+v\ncommands %q\nwant %q; calls %q", out, out.Commands, want, f.calls)
	}
	if _, err := os.Stat(filepath.Join(dir, RecordFile)); !os.IsNotExist(err) {
		t.Errorf("a dry run wrote the record: %v", err)
	}
}

// TestApplyResetFailsThenReboot: nvidia-smi refuses the reset (the test bed stand-in's
// captured "In use by another client"): the record says failed, and the next run reboots.
func TestApplyResetFailsThenReboot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f := newFake(node("IDLE", xidReason, "DRAIN"))
	r := &runner{code: 255, out: "Unable to reset GPU 00000000:9B:00.0 because it's being used by some other process (e.g. CUDA application, graphics application like X server, monitoring application like other instance of nvidia-smi). Please first kill all processes using this GPU and all compute applications running in the system.\n"}
	p := applyPolicy()
	out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 0, xidFault))
	if out.Action != StepReset || !strings.Contains(out.Message, "failed (exit 255: Unable to reset GPU") {
		t.Fatalf("first run: %+v", out)
	}
	out = Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 0, xidFault))
	if out.Action != StepReboot || f.calls[len(f.calls)-1] != "REBOOT "+resetTaggedAs(RemedyReboot) {
		t.Fatalf("second run: %+v, calls %q", out, f.calls)
	}
	rec := readRecord(t, dir)
	if len(rec.Entries) != 2 || rec.Entries[0].Outcome != OutcomeFailed || rec.Entries[1].Action != RemedyReboot {
		t.Errorf("record %+v", rec)
	}
}

// TestApplyEscalates: at the GPU's limit, the node is drained for service and nothing runs.
func TestApplyEscalates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f := newFake(node("IDLE", xidReason, "DRAIN"))
	r := &runner{}
	p := applyPolicy()
	p.Now = func() time.Time { return t0 }
	var rec Record
	for i := range 3 {
		rec.Entries = append(rec.Entries, entry(RemedyReset, OutcomeOK, "boot-1", t0.Add(-time.Duration(i+1)*time.Hour), gpu9b))
	}
	data, err := encodeRecords(map[string]Record{"gpu01": rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RecordFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 0, xidFault))
	const want = "nodecheck: service: gpu 1652922000001 0000:9b:00.0 3 repairs in 7d: before a GPU reset"
	if out.Action != StepEscalate || f.nodes["gpu01"].Reason != want || len(r.argv) != 0 {
		t.Errorf("%+v, reason %q, runs %q", out, f.nodes["gpu01"].Reason, r.argv)
	}
	if out := Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 0, xidFault)); out.Action != StepNone || len(f.calls) != 1 {
		t.Errorf("after the escalation: %+v, calls %q", out, f.calls)
	}
}

// TestApplyRecordProblems: no state directory repairs nothing; a damaged record is a warning
// and starts again (its repairs no longer count toward escalation).
func TestApplyRecordProblems(t *testing.T) {
	f := newFake(node("IDLE", xidReason, "DRAIN"))
	r := &runner{}
	req := request(t, "", "boot-1", 0, xidFault)
	if out := Apply(context.Background(), f, r.run, applyPolicy(), req); out.Action != StepSkipped || len(f.calls) != 0 || !strings.Contains(out.Message, "no state directory") {
		t.Errorf("no state dir: %+v, calls %q", out, f.calls)
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RecordFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := Apply(context.Background(), f, r.run, applyPolicy(), request(t, dir, "boot-1", 0, xidFault))
	if out.Action != StepReset || len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "the repair record starts again") {
		t.Errorf("damaged record: %+v", out)
	}
	if rec := readRecord(t, dir); len(rec.Entries) != 1 {
		t.Errorf("record after a damaged one: %+v", rec)
	}
}

// TestApplyResetNeedsItsTimeout: with less of the run's budget left than reset_timeout and
// the margin, no reset starts (a reset cut short would count as failed and the next run would
// reboot): the node is not tagged, nothing runs, and the next health check tries again.
func TestApplyResetNeedsItsTimeout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f := newFake(node("IDLE", xidReason, "DRAIN"), drain.NodeState{Name: "gpu02", State: "IDLE"})
	r := &runner{out: "GPU 00000000:9B:00.0 was successfully reset.\nAll done.\n"}
	p := applyPolicy()
	ctx, cancel := context.WithTimeout(context.Background(), p.ResetTimeout+resetMargin-time.Second)
	defer cancel()
	out := Apply(ctx, f, r.run, p, request(t, dir, "boot-1", 0, xidFault))
	if out.Action != StepSkipped || !strings.Contains(out.Message, "under reset_timeout") || len(r.argv) != 0 {
		t.Fatalf("%+v, reset argv %q: want skipped, nothing run", out, r.argv)
	}
	if got := f.nodes["gpu01"].Reason; got != xidReason {
		t.Errorf("reason %q, want it untouched (%q)", got, xidReason)
	}
	// With the time there, the same run resets.
	out = Apply(context.Background(), f, r.run, p, request(t, dir, "boot-1", 0, xidFault))
	if out.Action != StepReset || len(r.argv) != 1 {
		t.Errorf("with time enough: %+v, argv %q", out, r.argv)
	}
}
