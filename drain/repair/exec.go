package repair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// BusID turns a whole PCI bus id as NVML writes it ("00000000:9B:00.0") or as sysfs does
// ("0000:9b:00.0") into sysfs form: lower case, a 4-digit domain (more only where the
// domain needs them). "" for a string that is not one bus id. It never searches text: the
// GPU a repair acts on comes from a finding's subject (checks.Subject), not its message.
func BusID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	dom, rest, ok := strings.Cut(id, ":")
	bus, rest, ok2 := strings.Cut(rest, ":")
	dev, fn, ok3 := strings.Cut(rest, ".")
	if !ok || !ok2 || !ok3 || len(dom) < 4 || len(dom) > 8 || len(bus) != 2 || len(dev) != 2 || len(fn) != 1 || fn[0] < '0' || fn[0] > '7' {
		return ""
	}
	n, err := strconv.ParseUint(dom, 16, 32)
	if err != nil || n > 0xffff || !hex(bus) || !hex(dev) {
		return ""
	}
	return fmt.Sprintf("%04x:%s:%s.%s", n, bus, dev, fn)
}

// hex reports whether s is lower-case hex digits.
func hex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}
