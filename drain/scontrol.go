package drain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultTimeout bounds each scontrol and sinfo call. A reachable slurmctld answers in
// milliseconds; an unreachable one makes the Slurm clients retry for MessageTimeout (10 s by
// default) and more, longer than a prolog's whole budget.
const DefaultTimeout = 5 * time.Second

// Output bounds: one node's record is a few KiB; sinfo lists every node of the cluster, about
// 100 bytes each, so 16 MiB covers 100,000 nodes.
const (
	showNodeLimit = 1 << 20
	sinfoLimit    = 16 << 20
	shortLimit    = 4 << 10 // stderr, and the stdout of --version and update
)

// Format selects how Client reads a node's state.
type Format int

// The formats.
const (
	FormatAuto Format = iota // JSON where `scontrol --version` says 23.02 or later, else text
	FormatText               // `scontrol show node -o NAME`
	FormatJSON               // `scontrol --json show node NAME`
)

// Slurm is what drain needs from a Slurm controller; Client is the real one.
type Slurm interface {
	// Node reads one node's state and reason. An unreachable controller, a timeout or an
	// unknown node is an error: the state is then unknown, and nothing may be changed.
	Node(ctx context.Context, name string) (NodeState, error)
	// Nodes lists every node of the cluster with its state, reason and the reason's time,
	// for the safety limit. It fails like Node.
	Nodes(ctx context.Context) ([]NodeState, error)
	// Update changes a node's state. It returns once slurmctld accepted or refused it.
	Update(ctx context.Context, u Update) error
	// Argv is the command Update runs for u, for --dry-run and the report.
	Argv(u Update) []string
}

// Update is one change of a node's state: State "DRAIN" with a Reason, or "RESUME".
type Update struct {
	Node   string
	State  string
	Reason string
}

// Client runs scontrol and sinfo: by absolute path (hooks have no PATH), without a shell (the
// reason is one argv element, never parsed by a shell), in "/", with a small fixed
// environment, each call under its own deadline and with bounded output.
type Client struct {
	scontrol  string
	sinfo     string
	squeue    string // for Jobs; "" when not given (WithSqueue)
	timeout   time.Duration
	env       []string
	format    Format
	formatErr error // why FormatAuto fell back to text, for logs

	detect sync.Once
}

var _ Slurm = (*Client)(nil)

// Option tunes a Client.
type Option func(*Client)

// WithTimeout bounds each call (DefaultTimeout otherwise). The context's deadline, when
// sooner, wins.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithSlurmConf passes SLURM_CONF=path to scontrol and sinfo. HealthCheckProgram runs with no
// SLURM_CONF, so without this the clients find only /etc/slurm/slurm.conf (or DNS SRV records
// in a configless cluster). "" leaves it unset.
func WithSlurmConf(path string) Option {
	return func(c *Client) {
		if path != "" {
			c.env = append(c.env, "SLURM_CONF="+path)
		}
	}
}

// WithFormat fixes how node state is read instead of asking `scontrol --version`.
func WithFormat(f Format) Option { return func(c *Client) { c.format = f } }

// New returns a Client that runs the scontrol and sinfo at these absolute paths.
func New(scontrol, sinfo string, opts ...Option) *Client {
	c := &Client{
		scontrol: scontrol,
		sinfo:    sinfo,
		timeout:  DefaultTimeout,
		// LANG=C: the parsers read English. PATH only for what scontrol itself may run.
		env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// CommandError is a Slurm command that did not succeed: it timed out, could not start, or
// exited non-zero. Each means the controller's answer is unknown.
type CommandError struct {
	Argv     []string
	ExitCode int    // -1 when it did not exit on its own
	Stderr   string // first line of stderr (of stdout when stderr is empty), sanitized
	Err      error  // the cause when it did not exit on its own (context.DeadlineExceeded, ...)
}

func (e *CommandError) Error() string {
	cmd := strings.Join(e.Argv, " ")
	switch {
	case e.Err != nil:
		return fmt.Sprintf("%s: %v", cmd, e.Err)
	case e.Stderr != "":
		return fmt.Sprintf("%s: exit %d: %s", cmd, e.ExitCode, e.Stderr)
	}
	return fmt.Sprintf("%s: exit %d", cmd, e.ExitCode)
}

func (e *CommandError) Unwrap() error { return e.Err }

// Node reads the node's state, from JSON or the one-line text form (see Format). --future
// shows a node in state FUTURE, which scontrol otherwise reports as not found.
func (c *Client) Node(ctx context.Context, name string) (NodeState, error) {
	if c.nodeFormat(ctx) == FormatJSON {
		out, err := c.run(ctx, showNodeLimit, nil, c.scontrol, "--json", "show", "node", "--future", name)
		if err != nil {
			return NodeState{}, err
		}
		return ParseNodesJSON(bytes.NewReader(out), name)
	}
	out, err := c.run(ctx, showNodeLimit, nil, c.scontrol, "show", "node", "-o", "--future", name)
	if err != nil {
		return NodeState{}, err
	}
	return ParseShowNode(bytes.NewReader(out), name)
}

// Nodes lists the cluster's nodes from sinfo, every partition included (--all: hidden ones
// too), with every state word and the reason's time in seconds (SinfoFormat).
func (c *Client) Nodes(ctx context.Context) ([]NodeState, error) {
	out, err := c.run(ctx, sinfoLimit, []string{"SLURM_TIME_FORMAT=%s"}, c.sinfo, "--all", "--noheader", "--Node", "-O", SinfoFormat)
	if err != nil {
		return nil, err
	}
	return ParseSinfoNodes(bytes.NewReader(out))
}

// Update runs `scontrol update NodeName=N State=S [Reason=R]`.
func (c *Client) Update(ctx context.Context, u Update) error {
	argv := c.Argv(u)
	_, err := c.run(ctx, shortLimit, nil, argv[0], argv[1:]...)
	return err
}

// Argv is the scontrol command line for u. The reason is one argument: scontrol takes the
// text after "Reason=" as is (blanks, "=" and quotes inside included; it strips only a pair
// of quotes around the whole value, which Sanitize rules out).
func (c *Client) Argv(u Update) []string {
	argv := []string{c.scontrol, "update", "NodeName=" + u.Node, "State=" + u.State}
	if u.Reason != "" {
		argv = append(argv, "Reason="+u.Reason)
	}
	return argv
}

// nodeFormat resolves FormatAuto once per Client: `scontrol --json` exists from Slurm 23.02 on
// (22.05 says "unrecognized option"). `scontrol --version` reads slurm.conf but does not
// contact slurmctld, so it costs a few milliseconds even when the controller is down. If it
// fails the text form is used: it works on every version.
func (c *Client) nodeFormat(ctx context.Context) Format {
	c.detect.Do(func() {
		if c.format != FormatAuto {
			return
		}
		c.format = FormatText
		out, err := c.run(ctx, shortLimit, nil, c.scontrol, "--version")
		if err != nil {
			c.formatErr = err
			return
		}
		major, minor, err := ParseVersion(string(out))
		if err != nil {
			c.formatErr = err
			return
		}
		if major > 23 || major == 23 && minor >= 2 {
			c.format = FormatJSON
		}
	})
	return c.format
}

// run runs prog without a shell under the client's timeout, with the client's environment and
// env, and returns its stdout, at most limit bytes (more is an error: a cut document would
// parse wrong).
func (c *Client) run(ctx context.Context, limit int, env []string, prog string, args ...string) ([]byte, error) {
	argv := append([]string{prog}, args...)
	if !filepath.IsAbs(prog) {
		return nil, &CommandError{Argv: argv, ExitCode: -1, Err: errors.New("program path is not absolute: set it in nodecheck.toml ([drain], [repair])")}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, &CommandError{Argv: argv, ExitCode: -1, Err: fmt.Errorf("not run: %w", err)}
	}
	stdout := &capped{limit: limit}
	stderr := &capped{limit: shortLimit}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(slices.Clone(c.env), env...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A process group of its own, killed whole on timeout, so nothing it started can hold
	// the pipes open past the deadline.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 500 * time.Millisecond
	start := time.Now()
	err := cmd.Run()
	switch {
	case ctx.Err() != nil && (cmd.ProcessState == nil || !cmd.ProcessState.Exited()):
		cause := ctx.Err()
		if errors.Is(cause, context.DeadlineExceeded) {
			cause = fmt.Errorf("no answer within %s: %w", time.Since(start).Round(10*time.Millisecond), cause)
		}
		return nil, &CommandError{Argv: argv, ExitCode: -1, Err: cause}
	case err != nil && cmd.ProcessState == nil:
		return nil, &CommandError{Argv: argv, ExitCode: -1, Err: bareExecErr(err)}
	case cmd.ProcessState.ExitCode() != 0:
		// scontrol prints some errors on stdout ("Node n9 not found").
		msg := firstLine(stderr.buf.String())
		if msg == "" {
			msg = firstLine(stdout.buf.String())
		}
		return nil, &CommandError{Argv: argv, ExitCode: cmd.ProcessState.ExitCode(), Stderr: msg}
	case stdout.over:
		return nil, &CommandError{Argv: argv, ExitCode: 0, Err: fmt.Errorf("printed more than %d bytes", limit)}
	}
	return stdout.buf.Bytes(), nil
}

// bareExecErr drops exec's repetition of the program path, which CommandError already names.
func bareExecErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return cutLine(s)
}

// capped keeps the first limit bytes and drops the rest, always reporting success so that
// the writer keeps draining the pipe.
type capped struct {
	buf   bytes.Buffer
	limit int
	over  bool
}

func (w *capped) Write(p []byte) (int, error) {
	if room := w.limit - w.buf.Len(); room < len(p) {
		w.over = true
		w.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	w.buf.Write(p)
	return len(p), nil
}
