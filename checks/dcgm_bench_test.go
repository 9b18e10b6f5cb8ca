package checks

import (
	"context"
	"testing"

	"github.com/nodecheck/nodecheck/config"
)

// BenchmarkDCGMHealth runs dcgm_health in a health run on the recorded PCIe replay injection
// (h100-dcgm-pcie-replay): dcgmi's three recorded answers (watches, health check, discovery)
// replayed from the snapshot, parsed and judged. On a live node the check adds dcgmi's own
// process and host-engine round trips, which replay cannot measure.
func BenchmarkDCGMHealth(b *testing.B) {
	snap := openSnapshot(b, "h100-dcgm-pcie-replay")
	env := envInMode(snapshotEnv(b, snap), config.ModeHealth)
	ctx := context.Background()
	if r := (dcgmHealth{}).Run(ctx, env); r.Status != StatusFail {
		b.Fatalf("dcgm_health on h100-dcgm-pcie-replay: %s %s, want fail", r.Status, r.Summary)
	}
	b.ReportAllocs()
	for b.Loop() {
		(dcgmHealth{}).Run(ctx, env)
	}
}
