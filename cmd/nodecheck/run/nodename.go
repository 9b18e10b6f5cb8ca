package run

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
)

// NodeNameSources are the places the node's Slurm name can come from, in priority order.
type NodeNameSources struct {
	Flag     string              // --node
	Getenv   func(string) string // SLURMD_NODENAME, set by slurmd for every script it starts
	Snapshot string              // node_name recorded in a snapshot's meta.json
	Facts    node.Facts          // for the host name
	Slurm    *checks.SlurmFiles  // slurm.conf, to map the host name to a NodeName
}

// ResolveNodeName finds the node's Slurm name: --node, then SLURMD_NODENAME, then the
// snapshot's node_name, then the slurm.conf node whose NodeHostname (or NodeName) is this
// host's name, tried as given and then without its domain. A node slurm.conf does not
// know is an error that says how to name it.
func ResolveNodeName(ctx context.Context, s NodeNameSources) (string, error) {
	if s.Flag != "" {
		return s.Flag, nil
	}
	if s.Getenv != nil {
		if n := s.Getenv("SLURMD_NODENAME"); n != "" {
			return n, nil
		}
	}
	if s.Snapshot != "" {
		return s.Snapshot, nil
	}
	host, err := s.Facts.Hostname(ctx)
	if err != nil {
		return "", fmt.Errorf("find this node's name: %w; pass --node NAME", err)
	}
	short, _, _ := strings.Cut(host, ".")
	conf, err := s.Slurm.Conf(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("find this node's name: reading slurm.conf timed out; pass --node NAME")
		}
		// Without slurm.conf the host name is the best guess Slurm itself would make.
		return short, nil
	}
	for _, h := range []string{host, short} {
		if n, ok := conf.NodeByHostname(h); ok {
			return n, nil
		}
	}
	return "", fmt.Errorf("host %q is not a node in %s (no NodeName or NodeHostname matches); pass --node NAME or set SLURMD_NODENAME", host, conf.Path)
}
