package checks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// fullHistory is a node's history after a month of health checks every 30 minutes on an
// 8-GPU, 8-port node with XIDs, climbing counters and flapping ports, every list at its
// default cap: what a run loads at worst. The GPUs are h100-healthy's (UUIDs, bus ids), so
// that a replay of that snapshot merges into it. Invented values of real lengths.
func fullHistory(t testing.TB, nodeName string, now time.Time) *history.History {
	t.Helper()
	uuids := []string{"GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa", "GPU-47daa2ad-a218-6286-252b-af45f0dfaf00",
		"GPU-167d8376-ee13-fca4-938a-a05167c43cdc", "GPU-afe9f2ed-9dd0-572c-3cd8-b42b58b3bc99", "GPU-2b6f61f9-8b00-3b57-d912-b62792120662",
		"GPU-980ea11b-91dc-db7b-72ac-0685abc43658", "GPU-4ef109e9-e925-4834-2b85-0771b4ef696c", "GPU-b0fe4996-1f7c-91f6-0ccd-08ae3b7e23c5"}
	buses := []string{"19", "3b", "4c", "5d", "9b", "bb", "cb", "db"}
	lim := history.DefaultLimits()
	h := history.New(nodeName)
	const runs = 30 * 48
	start := now.Add(-runs * 30 * time.Minute)
	for run := range runs {
		t0 := start.Add(time.Duration(run) * 30 * time.Minute)
		boot := run / 200 // a reboot every 100 hours
		bootTime := start.Add(time.Duration(boot*200) * 30 * time.Minute).Add(-time.Minute)
		obs := history.Observation{Time: t0, BootID: fmt.Sprintf("3f9c1e2a-5b7d-4c8e-9f10-%012d", boot), BootTime: bootTime}
		up := t0.Sub(bootTime)
		for i := range 8 {
			g := history.GPUObs{UUID: uuids[i], Serial: fmt.Sprintf("16529220%05d", i), Bus: "0000:" + buses[i] + ":00.0", Index: i, Name: "NVIDIA H100 80GB HBM3"}
			for c := range history.NumCounters {
				g.Counters[c] = history.Read(uint64(run%200) * uint64(c+1) * 7)
			}
			obs.GPUs = append(obs.GPUs, g)
			// An XID 13 on every GPU every run, with its GPC/TPC: one burst per run.
			obs.XIDs = append(obs.XIDs, history.XIDLine{Bus: "0000:" + buses[i] + ":00", XID: 13, KernelUS: up.Microseconds() - 1e6, Loc: "7/7",
				Message: "pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"})
		}
		for p := range 8 {
			obs.Ports = append(obs.Ports, history.PortObs{Device: fmt.Sprintf("mlx5_%d", p), Port: 1, State: 4 - 3*(run%2), PhysState: 5})
		}
		h.Merge(t0, obs, lim)
	}
	return h
}

// writeFullHistory writes fullHistory as nodeName's file under stateDir/history.
func writeFullHistory(t testing.TB, stateDir, nodeName string, now time.Time) int {
	t.Helper()
	data, err := history.Encode(fullHistory(t, nodeName, now), now, history.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(stateDir, "history")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeName+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// TestWriteFullHistory writes a full history file for gpu-h100-01 (h100-healthy's node) into
// the state directory NODECHECK_FULL_HISTORY names, taken at h100-healthy's taken_at: the
// file the per-run figures of docs/history.md were measured with (`nodecheck run --snapshot
// testdata/snapshots/h100-healthy --state-dir DIR`). Without the variable it only checks that
// such a file fits the caps.
func TestWriteFullHistory(t *testing.T) {
	now := time.Date(2024, 7, 31, 11, 30, 0, 0, time.UTC)
	dir := os.Getenv("NODECHECK_FULL_HISTORY")
	if dir == "" {
		dir = t.TempDir()
	}
	n := writeFullHistory(t, dir, "gpu-h100-01", now)
	t.Logf("%d bytes in %s", n, dir)
	if lim := history.DefaultLimits(); n > lim.MaxBytes || n < lim.MaxBytes/4 {
		t.Errorf("a full history is %d bytes, the cap %d", n, lim.MaxBytes)
	}
}

// BenchmarkHistoryStep is a health run's history step on a full file, without the kernel
// log: the lock, the read, the decode and validation, the merge of the run's 8 GPUs and 8
// ports, and the atomic save. Judging is the checks' (history.BenchmarkParts/judge).
func BenchmarkHistoryStep(b *testing.B) {
	now := time.Date(2024, 7, 31, 11, 30, 0, 0, time.UTC)
	dir := b.TempDir()
	size := writeFullHistory(b, dir, "gpu01", now)
	f := historyFacts("")
	f.gpus = node.GPUInventory{Init: node.InitSuccess, DeviceCount: 8}
	for i := range 8 {
		f.gpus.Devices = append(f.gpus.Devices, node.GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x19+i), ECC: &node.ECC{VolatileCorrected: new(uint64)}})
	}
	list := []Check{gpuErrorRates{}, ibFlaps{}} // no dmesg: the kernel log is a command's cost
	b.ReportAllocs()
	i := 0
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu0 := ru.Utime.Nano() + ru.Stime.Nano()
	for b.Loop() {
		env := historyEnv(f, config.ModeHealth, dir)
		env.Node = "gpu01"
		env.History.Now = now.Add(time.Duration(i+1) * time.Minute)
		if r := loadRunHistory(context.Background(), env, list); !r.Saved {
			b.Fatalf("not saved: %+v", r.RunHistory)
		}
		i++
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	// CPU time per op: on this shared machine wall time mostly measures waiting for a core
	// and for the disk (the atomic write syncs the file and the directory).
	b.ReportMetric(float64(ru.Utime.Nano()+ru.Stime.Nano()-cpu0)/float64(i), "cpu-ns/op")
	b.ReportMetric(float64(size), "bytes_read/op")
}
