package run

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// nvlinkCounter counts the NVLink topology readings a run asks of its node.
type nvlinkCounter struct {
	node.Facts
	calls *int
}

func (c nvlinkCounter) Fact(ctx context.Context, d node.FactDecl) (any, error) {
	if d == node.NVLinkTopologyFact {
		*c.calls++
	}
	return c.Facts.Fact(ctx, d)
}

// TestNVLinkTopologyPerMode: a whole run of every check on a node whose gres.conf gives
// Links= reads where the NVLinks lead once in the modes gres_affinity runs in by default
// (health, manual) and never in a prolog or an epilog, which pay for no NVML session of it.
func TestNVLinkTopologyPerMode(t *testing.T) {
	want := map[config.Mode]int{config.ModeProlog: 0, config.ModeEpilog: 0, config.ModeHealth: 1, config.ModeManual: 1}
	for _, mode := range config.Modes() {
		t.Run(string(mode), func(t *testing.T) {
			calls := 0
			env, _, err := NewEnv(context.Background(), EnvOptions{
				SnapshotDir: filepath.Join(snapshotsDir, "h100-gres-links-islands"), Mode: mode,
				Wrap: func(f node.Facts) node.Facts { return nvlinkCounter{f, &calls} },
			})
			if err != nil {
				t.Fatal(err)
			}
			rep := checks.Run(context.Background(), env, checks.All(), env.RunOptions())
			if calls != want[mode] {
				t.Errorf("a %s run read the NVLink topology %d times, want %d", mode, calls, want[mode])
			}
			if mode == config.ModeHealth {
				i := slices.IndexFunc(rep.Results, func(r checks.Result) bool { return r.Check == "gres_affinity" })
				switch {
				case i < 0:
					t.Error("health run on h100-gres-links-islands: no gres_affinity result")
				case rep.Results[i].Status != checks.StatusWarn:
					t.Errorf("health run on h100-gres-links-islands: gres_affinity %s %q, want warn", rep.Results[i].Status, rep.Results[i].Summary)
				}
			}
		})
	}
}

// BenchmarkGresAffinity replays the whole check on the snapshots that give Cores= (116 sysfs
// reads of the CPU topology, 8 numa_node files) and Links= (the recorded NVLink topology):
// the README's figures. Each iteration is a fresh run (NewEnv, not timed), so nothing is
// memoized across iterations; the time is a replay's, reading files of the snapshot's fs/.
func BenchmarkGresAffinity(b *testing.B) {
	gresAffinity, err := checks.Select([]string{"gres_affinity"})
	if err != nil {
		b.Fatal(err)
	}
	for _, snap := range []string{"h100-healthy", "h100-gres-cores-wrong-socket", "h100-gres-links-islands"} {
		b.Run(snap, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				env, _, err := NewEnv(context.Background(), EnvOptions{SnapshotDir: filepath.Join(snapshotsDir, snap), Mode: config.ModeManual})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if res := gresAffinity[0].Run(context.Background(), env); res.Status != checks.StatusOK && res.Status != checks.StatusWarn {
					b.Fatalf("%s: %s %q", snap, res.Status, res.Summary)
				}
			}
		})
	}
}
