package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// An LLDP sweep (--lldp) gathers the node -> leaf switch map of a RoCE (Ethernet) fabric: one
// exclusive job per node, as the per-node sweep submits them, runs `nodecheck topology
// capture --lldp --host NODE --out OUT/lldp/NODE.json`, which asks the node's lldpd (or
// lldpad's lldptool) which switch each RDMA-capable Ethernet port is cabled to; --args and
// --args-for follow (--interface, --lldpd-socket). The job's stdout, stderr and script go to
// OUT/lldp-jobs, so that OUT/lldp holds the captures alone, as `nodecheck lint --lldp` and
// `nodecheck topology generate --lldp` read it. Then lldp_report.go says each node's leaf, the
// nodes without one and why, and compares topology.conf with the map. It never drains.

// lldpOptions are the flags of an LLDP sweep.
type lldpOptions struct {
	enabled   bool
	switchMap string // --lldp-switch-map: LLDP switch names to topology.conf's; "" none
	htmlSet   bool   // --html was given: an LLDP sweep writes no HTML report
}

// maxLLDPInput bounds each of the switch map, topology.conf (and its Includes) and slurm.conf read.
const maxLLDPInput = 16 << 20

// lldpDirs are the captures' directory and the jobs' files' directory, under --out.
func lldpDirs(out string) (captures, jobs string) {
	return filepath.Join(out, "lldp"), filepath.Join(out, "lldp-jobs")
}

// lldpJob is an LLDP sweep's job: the capture written to OUT/lldp/NODE.json by nodecheck
// itself, the host recorded being the Slurm node name (topology.conf's name for it, which the
// machine's own host name need not be).
func lldpJob(o options) jobKind {
	caps, jobs := lldpDirs(o.out)
	in := func(dir, ext string) func(string) string {
		return func(node string) string { return filepath.Join(dir, node+ext) }
	}
	return jobKind{dirs: []string{o.out, caps, jobs}, output: in(caps, ".json"),
		stdout: in(jobs, ".out"), stderr: in(jobs, ".err"), script: in(jobs, ".sh"),
		argv: func(node string) []string {
			return []string{o.nodecheck, "topology", "capture", "--lldp", "--host", node, "--out", filepath.Join(caps, node+".json")}
		},
		valid: func(r nodeRun) error { _, err := lldpCaptureOf(r); return err }}
}

// checkLLDPFlags refuses what an LLDP sweep does not do.
func checkLLDPFlags(o *options) error {
	l := o.lldp
	if !l.enabled {
		if l.switchMap != "" {
			return usagef("--lldp-switch-map needs --lldp")
		}
		return nil
	}
	switch {
	case o.validate.levelName != "":
		return usagef("--lldp and --validate: run them as two sweeps")
	case o.multinode.enabled:
		return usagef("--lldp and --multinode: run them as two sweeps")
	case o.drainSlow:
		return usagef("--lldp drains nothing: --drain-slow is for the per-node sweep")
	case l.htmlSet:
		return usagef("--lldp writes no HTML report: leave out --html")
	case l.switchMap != "" && !filepath.IsAbs(l.switchMap):
		return usagef("--lldp-switch-map %q: want an absolute path", l.switchMap)
	}
	return nil
}

// runLLDP is the LLDP sweep, from the jobs to the exit status: 0 every node on a leaf and
// topology.conf (when there is one) matching, 1 a node without a capture or a neighbour, a
// switch map problem, or topology.conf off the map, 2 usage or Slurm error.
func runLLDP(ctx context.Context, s *slurmClient, o options, format string, start time.Time, stdout, stderr io.Writer) int {
	runs, err := sweep(ctx, s, o, lldpJob(o), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fleet-sweep: %v\n", err)
		if runs == nil {
			return exitError
		}
	}
	in := readLLDPInputs(o, stderr)
	sum := summarizeLLDP(runs, in)
	sum.SlurmCalls, sum.SlurmCallsTotal = s.calls.counts()
	sum.ElapsedS = float64(time.Since(start).Milliseconds()) / 1000
	write := writeLLDPText
	if format == "json" {
		write = writeLLDPJSON
	}
	if werr := write(stdout, sum); werr != nil {
		fmt.Fprintf(stderr, "fleet-sweep: write the summary: %v\n", werr)
		return exitError
	}
	switch {
	case err != nil:
		return exitError
	case sum.failed():
		return exitUnhealthy
	}
	return exitHealthy
}

// readLLDPInputs reads the switch map, topology.conf (--topology, or the one found beside
// SLURM_CONF) and slurm.conf (SLURM_CONF, else /etc/slurm/slurm.conf, when present: the names
// topology.conf is checked against). What cannot be read is said in the summary.
func readLLDPInputs(o options, stderr io.Writer) lldpInputs {
	caps, _ := lldpDirs(o.out)
	in := lldpInputs{lldpDir: caps, nodecheck: o.nodecheck, mapFile: o.lldp.switchMap, topoPath: o.multinode.topology}
	read := func(p string) ([]byte, error) { return readBounded(p, maxLLDPInput) }
	if in.mapFile != "" {
		data, err := read(in.mapFile)
		if err == nil {
			in.switchMap, in.mapProbs, err = slurm.ParseSwitchMap(bytes.NewReader(data), in.mapFile)
		}
		if err != nil {
			in.mapProbs = append(in.mapProbs, slurm.Problem{Severity: slurm.SeverityError, File: in.mapFile,
				Message: fmt.Sprintf("read --lldp-switch-map %s: %v: switch names are LLDP's", in.mapFile, err)})
		}
	}
	if in.topoPath == "" {
		return in
	}
	data, err := read(in.topoPath)
	if err == nil {
		in.topology, err = slurm.ParseTopologyConf(bytes.NewReader(data), in.topoPath, read)
	}
	if err != nil {
		in.topoErr = fmt.Errorf("read topology.conf: %w", err)
		return in
	}
	path, err := slurm.FindSlurmConf("", func(k string) string { return envValue(o.env, k) }, func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && st.Mode().IsRegular()
	})
	if err != nil {
		return in // the comparison says slurm.conf was not found
	}
	sc, err := slurm.LoadSlurmConf(path, read)
	if err != nil {
		fmt.Fprintf(stderr, "fleet-sweep: %s: %v (topology.conf is compared without it)\n", path, err)
		return in
	}
	in.slurmConf, in.slurmPath = sc, path
	return in
}
