package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// topologyInputs is what `nodecheck lint --topology` reads besides slurm.conf.
type topologyInputs struct {
	input slurm.TopologyInput
	extra []slurm.Problem // the GUID map's problems
	notes []slurm.Problem // what lint did not check
}

// readTopologyInputs reads topology.conf, the capture and the GUID map the options name. Its
// error is for a usage mistake or a file that cannot be read; what is wrong inside the files
// is in their problems.
func readTopologyInputs(ctx context.Context, o lintOptions) (*topologyInputs, error) {
	switch {
	case o.Topology == "":
		return nil, errors.New("--ibnetdiscover, --lldp, --ib-guid-map and --ib-host-regexp need --topology")
	case o.LLDP != "" && o.IBNetDiscover != "":
		return nil, errors.New("--lldp and --ibnetdiscover: give one fabric")
	case o.LLDPSwitchMap != "" && o.LLDP == "":
		return nil, errors.New("--lldp-switch-map needs --lldp")
	case o.IBNetDiscover == "" && (o.IBGUIDMap != "" || o.IBHostRegexp != ""):
		return nil, errors.New("--ib-guid-map and --ib-host-regexp need --ibnetdiscover")
	}
	open := o.Open
	if open == nil {
		open = func(p string) (io.ReadCloser, error) { return os.Open(p) }
	}
	t := &topologyInputs{}
	f, err := open(o.Topology)
	if err != nil {
		return nil, fmt.Errorf("read topology.conf: %w", err)
	}
	t.input.Topology, err = slurm.ParseTopologyConf(f, o.Topology, o.ReadFile)
	f.Close()
	if err != nil {
		return nil, err
	}
	// topology.yaml(5): "Slurm will first check for topology.yaml. If this file exists,
	// topology.conf will be ignored" (25.05 and later).
	if yaml := filepath.Join(filepath.Dir(o.Topology), "topology.yaml"); o.Exists != nil && o.Exists(yaml) {
		t.notes = append(t.notes, slurm.Problem{Severity: slurm.SeverityInfo, File: o.Topology,
			Message: fmt.Sprintf("%s: %s is beside it: Slurm 25.05 and later read topology.yaml and ignore topology.conf, and lint does not read topology.yaml yet: on those versions what is checked here is not what Slurm uses", filepath.Base(o.Topology), yaml)})
	}
	if o.IBHostRegexp != "" {
		if t.input.Naming.HostRegexp, err = regexp.Compile(o.IBHostRegexp); err != nil {
			return nil, fmt.Errorf("--ib-host-regexp: %v", err)
		}
	}
	if o.IBGUIDMap != "" {
		f, err := open(o.IBGUIDMap)
		if err != nil {
			return nil, fmt.Errorf("read --ib-guid-map: %w", err)
		}
		t.input.Naming.GUIDs, t.extra, err = slurm.ParseGUIDMap(f, o.IBGUIDMap)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if o.LLDP != "" {
		m, err := readLLDPDir(o.LLDP, o.LLDPSwitchMap, o.ReadFile)
		if err != nil {
			return nil, err
		}
		t.input.Fabric, t.input.Naming = m.Fabric(o.LLDP)
		return t, nil
	}
	if o.IBNetDiscover == "" {
		return t, nil
	}
	var r io.Reader = o.Stdin
	if o.IBNetDiscover != "-" {
		f, err := open(o.IBNetDiscover)
		if err != nil {
			return nil, fmt.Errorf("read --ibnetdiscover: %w", err)
		}
		defer f.Close()
		r = f
	} else if r == nil {
		return nil, errors.New("--ibnetdiscover -: no standard input")
	}
	t.input.Fabric, err = parseFabric(ctx, r, o.IBNetDiscover)
	return t, err
}

// parseFabric parses a capture until ctx is done: a pipe whose writer hangs must not hang
// lint past Ctrl-C.
func parseFabric(ctx context.Context, r io.Reader, name string) (*slurm.Fabric, error) {
	type result struct {
		f   *slurm.Fabric
		err error
	}
	ch := make(chan result, 1)
	go func() {
		f, err := slurm.ParseIBNetDiscover(r, name)
		ch <- result{f, err}
	}()
	select {
	case res := <-ch:
		return res.f, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("read %s: %w", name, ctx.Err())
	}
}
