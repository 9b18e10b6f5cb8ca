package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultOutputLimit is how many bytes of each of a command's stdout and stderr Exec keeps.
// Checks need a version line or a table of a few KiB; the bound keeps a chatty or broken
// tool from filling memory or a drain reason.
const DefaultOutputLimit = 64 << 10

// KernelLogLimit is how much of dmesg's output Exec keeps: the kernel log since boot is the
// kernel's ring buffer (log_buf_len: 128 KiB to a few MiB, more on large machines), and its
// newest lines, the XIDs and link events of the last hours, come last. Cut at
// DefaultOutputLimit, a node whose boot messages alone fill 64 KiB would never show a later
// XID. Past the limit the newest part is kept (KeepsTail).
const KernelLogLimit = 8 << 20

// KeepsTail says whether Exec keeps the end of argv0's stdout rather than its start when it
// is over the limit: dmesg's, whose newest lines (an XID 79 of a minute ago) come last, and a
// log that outgrew the bound must not lose them to its boot messages. The kept part starts
// at a line (the line the cut falls in is dropped) and CmdResult.CutFront says so. Every
// other command keeps the start of its output, where tools print their headers, versions and
// tables, and what a parser needs to make sense of the rest; stderr always keeps its start,
// where the first error is.
func KeepsTail(argv0 string) bool { return filepath.Base(argv0) == "dmesg" }

// DCGMOutputLimit is how much of dcgmi's output Exec keeps: `dcgmi diag -r 3 -j` on an
// 8-GPU node lists a dozen tests with a result, its info lines and its warnings per GPU, and
// a JSON document cut anywhere cannot be read at all.
const DCGMOutputLimit = 1 << 20

// OutputLimit is how much of each of argv0's stdout and stderr Exec keeps: KernelLogLimit for
// dmesg, DCGMOutputLimit for dcgmi, else limit.
func OutputLimit(argv0 string, limit int) int {
	switch filepath.Base(argv0) {
	case "dmesg":
		return max(limit, KernelLogLimit)
	case "dcgmi":
		return max(limit, DCGMOutputLimit)
	}
	return limit
}

// DefaultWaitDelay is how long Exec waits for a command's pipes to close after the command
// exited or was killed; see WithWaitDelay.
const DefaultWaitDelay = time.Second

// DefaultEnv returns the environment commands run with. Slurm gives hooks no PATH at all and
// an admin's shell gives anything, so commands get the same small fixed environment in every
// context instead of inheriting: their behaviour then does not depend on where nodecheck
// was started, and LANG=C keeps their output in the English the parsers expect.
func DefaultEnv() []string {
	return []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}
}

// execConfig is how runCommand runs a command.
type execConfig struct {
	outputLimit int
	waitDelay   time.Duration
	env         []string
}

// runCommand runs argv without a shell, in "/", with stdin from /dev/null and the configured
// environment, in a process group of its own.
//
// When ctx is done the whole group is killed (SIGKILL to -pgid), so a child the command forked
// dies with it and cannot hold the output pipes open; WaitDelay then bounds the wait for a
// process that left the group (setsid) and still holds them. The result keeps the partial
// output and the error wraps ctx.Err(). After a normal exit, what is left of the group is
// killed too: a query command must not leave processes behind on a node that is about to
// run a job.
//
// stdout and stderr are each cut at the output limit (Truncated set); the rest is read and
// dropped so that the command never blocks on a full pipe. Output written after the command
// exited, by a process it left behind, may be lost. ExitCode is the exit status, or 128+N when
// a signal N ended the command (the shells' convention), or -1 when it never ran.
func runCommand(ctx context.Context, c execConfig, argv []string) (CmdResult, error) {
	res := CmdResult{Argv: slices.Clone(argv), ExitCode: -1}
	if len(argv) == 0 {
		return res, errors.New("run: empty command")
	}
	prog := argv[0]
	if !filepath.IsAbs(prog) {
		// Hooks have no PATH (docs/slurm.md): a bare name would resolve differently,
		// or not at all, depending on how nodecheck was started.
		return res, fmt.Errorf("run %q: program path is not absolute", prog)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("run %s: %w", prog, err)
	}

	var stdout outputBuffer = &boundedBuffer{limit: OutputLimit(prog, c.outputLimit)}
	if KeepsTail(prog) {
		stdout = &tailBuffer{limit: OutputLimit(prog, c.outputLimit)}
	}
	stderr := &boundedBuffer{limit: OutputLimit(prog, c.outputLimit)}
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Env = slices.Clone(c.env)
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would mean "inherit nodecheck's environment"
	}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if name := userOf(ctx); name != "" {
		cred, err := credentialOf(name)
		if err != nil {
			return res, fmt.Errorf("run %s as %q: %w", prog, name, err)
		}
		cmd.SysProcAttr.Credential = cred
	}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = c.waitDelay

	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.Duration = time.Since(start)
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(prog); serr == nil {
				// execve says ENOENT for a missing #! interpreter or ELF loader too. The program
				// is installed but broken, which a check must not mistake for "not installed",
				// so this error deliberately does not wrap fs.ErrNotExist.
				return res, fmt.Errorf("run %s: program exists but cannot be started (missing interpreter or loader?): %v", prog, bare(err))
			}
		}
		return res, fmt.Errorf("run %s: %w", prog, bare(err))
	}
	pgid := cmd.Process.Pid
	waitErr := cmd.Wait()
	res.Duration = time.Since(start)
	// The group's leader is reaped, but its pgid stays reserved while members remain, so this
	// reaches only the command's leftovers (or nothing: ESRCH).
	_ = killGroup(pgid)

	var cutOut bool
	res.Stdout, cutOut = stdout.result()
	res.Stderr = string(stderr.buf)
	res.Truncated = cutOut || stderr.truncated
	res.CutFront = cutOut && KeepsTail(prog)
	ps := cmd.ProcessState
	if ps != nil {
		res.ExitCode = exitCode(ps)
	}
	if ctx.Err() != nil && (ps == nil || !ps.Exited()) {
		return res, fmt.Errorf("run %s: killed after %s: %w", prog, res.Duration.Round(time.Millisecond), ctx.Err())
	}
	var ee *exec.ExitError
	switch {
	case waitErr == nil, errors.As(waitErr, &ee), errors.Is(waitErr, exec.ErrWaitDelay):
		// A non-zero exit is a result, not an error; ErrWaitDelay means the command exited
		// but something it left behind held the pipes, which were then closed.
		return res, nil
	default:
		return res, fmt.Errorf("run %s: %w", prog, waitErr)
	}
}

// killGroup sends SIGKILL to the process group pgid. A group that is already gone is
// reported as os.ErrProcessDone, which exec.Cmd.Cancel treats as "nothing to cancel".
func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// exitCode is the exit status, or 128+N for a command ended by signal N.
func exitCode(ps *os.ProcessState) int {
	if ps.Exited() {
		return ps.ExitCode()
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return -1
}

// outputBuffer is where a command's stdout goes: a boundedBuffer (the start kept) or a
// tailBuffer (the end kept). result is what was kept and whether anything was dropped.
type outputBuffer interface {
	io.Writer
	result() (string, bool)
}

// boundedBuffer keeps the first limit bytes written to it and drops the rest, always
// reporting success so that the writer keeps draining the pipe.
type boundedBuffer struct {
	buf       []byte
	limit     int
	truncated bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := b.limit - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	if room > 0 {
		b.buf = append(b.buf, p[:room]...)
	}
	b.truncated = true
	return len(p), nil
}

func (b *boundedBuffer) result() (string, bool) { return string(b.buf), b.truncated }

// tailBuffer keeps the last limit bytes written to it, in at most about twice that much
// memory, always reporting success so that the writer keeps draining the pipe. result starts
// the kept bytes at a line.
type tailBuffer struct {
	buf   []byte
	limit int
	// dropped says bytes before buf were dropped; lineStart that buf[0] began a line then.
	dropped, lineStart bool
}

// tailSlack is the least the buffer grows past its limit before it drops its oldest bytes,
// so that a small limit does not copy at every write.
const tailSlack = 4 << 10

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if keep := max(b.limit, 0); len(b.buf) > keep+max(keep, tailSlack) {
		k := len(b.buf) - keep
		b.lineStart = b.buf[k-1] == '\n'
		b.buf = b.buf[:copy(b.buf, b.buf[k:])]
		b.dropped = true
	}
	return len(p), nil
}

func (b *tailBuffer) result() (string, bool) {
	s, cut := cutTail(string(b.buf), max(b.limit, 0))
	if cut || !b.dropped {
		return s, cut
	}
	if !b.lineStart {
		s = afterLine(s)
	}
	return s, true
}

// cutTail keeps the last limit bytes of s from the start of a line: the line the cut falls
// in is dropped whole, so that no part of a line reads as a line of its own.
func cutTail(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	t := s[len(s)-limit:]
	if limit > 0 && s[len(s)-limit-1] != '\n' {
		t = afterLine(t)
	}
	return t, true
}

// afterLine is s from its second line on; "" when it has no second line.
func afterLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// runAsKey is the context key of WithUser.
type runAsKey struct{}

// WithUser returns ctx carrying the account that Exec runs its command as: a user name or a
// numeric uid, with that user's primary and supplementary groups. It travels in ctx rather
// than as an Exec argument so that every Facts wrapper (Recorder, Memo) passes it on as it
// is; a snapshot replays the recorded output whoever the user, and Live refuses to run the
// command at all when the user is unknown, never running it as nodecheck's own user instead.
func WithUser(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, runAsKey{}, name)
}

func userOf(ctx context.Context) string {
	s, _ := ctx.Value(runAsKey{}).(string)
	return s
}

// credentialOf resolves name (or a numeric uid) through the system's user database.
func credentialOf(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, nerr := strconv.ParseUint(name, 10, 32); nerr != nil {
			return nil, fmt.Errorf("look up user: %w", err)
		}
		if u, err = user.LookupId(name); err != nil {
			return nil, fmt.Errorf("look up uid: %w", err)
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("gid %q: %w", u.Gid, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				cred.Groups = append(cred.Groups, uint32(n))
			}
		}
	}
	if uint32(os.Geteuid()) == cred.Uid && uint32(os.Getegid()) == cred.Gid {
		// Already that user: setgroups would need privileges this process may not have.
		return nil, nil
	}
	return cred, nil
}
