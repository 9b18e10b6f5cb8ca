package checks

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/nodecheck/nodecheck/checks/node"
)

// fakeFacts is an in-memory node for unit tests. Whole-node behaviour is tested on recorded
// snapshots (testdata/snapshots); this covers the cases those do not.
type fakeFacts struct {
	files   map[string]string
	devs    map[string]node.DevNode
	stats   map[string]node.FileStat // FileStat's answers; a path not here was not recorded
	statErr map[string]error         // the error FileStat answers with, by path
	ports   []node.IBPort
	portErr error
	host    string
	pci     []node.PCIDevice
	pciErr  error
	gpus    node.GPUInventory
	gpuErr  error
	facts   map[string]any   // declared facts' values, by name (node.Fact's Name)
	factErr map[string]error // the error a declared fact answers with, by name
}

var _ node.Facts = (*fakeFacts)(nil)

func (f *fakeFacts) ReadFile(_ context.Context, path string) ([]byte, error) {
	s, ok := f.files[path]
	if !ok {
		return nil, fmt.Errorf("read %s: %w", path, fs.ErrNotExist)
	}
	return []byte(s), nil
}

func (f *fakeFacts) DevNode(_ context.Context, path string) (node.DevNode, error) {
	d, ok := f.devs[path]
	if !ok {
		return node.DevNode{Path: path, Missing: true}, nil
	}
	d.Path = path
	return d, nil
}

func (f *fakeFacts) FileStat(_ context.Context, path string) (node.FileStat, error) {
	if err := f.statErr[path]; err != nil {
		return node.FileStat{}, err
	}
	st, ok := f.stats[path]
	if !ok {
		return node.FileStat{}, fmt.Errorf("stat %s: %w", path, node.ErrNotRecorded)
	}
	st.Path = path
	return st, nil
}

func (f *fakeFacts) IBPorts(context.Context) ([]node.IBPort, error) { return f.ports, f.portErr }

func (f *fakeFacts) Exec(_ context.Context, argv []string) (node.CmdResult, error) {
	return node.CmdResult{}, fmt.Errorf("exec %s: %w", argv[0], fs.ErrNotExist)
}

func (f *fakeFacts) Hostname(context.Context) (string, error) { return f.host, nil }

func (f *fakeFacts) PCIDevices(context.Context) ([]node.PCIDevice, error) { return f.pci, f.pciErr }

func (f *fakeFacts) GPUs(context.Context) (node.GPUInventory, error) { return f.gpus, f.gpuErr }

// Fact answers a declared fact from facts and factErr; one in neither was not recorded.
func (f *fakeFacts) Fact(_ context.Context, d node.FactDecl) (any, error) {
	v, ok := f.facts[d.FactName()]
	err := f.factErr[d.FactName()]
	if !ok && err == nil {
		return nil, fmt.Errorf("read %s: not recorded: %w", d.FactName(), fs.ErrNotExist)
	}
	return v, err
}

func charDev(major, minor uint32) node.DevNode {
	return node.DevNode{Type: "char", Major: major, Minor: minor}
}

// nvidiaDevs is /dev/nvidia0..n-1 and /dev/nvidiactl as the driver creates them.
func nvidiaDevs(n int) map[string]node.DevNode {
	m := map[string]node.DevNode{"/dev/nvidiactl": charDev(195, 255)}
	for i := range n {
		m[fmt.Sprintf("/dev/nvidia%d", i)] = charDev(195, uint32(i))
	}
	return m
}
