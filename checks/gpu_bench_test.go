package checks

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// snapshotDir is a recorded node of testdata/snapshots. The snapshots exist only in a
// repository checkout (their directory is its own module, see its go.mod), so tests that need
// one skip where it is absent.
func snapshotDir(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join("..", "testdata", "snapshots", name)
	if _, err := os.Stat(filepath.Join(dir, "meta.json")); errors.Is(err, fs.ErrNotExist) {
		tb.Skipf("snapshot %s not present (testdata/snapshots is only in a repository checkout)", name)
	}
	return dir
}

func openSnapshot(tb testing.TB, name string) *node.Snapshot {
	tb.Helper()
	snap, err := node.OpenSnapshot(snapshotDir(tb, name))
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

// TestGPUChecksOnSnapshots replays the recorded nodes through gpu_count, pcie_link and
// fabric_manager, facts read by node.Snapshot as a run reads them. The end-to-end goldens of
// cmd/nodecheck cover the same ground with every check; this pins the three summaries where a
// reader of testdata/snapshots/README.md looks for them.
func TestGPUChecksOnSnapshots(t *testing.T) {
	const healthyFM = "driver and Fabric Manager 535.161.08, nvidia-fabricmanager active, fabric COMPLETED on 8 GPUs (4 NVSwitches)"
	const healthyPCIe = "8 GPUs, 4 NVSwitches at full PCIe width"
	const healthyCount = "8 GPUs in slurm.conf (Gres=gpu:h100:8), NVML and on PCI"
	tests := []struct {
		snapshot string
		want     []brief
	}{
		{"h100-healthy", []brief{{"gpu_count", "ok", healthyCount}, {"pcie_link", "ok", healthyPCIe}, {"fabric_manager", "ok", healthyFM}}},
		{"a100-healthy", []brief{
			{"gpu_count", "ok", "8 GPUs in slurm.conf (Gres=gpu:a100:8), NVML and on PCI"},
			{"pcie_link", "ok", "8 GPUs at full PCIe width; 6 without link width not judged"},
			{"fabric_manager", "ok", "driver and Fabric Manager 535.161.08, nvidia-fabricmanager active, no GPU reports fabric state (before Hopper) (6 NVSwitches)"}}},
		{"cpu-node-no-gpu-no-ib", []brief{
			{"gpu_count", "skip", "no GPU Gres for cpu-01 in slurm.conf and no NVIDIA GPU on the PCI bus (NVML init: ERROR_LIBRARY_NOT_FOUND)"},
			{"pcie_link", "skip", "no GPU, NVSwitch or Mellanox InfiniBand/Ethernet HCA on the PCI bus"},
			{"fabric_manager", "skip", "no NVSwitch and no NVIDIA GPU on the PCI bus"}}},
		{"h100-gpu-lost", []brief{
			{"gpu_count", "fail", "7/8 GPUs in NVML, 8 on PCI: 0000:9b:00.0 missing, gpu 4 ERROR_GPU_IS_LOST"},
			{"pcie_link", "ok", healthyPCIe},
			// The lost GPU's fabric state was not read (not ok by not looking).
			{"fabric_manager", "error", "fabric state not read on 1 GPU: gpu 4 ERROR_GPU_IS_LOST"}}},
		{"h100-gres-count-high", []brief{
			{"gpu_count", "fail", "slurm.conf expects 9 GPUs (Gres=gpu:h100:9), NVML and PCI show 8"},
			{"pcie_link", "ok", healthyPCIe}, {"fabric_manager", "ok", healthyFM}}},
		{"h100-pcie-x8", []brief{
			{"gpu_count", "ok", healthyCount},
			{"pcie_link", "fail", "gpu 3 (0000:5d:00.0) PCIe x8, expected x16"},
			{"fabric_manager", "ok", healthyFM}}},
		{"h100-fm-version-mismatch", []brief{
			{"gpu_count", "ok", healthyCount}, {"pcie_link", "ok", healthyPCIe},
			{"fabric_manager", "fail", "driver 535.161.08 but Fabric Manager 535.154.05: install nvidia-fabricmanager 535.161.08 and restart it (a mismatch gives CUDA error 802)"}}},
		{"h100-fm-down", []brief{
			{"gpu_count", "ok", healthyCount}, {"pcie_link", "ok", healthyPCIe},
			{"fabric_manager", "fail", "nvidia-fabricmanager service inactive, want active: see journalctl -u nvidia-fabricmanager, then systemctl restart nvidia-fabricmanager"}}},
		{"h100-fabric-in-progress", []brief{
			{"gpu_count", "ok", healthyCount}, {"pcie_link", "ok", healthyPCIe},
			{"fabric_manager", "fail", "fabric not completed on 1 of 8 GPUs: gpu 5 (0000:bb:00.0) IN_PROGRESS"}}},
		{"h100-nvml-driver-not-loaded", []brief{
			{"gpu_count", "fail", "NVML init: ERROR_DRIVER_NOT_LOADED, slurm.conf expects 8 GPUs"},
			{"pcie_link", "ok", healthyPCIe},
			{"fabric_manager", "fail", "NVML init: ERROR_DRIVER_NOT_LOADED: cannot read the driver version to compare with Fabric Manager (4 NVSwitches)"}}},
	}
	for _, tc := range tests {
		t.Run(tc.snapshot, func(t *testing.T) {
			snap := openSnapshot(t, tc.snapshot)
			env := snapshotEnv(t, snap)
			var got []brief
			for _, c := range []Check{gpuCount{}, pcieLink{}, fabricManager{}} {
				r := c.Run(context.Background(), env)
				got = append(got, brief{c.ID(), string(r.Status), r.Summary})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// snapshotEnv is the Env a run builds for a snapshot: its node name, its slurm.conf and the
// nodecheck.toml recorded with it (built-in defaults when it has none).
func snapshotEnv(tb testing.TB, snap *node.Snapshot) *Env {
	tb.Helper()
	cfg := config.Default(Schema())
	if b, err := snap.ReadFile(context.Background(), "/etc/nodecheck/nodecheck.toml"); err == nil {
		if cfg, err = config.ParseConfig(b, "nodecheck.toml", Schema()); err != nil {
			tb.Fatal(err)
		}
	}
	return gpuEnv(snap, snap.Meta().NodeName, cfg)
}

// preloaded is a snapshot's facts held in memory, so that a benchmark measures the checks and
// not the file reads of replay.
func preloaded(b *testing.B, name string) *execFacts {
	b.Helper()
	ctx := context.Background()
	snap := openSnapshot(b, name)
	pci, err := snap.PCIDevices(ctx)
	if err != nil {
		b.Fatal(err)
	}
	gpus, err := snap.GPUs(ctx)
	if err != nil {
		b.Fatal(err)
	}
	f := &execFacts{fakeFacts: &fakeFacts{files: map[string]string{}, pci: pci, gpus: gpus}, cmds: map[string]node.CmdResult{}}
	for _, p := range []string{"/etc/slurm/slurm.conf", "/etc/slurm/gres.conf"} {
		if data, err := snap.ReadFile(ctx, p); err == nil {
			f.files[p] = string(data)
		}
	}
	for _, argv := range [][]string{strings.Fields(fmVersionCmd), strings.Fields(fmActiveCmd)} {
		if r, err := snap.Exec(ctx, argv); err == nil {
			f.cmds[strings.Join(argv, " ")] = r
		}
	}
	return f
}

// BenchmarkGPUChecks runs gpu_count, pcie_link and fabric_manager on the facts of
// h100-healthy held in memory. slurm.conf is parsed once per run (SlurmFiles is lazy), as in
// a real run, so the loop measures the checks' own logic.
func BenchmarkGPUChecks(b *testing.B) {
	f := preloaded(b, "h100-healthy")
	env := gpuEnv(f, "gpu-h100-01", nil)
	ctx := context.Background()
	for _, c := range []Check{gpuCount{}, pcieLink{}, fabricManager{}} {
		if r := c.Run(ctx, env); r.Status != StatusOK {
			b.Fatalf("%s on h100-healthy: %s %s", c.ID(), r.Status, r.Summary)
		}
	}
	for _, c := range []Check{gpuCount{}, pcieLink{}, fabricManager{}} {
		b.Run(c.ID(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.ran = f.ran[:0]
				c.Run(ctx, env)
			}
		})
	}
	b.Run("all three", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.ran = f.ran[:0]
			for _, c := range []Check{gpuCount{}, pcieLink{}, fabricManager{}} {
				c.Run(ctx, env)
			}
		}
	})
}
