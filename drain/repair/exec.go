package repair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

// Runner runs a command without a shell under ctx and returns its exit code and its output
// (stdout and stderr), bounded. err is for a command that could not run or did not end: it
// timed out, or could not start.
type Runner func(ctx context.Context, argv []string) (code int, output string, err error)

// maxOutput bounds what a reset command's output is kept of.
const maxOutput = 64 << 10

// Exec is the real Runner: argv[0] must be an absolute path. The command runs in a process
// group of its own, and at ctx's end the whole group is killed, not only the command: a reset
// script's children (nvidia-smi under a wrapper, a sleep in a retry loop) must not outlive the
// run and go on acting on the GPU. Its pipes are given up a second later.
func Exec(ctx context.Context, argv []string) (int, string, error) {
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return -1, "", fmt.Errorf("%q: want an absolute program path", argv)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out capped
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return -1, out.String(), fmt.Errorf("%s: %w", argv[0], ctx.Err())
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), nil
	case err != nil:
		return -1, out.String(), err
	}
	return 0, out.String(), nil
}

// capped keeps the first maxOutput bytes written to it.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// ResetArgv is the reset command for gpus: p.GPUReset with the one argument holding
// config.GPUResetPlaceholder given the bus ids, comma-separated (nvidia-smi -i takes a list).
func (p Policy) ResetArgv(gpus []GPU) []string {
	var ids []string
	for _, g := range gpus {
		ids = append(ids, g.Bus)
	}
	argv := make([]string, len(p.GPUReset))
	for i, a := range p.GPUReset {
		argv[i] = strings.ReplaceAll(a, config.GPUResetPlaceholder, strings.Join(ids, ","))
	}
	return argv
}

// BusOf returns the first PCI bus id in s ("gpu 3 (0000:9b:00.0)", NVML's
// "00000000:9B:00.0") in sysfs form, lower case with a 4-digit domain; "" when s holds none.
func BusOf(s string) string {
	m := busPattern().FindString(s)
	if m == "" {
		return ""
	}
	m = strings.ToLower(m)
	dom, rest, _ := strings.Cut(m, ":")
	n, err := strconv.ParseUint(dom, 16, 32)
	if err != nil || n > 0xffff {
		return ""
	}
	return fmt.Sprintf("%04x:%s", n, rest)
}

// busPattern is compiled on first use: nothing runs at start-up that a prolog does not need.
var busPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\b`)
})
