package checks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// TestGPUFieldsFor pins the GPU facts a run reads in each mode with the default config: what
// the checks of the mode judge (docs/speed.md: the NVML calls they cost).
func TestGPUFieldsFor(t *testing.T) {
	ident := node.GPUName | node.GPUPCIBusID
	always := ident | node.GPUDriverVersion | node.GPUPCIe | node.GPUFabric | node.GPUECC | node.GPURemappedRows |
		node.GPURetiredPages | node.GPUNVLinks | node.GPURecoveryAction
	jobs := node.GPUMinorNumber | node.GPUMemory | node.GPUCompute
	// xid_errors and gpu_error_rates (health, manual): the GPUs' identity the history keeps
	// them by, and the counters whose rates it judges.
	overTime := node.GPUUUID | node.GPUSerial | node.GPUECCCorrected | node.GPUNVLinkErrors | node.GPUPCIeReplays
	signals := node.GPUClockEvents | node.GPUThermal | node.GPUPower | node.GPUPersistence
	// gres_affinity (health, manual): which PCI device each gres.conf File= is.
	affinity := node.GPUMinorNumber | node.GPUPCIBusID
	cfg := config.Default(Schema())
	for _, tc := range []struct {
		mode config.Mode
		want node.GPUFields
	}{
		{config.ModeProlog, always | jobs},
		{config.ModeEpilog, always | jobs | node.GPUClockEvents | node.GPUThermal},
		{config.ModeHealth, always | signals | overTime | affinity},
		{config.ModeManual, always | signals | overTime | affinity},
	} {
		if got := GPUFieldsFor(All(), cfg, tc.mode); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.mode, got, tc.want)
		}
	}
	repairs, err := config.ParseConfig([]byte("[repair]\nenabled = true\n"), "nodecheck.toml", Schema())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := GPUFieldsFor(All(), repairs, config.ModeHealth), always|signals|overTime|affinity|node.GPUCompute; got != want {
		t.Errorf("health with [repair] on: %s, want %s (the processes on each GPU)", got, want)
	}
	noLinks, err := config.ParseConfig([]byte("[repair]\nenabled = true\n[checks.nvlink]\nenabled = false\n"), "nodecheck.toml", Schema())
	if err != nil {
		t.Fatal(err)
	}
	if got := GPUFieldsFor(All(), noLinks, config.ModeHealth); !got.Has(node.GPUNVLinks | node.GPUName) {
		t.Errorf("health with [repair] on and nvlink off: %s, want the NVLinks and names still read (which GPUs reset together)", got)
	}
	if got := GPUFieldsFor(All(), repairs, config.ModeProlog); got != always|jobs {
		t.Errorf("prolog with [repair] on: %s, want %s (prologs never repair)", got, always|jobs)
	}
	sel, _ := Select([]string{"gpu_count", "ib_ports"})
	if got := GPUFieldsFor(sel, cfg, config.ModeProlog); got != ident {
		t.Errorf("--check gpu_count,ib_ports: %s, want %s", got, ident)
	}
	off, err := config.ParseConfig([]byte("[checks.nvlink]\nenabled = false\n[checks.gpu_clocks]\nmodes = [\"prolog\"]\n"), "nodecheck.toml", Schema())
	if err != nil {
		t.Fatal(err)
	}
	got := GPUFieldsFor(All(), off, config.ModeProlog)
	if got.Has(node.GPUNVLinks) || !got.Has(node.GPUClockEvents) {
		t.Errorf("nvlink disabled, gpu_clocks in the prolog: %s", got)
	}
}

// spyFacts counts the GPUs readings of the Facts it wraps.
type spyFacts struct {
	node.Facts
	gpus int
}

func (s *spyFacts) GPUs(ctx context.Context) (node.GPUInventory, error) {
	s.gpus++
	return s.Facts.GPUs(ctx)
}

// onlyFacts answers GPUs with the facts of only: what a run asking NVML for them gets.
type onlyFacts struct {
	node.Facts
	only node.GPUFields
}

func (o onlyFacts) GPUs(ctx context.Context) (node.GPUInventory, error) {
	inv, err := o.Facts.GPUs(ctx)
	return inv.Only(o.only), err
}

// everyMode is every mode, with a job on all 8 GPUs in the prolog and the epilog.
func envInMode(e *Env, mode config.Mode) *Env {
	c := *e
	c.Mode = mode
	if mode == config.ModeProlog || mode == config.ModeEpilog {
		c.Job = Job{ID: "42", GPUs: "0,1,2,3,4,5,6,7", UID: "1001", User: "alice"}
	}
	return &c
}

// repoSnapshots are the bundled snapshots, each a node the checks are run on.
func repoSnapshots(t *testing.T) []string {
	t.Helper()
	dirs, err := os.ReadDir(filepath.Join("..", "testdata", "snapshots"))
	if err != nil {
		t.Skipf("no bundled snapshots: %v", err)
	}
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join("..", "testdata", "snapshots", d.Name(), "meta.json")); err == nil && d.Name() != "h100-ib-hang" {
			out = append(out, d.Name())
		}
	}
	return out
}

// TestGPUFieldsDeclared: every check that reads NVML on some bundled snapshot, in some
// mode, says which facts it judges; a run would otherwise not ask NVML for them.
func TestGPUFieldsDeclared(t *testing.T) {
	for _, snap := range repoSnapshots(t) {
		base := snapshotEnv(t, openSnapshot(t, snap))
		for _, mode := range config.Modes() {
			for _, c := range All() {
				if _, ok := c.(gpuFactsUser); ok {
					continue
				}
				spy := &spyFacts{Facts: base.Facts}
				e := envInMode(base, mode)
				e.Facts = spy
				c.Run(context.Background(), e)
				if spy.gpus > 0 {
					t.Errorf("%s reads NVML (%s, %s mode) but does not say which GPU facts it judges (GPUFields)", c.ID(), snap, mode)
				}
			}
		}
	}
}

// TestGPUFieldsSuffice: a check's result is the same whether NVML gave every fact or only
// those its GPUFields names: a run that asks for no more loses nothing the check judges.
func TestGPUFieldsSuffice(t *testing.T) {
	// A subject names a GPU by UUID and serial where the run read them (the history, the
	// repair step ask for them), not from the check's own facts: what it judges is the same.
	ignore := cmp.Options{cmpopts.IgnoreFields(Result{}, "Duration", "Err"), cmpopts.IgnoreFields(GPURef{}, "UUID", "Serial")}
	run := func(t *testing.T, name string, base *Env) {
		for _, mode := range config.Modes() {
			for _, c := range All() {
				u, ok := c.(gpuFactsUser)
				if !ok {
					continue
				}
				full := c.Run(context.Background(), envInMode(base, mode))
				e := envInMode(base, mode)
				e.Facts = onlyFacts{Facts: base.Facts, only: u.GPUFields()}
				limited := c.Run(context.Background(), e)
				if diff := cmp.Diff(full, limited, ignore); diff != "" {
					t.Errorf("%s on %s in %s mode: the result changes when NVML gives only %s (-every fact +those):\n%s", c.ID(), name, mode, u.GPUFields(), diff)
				}
			}
		}
	}
	for _, snap := range repoSnapshots(t) {
		run(t, snap, snapshotEnv(t, openSnapshot(t, snap)))
	}
	// Real captures with every signal, on the facts of h100-healthy otherwise.
	for _, capture := range []string{capH100Brake, capH100_565, capA40, capRTX4060} {
		inv := captureInv(t, capture)
		f := &execFacts{fakeFacts: &fakeFacts{pci: h100PCI(), gpus: inv, files: map[string]string{"/etc/slurm/slurm.conf": h100SlurmConf}}, cmds: h100Commands()}
		run(t, capture, gpuEnv(f, "gpu-h100-01", nil))
	}
}
