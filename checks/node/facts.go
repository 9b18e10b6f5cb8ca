// Package node owns every fact nodecheck reads from a node (files, device nodes, sysfs, NVML
// facts, command output) behind one interface with a live and a snapshot implementation.
// It never judges what it reads: checks do that.
package node

import (
	"context"
	"strconv"
	"time"
)

// Facts is the node as checks see it. Every method honours ctx: when ctx is done the method
// returns ctx.Err() (wrapped) as soon as it can. An implementation may still block inside a
// system call; callers that must not hang run it where a deadline can abandon it (the runner
// does). Absence is reported with an error that satisfies errors.Is(err, fs.ErrNotExist).
type Facts interface {
	// ReadFile returns the content of an absolute path on the node, e.g. /etc/slurm/gres.conf.
	// A missing file gives an error wrapping fs.ErrNotExist.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// DevNode describes a device path without opening it. A missing path is not an error:
	// it gives DevNode{Path: path, Missing: true}.
	DevNode(ctx context.Context, path string) (DevNode, error)
	// IBPorts lists every port under /sys/class/infiniband, sorted by device then port.
	// No /sys/class/infiniband gives an empty list and a nil error (no InfiniBand here).
	IBPorts(ctx context.Context) ([]IBPort, error)
	// Exec runs argv[0] (an absolute path) without a shell. A program that does not exist gives
	// an error wrapping fs.ErrNotExist. stdout and stderr are bounded; a non-zero exit is not an
	// error (see CmdResult.ExitCode); a deadline kills the process and returns ctx's error along
	// with the partial output.
	Exec(ctx context.Context, argv []string) (CmdResult, error)
	// Hostname is the node's host name as the kernel reports it.
	Hostname(ctx context.Context) (string, error)
}

// DevNode is what stat(2) says of a device path.
type DevNode struct {
	Path    string `json:"path"`
	Missing bool   `json:"missing,omitempty"`
	// Type is "char", "block", "file", "dir", "symlink" or "other"; empty when Missing.
	Type  string `json:"type,omitempty"`
	Major uint32 `json:"major,omitempty"`
	Minor uint32 `json:"minor,omitempty"`
}

// IBPort is one port of an RDMA device under /sys/class/infiniband/<dev>/ports/<n>.
type IBPort struct {
	Device      string  `json:"device"`        // mlx5_0
	Port        uint    `json:"port"`          // ports/<n>
	State       string  `json:"state"`         // state, name part: "ACTIVE"
	StateID     uint    `json:"state_id"`      // state, number part: 4
	PhysState   string  `json:"phys_state"`    // phys_state, name part: "LinkUp"
	PhysStateID uint    `json:"phys_state_id"` // phys_state, number part: 5
	Rate        string  `json:"rate"`          // rate as read: "400 Gb/sec (4X NDR)"
	RateGbps    float64 `json:"rate_gbps"`     // rate, number part: 400
	LinkLayer   string  `json:"link_layer"`    // link_layer: "InfiniBand" or "Ethernet"
}

// Name is the port as admins write it: "mlx5_0/1".
func (p IBPort) Name() string { return p.Device + "/" + strconv.FormatUint(uint64(p.Port), 10) }

// CmdResult is the bounded outcome of one command.
type CmdResult struct {
	Argv      []string      `json:"argv"`
	Stdout    string        `json:"stdout"`
	Stderr    string        `json:"stderr"`
	ExitCode  int           `json:"exit_code"`
	Duration  time.Duration `json:"-"`
	Truncated bool          `json:"truncated,omitempty"`
}
