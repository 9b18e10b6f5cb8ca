package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/config/files"
)

// seqDir is a step of a snapshot sequence under testdata/snapshots/sequences.
func seqDir(seq, step string) string {
	return filepath.Join(repoRoot, "testdata", "snapshots", "sequences", seq, step)
}

// result is one check's status and summary in a run's JSON report, and the remedy of a
// failing one.
type result struct {
	status  checks.Status
	summary string
	remedy  checks.Remedy
}

// replay runs `nodecheck run --all --format json --snapshot DIR` with args added, and returns
// the exit code, each check's result and stderr.
func replay(t *testing.T, dir string, args ...string) (int, map[string]result, string) {
	t.Helper()
	out, stderr, code := runCLI(t, nil, append([]string{"run", "--all", "--format", "json", "--snapshot", dir}, args...)...)
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("replay %s: %v\nstdout:\n%s\nstderr:\n%s", dir, err, out, stderr)
	}
	res := map[string]result{}
	for _, r := range rep.Results {
		res[r.Check] = result{r.Status, r.Summary, r.Remedy}
	}
	return code, res, stderr
}

// want is what one step of a sequence must give: the exit code, and for some checks the
// status and words the summary must hold.
type want struct {
	code   int
	checks map[string]result
}

// TestSequences replays each snapshot sequence in order into one --state-dir, through the
// binary's entry point: what the node's history judges over time.
func TestSequences(t *testing.T) {
	tests := []struct {
		seq   string
		steps []want
	}{
		{"xid-counted-once", []want{
			// The same XID 13 line in three runs, an hour apart: one burst, below the repeat
			// rule's 2, so it warns at every run and never fails.
			{0, map[string]result{"xid_errors": {checks.StatusWarn, "gpu 0000:cb:00.0 (GPU-4ef109e9-e925-4834-2b85-0771b4ef696c): XID 13 at 2024-08-01T09:00:00Z (an application XID", ""}}},
			{0, map[string]result{"xid_errors": {checks.StatusWarn, "XID 13 at 2024-08-01T09:00:00Z (an application XID", ""}}},
			{0, map[string]result{"xid_errors": {checks.StatusWarn, "XID 13 at 2024-08-01T09:00:00Z (an application XID", ""}}},
		}},
		{"xid-sticky-reboot", []want{
			{1, map[string]result{"xid_errors": {checks.StatusFail, "gpu 0000:19:00.0 (GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa): XID 48 at 2024-08-01T09:30:00Z, sticky until a GPU reset, a driver reload or a reboot; clear with `nodecheck history clear --gpu 0000:19:00.0`", checks.RemedyResetGPU}}},
			// The kernel log was cleared, the history keeps the XID.
			{1, map[string]result{"xid_errors": {checks.StatusFail, "XID 48 at 2024-08-01T09:30:00Z, sticky until", checks.RemedyResetGPU}}},
			// A new boot id ends it.
			{0, map[string]result{"xid_errors": {checks.StatusOK, "no XID in force on 8 GPUs", ""}}},
		}},
		{"xid-app-repeat", []want{
			{0, map[string]result{"xid_errors": {checks.StatusWarn, "gpu 0000:3b:00.0 (GPU-47daa2ad-a218-6286-252b-af45f0dfaf00): XID 31 at 2024-08-01T08:20:00Z (an application XID: warns, fails only on repeats)", ""}}},
			{1, map[string]result{"xid_errors": {checks.StatusFail, "XID 31 in 2 bursts within 24h, last at 2024-08-01T10:00:00Z (XID 31 on one GPU: fails at 2)", checks.RemedyAdmin}}},
		}},
		{"ecc-rate-hour", []want{
			{0, map[string]result{"gpu_error_rates": {checks.StatusSkip, "no rate yet on 8 GPUs", ""}}},
			{1, map[string]result{"gpu_error_rates": {checks.StatusFail, "gpu 0000:4c:00.0 (GPU-167d8376-ee13-fca4-938a-a05167c43cdc): correctable ECC (volatile) +16729200 in 1h (16729200/h) between 2024-08-01T10:00:00Z and 2024-08-01T11:00:00Z, fails at 3600000/h", checks.RemedyService}}},
		}},
		{"ecc-rate-week", []want{
			{0, map[string]result{"gpu_error_rates": {checks.StatusSkip, "no rate yet on 8 GPUs", ""}}},
			// The same increase over a week: 99,579/h, over the warn rate, under the fail rate.
			{0, map[string]result{"gpu_error_rates": {checks.StatusWarn, "+16729200 in 168h (99579/h) between 2024-08-01T10:00:00Z and 2024-08-08T10:00:00Z, warns at 6000/h", ""}}},
		}},
		{"ib-flap", []want{
			{0, map[string]result{"ib_flaps": {checks.StatusOK, "9 ports: no link down within 3h", ""}}},
			{1, map[string]result{"ib_ports": {checks.StatusFail, "mlx5_4/1: state DOWN", checks.RemedyService}, "ib_flaps": {checks.StatusWarn, "mlx5_4/1: link went down once within 3h", ""}}},
			// Back up: ib_ports passes, the flap is still reported.
			{0, map[string]result{"ib_ports": {checks.StatusOK, "8 ports ACTIVE/LinkUp", ""}, "ib_flaps": {checks.StatusWarn, "mlx5_4/1: link went down once within 3h, last at 2024-08-01T10:20:00Z (port state); fails at 3", ""}}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.seq, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			for i, w := range tc.steps {
				dir := seqDir(tc.seq, strconv.Itoa(i+1))
				code, res, stderr := replay(t, dir, "--state-dir", state)
				if code != w.code {
					t.Errorf("step %d: exit %d, want %d; results %v; stderr:\n%s", i+1, code, w.code, res, stderr)
				}
				for id, wr := range w.checks {
					got := res[id]
					if got.status != wr.status || !strings.Contains(got.summary, wr.summary) || got.remedy != wr.remedy {
						t.Errorf("step %d: %s %s %q [%s], want %s with %q [%s]", i+1, id, got.status, got.summary, got.remedy, wr.status, wr.summary, wr.remedy)
					}
				}
			}
		})
	}
}

// timeline is `nodecheck history --format json --at last` for the sequence's node.
func timeline(t *testing.T, state string, args ...string) history.Timeline {
	t.Helper()
	out, stderr, code := runCLI(t, nil, append([]string{"history", "--state-dir", state, "--node", "gpu-h100-01", "--at", "last", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("history: exit %d; stderr:\n%s", code, stderr)
	}
	var tl history.Timeline
	if err := json.Unmarshal([]byte(out), &tl); err != nil {
		t.Fatalf("history: %v\n%s", err, out)
	}
	return tl
}

// TestSequenceXIDCountedOnce: after three runs the history holds the XID once, one line.
func TestSequenceXIDCountedOnce(t *testing.T) {
	state := t.TempDir()
	for _, step := range []string{"1", "2", "3"} {
		replay(t, seqDir("xid-counted-once", step), "--state-dir", state)
	}
	tl := timeline(t, state, "--gpu", "0000:cb:00.0")
	var xids []history.Entry
	for _, e := range tl.GPUs[0].Entries {
		if e.Kind == "xid" {
			xids = append(xids, e)
		}
	}
	if len(xids) != 1 || strings.Contains(xids[0].Text, "lines") || !strings.HasPrefix(xids[0].Text, "XID 13: ") {
		t.Errorf("XID entries %+v, want one XID 13 of one line", xids)
	}
}

// TestSequenceStickyFromHistory: the second step's kernel log holds no XID: replayed alone it
// passes; after the first, it fails; the timeline says the reboot ended the XID; and an admin's
// clear ends it too, on the record.
func TestSequenceStickyFromHistory(t *testing.T) {
	if code, res, _ := replay(t, seqDir("xid-sticky-reboot", "2")); code != 0 || res["xid_errors"].status != checks.StatusOK {
		t.Errorf("step 2 alone: exit %d, xid_errors %v; want 0 and ok", code, res["xid_errors"])
	}
	state := t.TempDir()
	for _, step := range []string{"1", "2", "3"} {
		replay(t, seqDir("xid-sticky-reboot", step), "--state-dir", state)
	}
	tl := timeline(t, state, "--gpu", "0000:19:00.0")
	i := slices.IndexFunc(tl.GPUs[0].Entries, func(e history.Entry) bool { return e.Kind == "xid" })
	if i < 0 || tl.GPUs[0].Entries[i].InForce || !strings.HasPrefix(tl.GPUs[0].Entries[i].EndedBy, "reboot") {
		t.Errorf("timeline %+v: want XID 48 ended by the reboot", tl.GPUs[0].Entries)
	}

	t.Run("clear", func(t *testing.T) {
		state := t.TempDir()
		replay(t, seqDir("xid-sticky-reboot", "1"), "--state-dir", state)
		out, stderr, code := runCLI(t, map[string]string{"SUDO_USER": "alice"}, "history", "clear", "--state-dir", state, "--node", "gpu-h100-01",
			"--gpu", "00000000:19:00.0", "--reason", "GPU reseated, ticket 4711")
		if code != 0 || !strings.Contains(out, "cleared gpu 0000:19:00.0 GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa of node gpu-h100-01 by root (sudo by alice)") ||
			!strings.Contains(out, ": GPU reseated, ticket 4711") {
			t.Errorf("clear: exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
		}
		if !strings.Contains(stderr, `"who":"root (sudo by alice)"`) || !strings.Contains(stderr, `"reason":"GPU reseated, ticket 4711"`) || !strings.Contains(stderr, "history cleared") {
			t.Errorf("the clear is not logged with who and why:\n%s", stderr)
		}
		// The clear is stamped with this machine's clock, after the replayed snapshots'
		// taken_at: to the replay that is a time after its own, which the run moves back
		// before itself (the clear still ends the XID) and warns of, as of a clock that went
		// back.
		code, res, _ := replay(t, seqDir("xid-sticky-reboot", "2"), "--state-dir", state)
		if x := res["xid_errors"]; code != 0 || x.status != checks.StatusWarn || !strings.Contains(x.summary, "after this run's time 2024-08-01T11:00:00Z") {
			t.Errorf("after the clear: exit %d, xid_errors %v; want 0, the XID ended and the later time said", code, x)
		}
		tl := timeline(t, state, "--gpu", "0000:19:00.0")
		if !slices.ContainsFunc(tl.GPUs[0].Entries, func(e history.Entry) bool {
			return e.Kind == "clear" && e.Text == "cleared by root (sudo by alice): GPU reseated, ticket 4711"
		}) {
			t.Errorf("the clear is not on the record: %+v", tl.GPUs[0].Entries)
		}
		// Nothing to clear, and one selector only.
		if _, stderr, code := runCLI(t, nil, "history", "clear", "--state-dir", state, "--node", "gpu-h100-01", "--gpu", "0000:aa:00.0"); code != 2 || !strings.Contains(stderr, `no GPU "0000:aa:00.0" in the history (known: 0000:19:00.0 GPU-ee7954ec`) {
			t.Errorf("clear of an unknown GPU: exit %d, stderr %s", code, stderr)
		}
		if _, _, code := runCLI(t, nil, "history", "clear", "--state-dir", state, "--node", "gpu-h100-01", "--all", "--port", "mlx5_0/1"); code != 2 {
			t.Errorf("two selectors: exit %d, want 2", code)
		}
	})
}

// TestSequenceFlapFailAt: with fail_at = 1 the port that went down once fails.
func TestSequenceFlapFailAt(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(seqDir("ib-flap", "1"), "fs", "etc", "nodecheck", "nodecheck.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "nodecheck.toml")
	writeFiles(t, map[string]string{cfg: string(base) + "\n[checks.ib_flaps]\nfail_at = 1\n"})
	if err := os.Chmod(cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	var code int
	var res map[string]result
	for _, step := range []string{"1", "2", "3"} {
		code, res, _ = replay(t, seqDir("ib-flap", step), "--state-dir", state, "--config", cfg)
	}
	if code != 1 || res["ib_flaps"].status != checks.StatusFail || !strings.Contains(res["ib_flaps"].summary, "mlx5_4/1: link went down 1 times within 3h") || res["ib_flaps"].remedy != checks.RemedyService {
		t.Errorf("step 3 with fail_at = 1: exit %d, ib_flaps %v", code, res["ib_flaps"])
	}
	tl := timeline(t, state, "--port", "mlx5_4/1", "--config", cfg)
	if len(tl.GPUs) != 0 || len(tl.Ports) != 1 || tl.Ports[0].Status != history.StatusFail || len(tl.Ports[0].Findings) != 1 || !tl.Ports[0].Findings[0].Sticky {
		t.Errorf("timeline of mlx5_4/1: %+v", tl)
	}
}

// TestSingleSnapshotsWithHistory: every bundled snapshot replayed into a fresh --state-dir
// keeps its verdict and every check's status but the two that only judge over time.
func TestSingleSnapshotsWithHistory(t *testing.T) {
	for name, want := range snapshotExitCodes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(repoRoot, "testdata", "snapshots", name)
			code0, res0, _ := replay(t, dir)
			code, res, stderr := replay(t, dir, "--state-dir", t.TempDir())
			if code0 != want || code != want {
				t.Errorf("exit %d without history, %d with, want %d; stderr:\n%s", code0, code, want, stderr)
			}
			for id, r := range res0 {
				if id == "gpu_error_rates" || id == "ib_flaps" {
					continue
				}
				if res[id].status != r.status {
					t.Errorf("%s: %s with history, %s without (%q)", id, res[id].status, r.status, res[id].summary)
				}
			}
		})
	}
}

// TestHistoryOnlyWhereNeeded: a prolog (no check of it judges over time) never opens the
// history, a dry run judges with it and writes nothing, and a replay without --state-dir
// touches no state directory.
func TestHistoryOnlyWhereNeeded(t *testing.T) {
	dir := seqDir("xid-sticky-reboot", "1")
	state := filepath.Join(t.TempDir(), "state")
	if code, _, stderr := replay(t, dir, "--state-dir", state, "--mode", "prolog"); code != 0 {
		t.Errorf("prolog: exit %d; stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the prolog touched the state directory: %v", err)
	}
	code, res, _ := replay(t, dir, "--state-dir", state, "--dry-run")
	if code != 1 || res["xid_errors"].status != checks.StatusFail {
		t.Errorf("dry run: exit %d, xid_errors %v; want it judged (1, fail)", code, res["xid_errors"])
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the dry run wrote to the state directory: %v", err)
	}
	replay(t, dir, "--state-dir", state)
	if _, err := os.Stat(filepath.Join(state, "history", "gpu-h100-01.json")); err != nil {
		t.Errorf("a health-judging replay with --state-dir wrote no history: %v", err)
	}
}

// TestHistoryBadFile: a history file that is truncated, from a newer nodecheck, or not JSON
// is set aside with a clear message and the run goes on with a fresh history: the verdict is
// the fresh history's (XID 48 in the kernel log fails), never a crash or garbage.
func TestHistoryBadFile(t *testing.T) {
	tests := []struct{ name, content, says string }{
		{"truncated", `{"format":1,"node":"gpu-h100-01","updated_at":1722502800,"boots":[{"n":0,"id":"6d0c3e8a-3f5b-4a0e`, "truncated: the JSON stops at byte 97, inside a value"},
		{"newer", `{"format":7,"node":"gpu-h100-01"}`, "format 7 is from a newer nodecheck; this one reads format 1"},
		{"not JSON", "gpu-h100-01: all good\n", "not valid JSON at byte 1"},
		{"out of range", `{"format":1,"node":"gpu-h100-01","updated_at":99}`, "updated_at: 99 is not a time between 2000 and 2100"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			file := filepath.Join(state, "history", "gpu-h100-01.json")
			writeFiles(t, map[string]string{file: tc.content})
			if err := os.Chmod(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			code, res, stderr := replay(t, seqDir("xid-sticky-reboot", "1"), "--state-dir", state)
			if code != 1 || res["xid_errors"].status != checks.StatusFail {
				t.Errorf("exit %d, xid_errors %v; want the fresh history's verdict (1, fail)", code, res["xid_errors"])
			}
			if !strings.Contains(stderr, tc.says) || !strings.Contains(stderr, "kept aside as gpu-h100-01.json.bad-") || !strings.Contains(stderr, "starting a fresh history") {
				t.Errorf("stderr does not say what was wrong and where the file went:\n%s", stderr)
			}
			kept, _ := filepath.Glob(file + ".bad-*")
			if len(kept) != 1 {
				t.Fatalf("files set aside: %v", kept)
			}
			if b, _ := os.ReadFile(kept[0]); string(b) != tc.content {
				t.Errorf("the file set aside holds %q", b)
			}
			dir, err := files.OpenStateDir(state, os.Geteuid(), true)
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			if _, _, err := checks.ReadHistory(dir, "gpu-h100-01", time.Now()); err != nil {
				t.Errorf("the fresh history does not read back: %v", err)
			}
		})
	}
}
