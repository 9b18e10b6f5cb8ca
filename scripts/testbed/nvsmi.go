package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The answers testdata/bin/nvidia-smi-standin gives to `nvidia-smi --gpu-reset`, each a real
// captured output (testdata/bin/SOURCE.nvidia-smi-standin) with the GPU's bus id put in.
const (
	ResetSuccess      = "success"        // "GPU <bus> was successfully reset." [0]
	ResetInUse        = "in-use"         // "... could not be reset: ... In use by another client" [255]
	ResetInUseProcess = "in-use-process" // "GPU <bus> is currently in use by another process." [255]
	ResetPrimaryGPU   = "primary-gpu"    // "GPU Reset couldn't run because GPU <bus> is the primary GPU." [3]
	ResetNoPermission = "no-permission"  // "... could not be reset: ... Insufficient Permissions" [4]
	ResetNotSupported = "not-supported"  // "... could not be reset: ... Not Supported" [3]
)

// NvidiaSMIStandin is a copy of testdata/bin/nvidia-smi-standin installed as Path, with the
// state file that chooses its answers beside it (Path.state) and its call log (Path.state.log).
type NvidiaSMIStandin struct {
	Path string
}

// InstallNvidiaSMIStandin copies the stand-in to dir/nvidia-smi (repoRoot as in Options).
// It answers nothing until SetResets chooses.
func InstallNvidiaSMIStandin(t *testing.T, repoRoot, dir string) *NvidiaSMIStandin {
	t.Helper()
	src := filepath.Join(repoRoot, "testdata", "bin", "nvidia-smi-standin")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	s := &NvidiaSMIStandin{Path: filepath.Join(dir, "nvidia-smi")}
	if err := os.WriteFile(s.Path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// NvidiaSMIStandin installs the stand-in as DIR/bin/nvidia-smi, a path that means the same on
// the host and in the 24.11 root.
func (b *Bed) NvidiaSMIStandin(t *testing.T) *NvidiaSMIStandin {
	t.Helper()
	return InstallNvidiaSMIStandin(t, b.RepoRoot, filepath.Join(b.Dir, "bin"))
}

// SetResets chooses the answers of the next calls, one a call; the last answers every call
// after. gpus, if any, are "INDEX BUS UUID" lines for the node's GPUs (default: the 8 H100s of
// testdata/snapshots/h100-*).
func (s *NvidiaSMIStandin) SetResets(t *testing.T, modes []string, gpus ...string) {
	t.Helper()
	if len(modes) == 0 {
		t.Fatal("SetResets: no mode")
	}
	var b strings.Builder
	b.WriteString("# written by testbed.NvidiaSMIStandin.SetResets\n")
	for _, g := range gpus {
		fmt.Fprintf(&b, "gpu %s\n", g)
	}
	for _, m := range modes {
		b.WriteString(m + "\n")
	}
	if err := os.WriteFile(s.Path+".state", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Calls are the stand-in's log lines, one a call: "call N: -r -i IDS -> BUSES: MODE exit E".
func (s *NvidiaSMIStandin) Calls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(s.Path + ".state.log")
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}
