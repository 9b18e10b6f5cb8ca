package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// slurmInfo is what `scontrol show config` says that validation depends on.
type slurmInfo struct {
	version          string // "24.11.5"
	major, minor     int
	extraConstraints bool // SchedulerParameters has extra_constraints
}

// extraSupported says whether this Slurm filters jobs' --extra on node Extra: 23.11 and later
// (slurm.conf(5), SchedulerParameters=extra_constraints).
func (i slurmInfo) extraSupported() bool {
	return i.major > 23 || i.major == 23 && i.minor >= 11
}

// config reads the version and SchedulerParameters from `scontrol show config`.
func (s *slurmClient) config(ctx context.Context) (slurmInfo, error) {
	out, err := s.cmd(ctx, "scontrol", "show", "config")
	if err != nil {
		return slurmInfo{}, err
	}
	return parseShowConfig(out)
}

// parseShowConfig reads `scontrol show config` lines: "SLURM_VERSION           = 24.11.5",
// "SchedulerParameters     = extra_constraints,bf_continue".
func parseShowConfig(out string) (slurmInfo, error) {
	var i slurmInfo
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "SLURM_VERSION":
			i.version = v
			f := strings.SplitN(v, ".", 3)
			if len(f) >= 2 {
				i.major, _ = strconv.Atoi(f[0])
				i.minor, _ = strconv.Atoi(f[1])
			}
		case "SchedulerParameters":
			for _, p := range strings.Split(v, ",") {
				if strings.TrimSpace(p) == "extra_constraints" {
					i.extraConstraints = true
				}
			}
		}
	}
	if i.major == 0 {
		return i, fmt.Errorf("scontrol show config: no SLURM_VERSION line")
	}
	return i, nil
}

// createReservation makes a MAINT reservation of one node for user, starting now, for minutes.
// Without ignore_jobs Slurm refuses it while a job holds the node ("Requested nodes are
// busy"): that refusal is the last guard against validating a node that took a user job
// between sinfo and here.
func (s *slurmClient) createReservation(ctx context.Context, name, node, user string, minutes int) error {
	_, err := s.cmd(ctx, "scontrol", "create", "reservation", "ReservationName="+name, "StartTime=now",
		"Duration="+strconv.Itoa(minutes), "Nodes="+node, "Users="+user, "Flags=MAINT")
	return err
}

// deleteReservation removes a reservation.
func (s *slurmClient) deleteReservation(ctx context.Context, name string) error {
	_, err := s.cmd(ctx, "scontrol", "delete", "ReservationName="+name)
	return err
}

// updateNode runs `scontrol update NodeName=NODE KEY=VALUE...`.
func (s *slurmClient) updateNode(ctx context.Context, node string, kv ...string) error {
	_, err := s.cmd(ctx, "scontrol", append([]string{"update", "NodeName=" + node}, kv...)...)
	return err
}

// nodeExtras reads the nodes' Extra with `scontrol --json show node [NODE]` (23.11 and later
// have --json): all nodes when node is "".
func (s *slurmClient) nodeExtras(ctx context.Context, node string) (map[string]string, error) {
	args := []string{"--json", "show", "node"}
	if node != "" {
		args = append(args, node)
	}
	out, err := s.cmd(ctx, "scontrol", args...)
	if err != nil {
		return nil, err
	}
	return parseNodeExtras([]byte(out))
}

// parseNodeExtras reads the name and extra of each node of scontrol's JSON.
func parseNodeExtras(data []byte) (map[string]string, error) {
	var doc struct {
		Nodes []struct {
			Name  string `json:"name"`
			Extra string `json:"extra"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("scontrol --json show node: %w", err)
	}
	out := map[string]string{}
	for _, n := range doc.Nodes {
		out[n.Name] = n.Extra
	}
	return out, nil
}

// activeReservations maps each node to the active reservations that hold it, from one
// `scontrol -o show reservation`. A MAINT reservation does not show in sinfo's node state, and
// Slurm lets a MAINT reservation overlap another (observed with 22.05.8 and 24.11.5), so this
// is how the sweep keeps off a node someone else reserved.
func (s *slurmClient) activeReservations(ctx context.Context) (map[string][]string, error) {
	out, err := s.cmd(ctx, "scontrol", "-o", "show", "reservation")
	if err != nil {
		return nil, err
	}
	return parseReservations(out)
}

// parseReservations reads `scontrol -o show reservation` lines ("ReservationName=x
// StartTime=... Nodes=n[1-2] ... State=ACTIVE ..."); "No reservations in the system" is none.
func parseReservations(out string) (map[string][]string, error) {
	held := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		var name, nodes, state string
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "ReservationName":
				name = v
			case "Nodes":
				nodes = v
			case "State":
				state = v
			}
		}
		if name == "" || state != "ACTIVE" || nodes == "" || nodes == "(null)" {
			continue
		}
		list, err := slurm.ExpandHostlist(nodes)
		if err != nil {
			return nil, fmt.Errorf("reservation %s: Nodes=%s: %w", name, nodes, err)
		}
		for _, n := range list {
			held[n] = append(held[n], name)
		}
	}
	return held, nil
}
