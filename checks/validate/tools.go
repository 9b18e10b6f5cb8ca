package validate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/text"
)

// Install hints: what to install where a tool is missing, and the key that names its path.
var installHints = map[string]string{
	TestDCGM:        "install DCGM (datacenter-gpu-manager) and run nv-hostengine, or set [validate] dcgmi",
	TestNCCL:        "build nccl-tests (github.com/NVIDIA/nccl-tests, make) and install build/all_reduce_perf there, or set [validate] all_reduce_perf",
	TestNCCLNet:     "build nccl-tests (github.com/NVIDIA/nccl-tests, make) and install build/all_reduce_perf there, or set [validate] all_reduce_perf",
	TestNVBandwidth: "build nvbandwidth (github.com/NVIDIA/nvbandwidth, cmake . && make) and install it there, or set [validate] nvbandwidth",
	TestIBWriteBW:   "install perftest built with CUDA (github.com/linux-rdma/perftest, ./configure CUDA_H_PATH=...), or set [validate] ib_write_bw",
	TestGPUBurn:     "build gpu-burn (github.com/wilicc/gpu-burn, make) and install gpu_burn with its compare.ptx there, or set [validate] gpu_burn",
}

// exec runs argv and says what became of it: ok false with the test's result where the tool is
// missing (skip with the install hint), ran past its deadline (fail: a hung tool is a hung
// GPU or link until shown otherwise), or could not be started (error).
func exec(ctx context.Context, h Host, test string, argv []string) (node.CmdResult, Test, bool) {
	out, err := h.Exec(ctx, argv)
	switch {
	case err == nil:
		return out, Test{}, true
	case errors.Is(err, fs.ErrNotExist):
		return out, Test{Name: test, Status: checks.StatusSkip, Summary: argv[0] + " not installed: " + installHints[test]}, false
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return out, Test{Name: test, Status: checks.StatusFail, Remedy: checks.RemedyAdmin,
			Summary: fmt.Sprintf("%s did not finish within its deadline (%s)%s", baseName(argv[0]), out.Duration.Round(1e9), lastLine(out))}, false
	case ctx.Err() != nil:
		return out, Test{Name: test, Status: checks.StatusError, Summary: "interrupted while " + baseName(argv[0]) + " ran"}, false
	}
	return out, Test{Name: test, Status: checks.StatusError, Summary: text.OneLine(err.Error(), 200)}, false
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// lastLine is ": <the output's last non-empty line>", cut, or "".
func lastLine(out node.CmdResult) string {
	lines := strings.Split(strings.TrimSpace(out.Stdout+"\n"+out.Stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return ": " + text.OneLine(l, 120)
		}
	}
	return ""
}

// worst is the figures' first that is not ok, by the largest shortfall below its floor.
func worst(figs []Figure) (Figure, bool) {
	var w Figure
	found := false
	for _, f := range figs {
		if f.OK || f.Floor <= 0 {
			continue
		}
		if !found || f.Value/f.Floor < w.Value/w.Floor {
			w, found = f, true
		}
	}
	return w, found
}

// expectedText is " (expected N)", or "" where nothing is expected.
func expectedText(f Figure) string {
	if f.Expected <= 0 {
		return ""
	}
	return fmt.Sprintf(" (expected %g)", f.Expected)
}

// judgeFigures is a test's result from its figures: fail naming the worst figure and its
// floor; warn when a figure has no floor; else ok with what.
func judgeFigures(test string, figs []Figure, what string, remedy checks.Remedy) Test {
	if w, bad := worst(figs); bad {
		n := 0
		for _, f := range figs {
			if !f.OK {
				n++
			}
		}
		more := ""
		if n > 1 {
			more = fmt.Sprintf(" (+%d more below the floor)", n-1)
		}
		dev := ""
		if w.Device != "" {
			dev = " " + w.Device
		}
		return Test{Name: test, Status: checks.StatusFail, Remedy: remedy,
			Summary: fmt.Sprintf("%s%s %.2f %s below floor %g %s%s%s", w.Name, dev, w.Value, w.Unit, w.Floor, w.Unit, expectedText(w), more)}
	}
	for _, f := range figs {
		if f.Floor <= 0 {
			return Test{Name: test, Status: checks.StatusWarn, Summary: fmt.Sprintf("%s; %s: %s", what, f.Name, f.Source)}
		}
	}
	return Test{Name: test, Status: checks.StatusOK, Summary: what}
}
