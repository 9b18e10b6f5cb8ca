package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// testBin is the absolute path of a test program in the repository's testdata/bin.
func testBin(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test program: %v", err)
	}
	return p
}

func TestExec(t *testing.T) {
	l, _ := fixtureLive(t)
	dir := t.TempDir()
	brokenScript := filepath.Join(dir, "broken")
	if err := os.WriteFile(brokenScript, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExecutable := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exit3 := testBin(t, "exit-3")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name     string
		ctx      context.Context
		argv     []string
		want     CmdResult
		wantErr  string
		notExist bool
	}{
		{
			name: "exit code and both streams",
			argv: []string{exit3, "an arg"},
			want: CmdResult{Argv: []string{exit3, "an arg"}, Stdout: "to stdout\n", Stderr: "to stderr\n", ExitCode: 3},
		},
		{
			name: "success",
			argv: []string{"/bin/sh", "-c", "printf ok"},
			want: CmdResult{Argv: []string{"/bin/sh", "-c", "printf ok"}, Stdout: "ok", ExitCode: 0},
		},
		{
			name: "killed by a signal",
			argv: []string{"/bin/sh", "-c", "kill -SEGV $$"},
			want: CmdResult{Argv: []string{"/bin/sh", "-c", "kill -SEGV $$"}, ExitCode: 128 + 11},
		},
		{
			name:     "missing program",
			argv:     []string{"/usr/bin/nv-fabricmanager-not-installed", "--version"},
			want:     CmdResult{Argv: []string{"/usr/bin/nv-fabricmanager-not-installed", "--version"}, ExitCode: -1},
			wantErr:  "run /usr/bin/nv-fabricmanager-not-installed: no such file or directory",
			notExist: true,
		},
		{
			name:    "relative program",
			argv:    []string{"scontrol", "ping"},
			want:    CmdResult{Argv: []string{"scontrol", "ping"}, ExitCode: -1},
			wantErr: `run "scontrol": program path is not absolute`,
		},
		{
			name:    "empty argv",
			argv:    nil,
			want:    CmdResult{ExitCode: -1},
			wantErr: "run: empty command",
		},
		{
			name:    "missing interpreter is not absence",
			argv:    []string{brokenScript},
			want:    CmdResult{Argv: []string{brokenScript}, ExitCode: -1},
			wantErr: "program exists but cannot be started",
		},
		{
			name:    "not executable",
			argv:    []string{notExecutable},
			want:    CmdResult{Argv: []string{notExecutable}, ExitCode: -1},
			wantErr: "permission denied",
		},
		{
			name:    "cancelled before start",
			ctx:     cancelled,
			argv:    []string{exit3},
			want:    CmdResult{Argv: []string{exit3}, ExitCode: -1},
			wantErr: "context canceled",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			got, err := l.Exec(ctx, tc.argv)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Exec(%q): %v", tc.argv, err)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Exec(%q): %v, want an error containing %q", tc.argv, err, tc.wantErr)
				}
				if gotNE := errors.Is(err, fs.ErrNotExist); gotNE != tc.notExist {
					t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v, want %v", err, gotNE, tc.notExist)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(CmdResult{}, "Duration"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Exec(%q) (-want +got):\n%s", tc.argv, diff)
			}
		})
	}
}

func TestExecEnvironment(t *testing.T) {
	t.Setenv("NODECHECK_TEST_LEAK", "leaked")
	tests := []struct {
		name string
		opts []LiveOption
		want []string // lines that must be there
	}{
		{name: "default", want: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", "cwd=/"}},
		{name: "replaced", opts: []LiveOption{WithEnv([]string{"PATH=/bin", "NCCL_DEBUG=WARN"})},
			want: []string{"PATH=/bin", "NCCL_DEBUG=WARN", "cwd=/"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := fixtureLive(t, tc.opts...)
			res, err := l.Exec(context.Background(), []string{testBin(t, "print-env")})
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(res.Stdout, "\n")
			for _, w := range tc.want {
				if !containsString(lines, w) {
					t.Errorf("print-env output lacks %q:\n%s", w, res.Stdout)
				}
			}
			if strings.Contains(res.Stdout, "NODECHECK_TEST_LEAK") {
				t.Errorf("nodecheck's environment leaked into the command:\n%s", res.Stdout)
			}
		})
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestExecTruncates(t *testing.T) {
	tests := []struct {
		name  string
		limit int
	}{
		{name: "default limit", limit: DefaultOutputLimit},
		{name: "small limit", limit: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []LiveOption
			if tc.limit != DefaultOutputLimit {
				opts = append(opts, WithOutputLimit(tc.limit))
			}
			l, _ := fixtureLive(t, opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := l.Exec(ctx, []string{testBin(t, "huge-stdout")})
			if err != nil {
				t.Fatal(err)
			}
			// Exit 0 proves the rest was drained: the writer finished 4 MiB and 1 MiB.
			if res.ExitCode != 0 || !res.Truncated {
				t.Errorf("ExitCode = %d, Truncated = %v; want 0, true", res.ExitCode, res.Truncated)
			}
			if len(res.Stdout) != tc.limit || len(res.Stderr) != tc.limit {
				t.Errorf("kept %d bytes of stdout and %d of stderr, want %d of each", len(res.Stdout), len(res.Stderr), tc.limit)
			}
			if want := strings.Repeat("0123456789abcdef\n", tc.limit/17+1)[:tc.limit]; res.Stdout != want {
				t.Errorf("stdout does not start as the program's output: %.40q", res.Stdout)
			}
		})
	}
}

// TestExecKernelLogLimit: dmesg's output is kept up to KernelLogLimit, not cut at the
// default: the kernel log's newest lines come last. huge-stdout, run under the name dmesg,
// writes 4 MiB.
func TestExecKernelLogLimit(t *testing.T) {
	dmesg := filepath.Join(t.TempDir(), "dmesg")
	if err := os.Symlink(testBin(t, "huge-stdout"), dmesg); err != nil {
		t.Fatal(err)
	}
	l, _ := fixtureLive(t)
	res, err := l.Exec(context.Background(), []string{dmesg})
	if err != nil {
		t.Fatal(err)
	}
	if res.Truncated || res.CutFront || len(res.Stdout) != 4<<20 {
		t.Errorf("kept %d bytes (truncated %v, front %v), want all 4 MiB", len(res.Stdout), res.Truncated, res.CutFront)
	}
	if got := OutputLimit("/usr/bin/nvidia-smi", DefaultOutputLimit); got != DefaultOutputLimit {
		t.Errorf("OutputLimit(nvidia-smi) = %d", got)
	}
	if got := OutputLimit("/usr/bin/dcgmi", DefaultOutputLimit); got != DCGMOutputLimit {
		t.Errorf("OutputLimit(dcgmi) = %d, want %d: a diagnostic's JSON cut short cannot be read", got, DCGMOutputLimit)
	}
}

// TestExecKernelLogKeepsTail: a kernel log over KernelLogLimit keeps its newest part, from the
// start of a line, and says the front was cut: the XID 79 at its end is read.
func TestExecKernelLogKeepsTail(t *testing.T) {
	dmesg := filepath.Join(t.TempDir(), "dmesg")
	if err := os.Symlink(testBin(t, "big-kernel-log"), dmesg); err != nil {
		t.Fatal(err)
	}
	l, _ := fixtureLive(t)
	res, err := l.Exec(context.Background(), []string{dmesg, "--kernel", "--nopager"})
	if err != nil {
		t.Fatal(err)
	}
	const xid = "[ 2002.000002] NVRM: Xid (PCI:0000:19:00): 79, pid=4242, name=python3, GPU has fallen off the bus.\n"
	if res.ExitCode != 0 || !res.Truncated || !res.CutFront || len(res.Stdout) > KernelLogLimit || len(res.Stdout) < KernelLogLimit-100 {
		t.Errorf("exit %d, kept %d bytes (truncated %v, front %v); want exit 0 and the last %d bytes less a line, cut at the front",
			res.ExitCode, len(res.Stdout), res.Truncated, res.CutFront, KernelLogLimit)
	}
	if !strings.HasSuffix(res.Stdout, xid) || !strings.HasPrefix(res.Stdout, "[    1.000000] filler") {
		t.Errorf("kept %.60q ... %.60q; want whole lines ending with the XID", res.Stdout, res.Stdout[max(len(res.Stdout)-120, 0):])
	}
	// Any other program keeps the start of its output.
	if KeepsTail("/usr/bin/nvidia-smi") || !KeepsTail("/bin/dmesg") {
		t.Error("KeepsTail: only dmesg keeps the end of its output")
	}
}

// TestExecTimeout runs a program whose child holds stdout open: Exec must return soon after
// the deadline, with the partial output, having killed both.
func TestExecTimeout(t *testing.T) {
	// A long WaitDelay, so that only the process-group kill can make Exec return in time.
	l, _ := fixtureLive(t, WithWaitDelay(time.Minute))
	const deadline = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	res, err := l.Exec(ctx, []string{testBin(t, "sleep-forever")})
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Exec: %v, want context.DeadlineExceeded", err)
	}
	if elapsed > deadline+3*time.Second { // generous: CI machines are loaded
		t.Errorf("Exec returned %v after start, want about %v", elapsed, deadline)
	}
	if res.ExitCode != 128+9 {
		t.Errorf("ExitCode = %d, want %d (SIGKILL)", res.ExitCode, 128+9)
	}
	if res.Duration < deadline/2 || res.Duration > elapsed {
		t.Errorf("Duration = %v, want about %v", res.Duration, elapsed)
	}
	var child int
	if _, err := fmt.Sscanf(res.Stdout, "child %d\n", &child); err != nil {
		t.Fatalf("partial stdout %q: %v", res.Stdout, err)
	}
	// The forked child was in the group: it must die (SIGKILL takes a moment to land; a zombie
	// waiting for its reaper counts as dead).
	for wait := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		if f := strings.Fields(string(stat)); err != nil || len(f) > 2 && f[2] == "Z" {
			break
		}
		if time.Since(wait) > 5*time.Second {
			t.Fatalf("the command's child %d survived the deadline: %s", child, stat)
		}
	}
}

// TestExecEscapedGroup runs a program that leaves a process in its own session holding
// stdout: the group kill cannot reach it, and WaitDelay must end the wait.
func TestExecEscapedGroup(t *testing.T) {
	const waitDelay = 300 * time.Millisecond
	l, _ := fixtureLive(t, WithWaitDelay(waitDelay))
	start := time.Now()
	res, err := l.Exec(context.Background(), []string{testBin(t, "escape-group")})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if res.ExitCode != 0 || res.Stdout != "leader done\n" {
		t.Errorf("Exec = exit %d, stdout %q; want 0, %q", res.ExitCode, res.Stdout, "leader done\n")
	}
	// The escaped process sleeps 5 s.
	if elapsed > waitDelay+2*time.Second {
		t.Errorf("Exec returned after %v, want about %v", elapsed, waitDelay)
	}
}

func TestBoundedBuffer(t *testing.T) {
	tests := []struct {
		name          string
		limit         int
		writes        []string
		want          string
		wantTruncated bool
	}{
		{name: "under", limit: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "exact", limit: 6, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "over in one write", limit: 4, writes: []string{"abcdef"}, want: "abcd", wantTruncated: true},
		{name: "over across writes", limit: 4, writes: []string{"abc", "def", "ghi"}, want: "abcd", wantTruncated: true},
		{name: "zero limit", limit: 0, writes: []string{"a"}, want: "", wantTruncated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &boundedBuffer{limit: tc.limit}
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
			}
			if string(b.buf) != tc.want || b.truncated != tc.wantTruncated {
				t.Errorf("kept %q truncated %v, want %q %v", b.buf, b.truncated, tc.want, tc.wantTruncated)
			}
		})
	}
}

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		name          string
		limit         int
		writes        []string
		want          string
		wantTruncated bool
	}{
		{name: "under", limit: 10, writes: []string{"a\nb", "c\n"}, want: "a\nbc\n"},
		{name: "exact", limit: 6, writes: []string{"ab\n", "de\n"}, want: "ab\nde\n"},
		{name: "cut mid-line drops that line", limit: 5, writes: []string{"abc\ndef\ngh\n"}, want: "gh\n", wantTruncated: true},
		{name: "cut at a line start keeps it", limit: 7, writes: []string{"abc\n", "def\n", "gh\n"}, want: "def\ngh\n", wantTruncated: true},
		{name: "one line longer than the limit", limit: 3, writes: []string{"abcdef\n"}, want: "", wantTruncated: true},
		{name: "zero limit", limit: 0, writes: []string{"a\n"}, want: "", wantTruncated: true},
		// Past tailSlack the buffer drops its oldest bytes as it goes; the line the drop fell
		// in is still left out.
		{name: "many writes", limit: 10, writes: slices.Repeat([]string{"0123456789abcdef\n"}, 1000), want: "", wantTruncated: true},
		{name: "many writes, short lines", limit: 10, writes: slices.Repeat([]string{"0123\n"}, 3000), want: "0123\n0123\n", wantTruncated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &tailBuffer{limit: tc.limit}
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
				if len(b.buf) > tc.limit+max(tc.limit, tailSlack) {
					t.Fatalf("holds %d bytes for a limit of %d", len(b.buf), tc.limit)
				}
			}
			if got, cut := b.result(); got != tc.want || cut != tc.wantTruncated {
				t.Errorf("kept %q truncated %v, want %q %v", got, cut, tc.want, tc.wantTruncated)
			}
		})
	}
}
