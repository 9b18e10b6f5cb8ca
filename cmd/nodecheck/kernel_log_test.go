package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
)

// TestKernelLogOverLimit: a kernel log longer than node.KernelLogLimit whose newest line is
// an XID 79 (h100-healthy with a dmesg recording added: invented filler lines, the XID line
// of checks/history/testdata/kmsg/xid-invented.log on the snapshot's GPU 0000:18:00) makes
// the node UNHEALTHY, with and without a history: the newest part of the log is what is
// read, and the result says the rest was not.
func TestKernelLogOverLimit(t *testing.T) {
	dir := copySnapshot(t, "h100-healthy")
	cmdsFile := filepath.Join(dir, "commands.json")
	data, err := os.ReadFile(cmdsFile)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []map[string]any
	if err := json.Unmarshal(data, &cmds); err != nil {
		t.Fatal(err)
	}
	const filler = "[    1.000000] filler: a kernel log line that fills the ring buffer\n"
	log := strings.Repeat(filler, node.KernelLogLimit/len(filler)+1000) +
		"[ 2002.000002] NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python3, GPU has fallen off the bus.\n"
	cmds = append(cmds, map[string]any{"argv": []string{"/usr/bin/dmesg", "--kernel", "--nopager"}, "stdout": log, "exit_code": 0})
	if data, err = json.Marshal(cmds); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cmdsFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"--state-dir", t.TempDir()}} {
		code, res, stderr := replay(t, dir, args...)
		x := res["xid_errors"]
		if code != exitUnhealthy || x.status != checks.StatusFail || !strings.Contains(x.summary, "XID 79") ||
			!strings.Contains(x.summary, "only the kernel log's newest") {
			t.Errorf("%v: exit %d, xid_errors %s %q; want UNHEALTHY, XID 79 failing, the cut said\nstderr:\n%s", args, code, x.status, x.summary, stderr)
		}
	}
}
