package config

import (
	"slices"
	"testing"
	"time"
)

func TestRepairConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string // the whole error text
	}{
		{"relative program", "[repair]\ngpu_reset = [\"nvidia-smi\", \"-r\", \"-i\", \"{gpus}\"]\n",
			`nodecheck.toml:2: repair.gpu_reset: the program "nvidia-smi" is not an absolute path: Slurm starts hooks without PATH, and nodecheck runs no shell`},
		{"no placeholder", "[repair]\ngpu_reset = [\"/usr/bin/nvidia-smi\", \"-r\"]\n",
			`nodecheck.toml:2: repair.gpu_reset: has 0 "{gpus}" arguments, want exactly one: it becomes the bus ids of the GPUs to reset (nvidia-smi -i takes them comma-separated)`},
		{"two placeholders", "[repair]\ngpu_reset = [\"/usr/local/sbin/reset\", \"{gpus}\", \"--also={gpus}\"]\n",
			`nodecheck.toml:2: repair.gpu_reset: has 2 "{gpus}" arguments, want exactly one: it becomes the bus ids of the GPUs to reset (nvidia-smi -i takes them comma-separated)`},
		{"empty command", "[repair]\ngpu_reset = []\n",
			`nodecheck.toml:2: repair.gpu_reset: empty: give the command as a list, such as ["/usr/bin/nvidia-smi", "--gpu-reset", "-i", "{gpus}"]`},
		{"a string, not a list", "[repair]\ngpu_reset = \"/usr/bin/nvidia-smi -r\"\n",
			`nodecheck.toml:2: repair.gpu_reset: want an array such as ["a", "b"], got the string "/usr/bin/nvidia-smi -r"`},
		{"reset timeout too long for slurmd", "[repair]\nreset_timeout = \"1m\"\n",
			`nodecheck.toml:2: repair.reset_timeout = "1m0s": repairs run in the health check, which slurmd kills after 1m0s: give less`},
		{"reset timeout zero", "[repair]\nreset_timeout = \"0s\"\n",
			`nodecheck.toml:2: repair.reset_timeout = "0s": must be positive`},
		{"relative squeue", "[repair]\nsqueue = \"squeue\"\n",
			`nodecheck.toml:2: repair.squeue = "squeue": give an absolute path: Slurm starts hooks without PATH`},
		{"max_repairing zero", "[repair]\nmax_repairing = \"0%\"\n",
			`nodecheck.toml:2: repair.max_repairing: "0%" would hold back every repair: to never repair set enabled = false; for no limit use ""`},
		{"max_repairing over 100%", "[repair]\nmax_repairing = \"150%\"\n",
			`nodecheck.toml:2: repair.max_repairing: "150%" is over 100%: for no limit use ""`},
		{"no repairs allowed", "[repair]\ngpu_repairs = 0\n",
			`nodecheck.toml:2: repair.gpu_repairs = 0: must be at least 1 (the repairs after which nodecheck stops repairing and marks the node for service)`},
		{"no clean runs before resuming", "[repair]\npasses_to_resume = 0\n",
			`nodecheck.toml:2: repair.passes_to_resume = 0: must be at least 1 (the clean health runs after a repair before the node returns to service)`},
		{"window zero", "[repair]\nnode_window = \"0s\"\n",
			`nodecheck.toml:2: repair.node_window = "0s": must be positive (the time over which repairs are counted)`},
		{"a typo", "[repair]\nenable = true\n",
			`nodecheck.toml:2: unknown key "repair.enable" (did you mean "enabled"?)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.toml), "nodecheck.toml", testSchema())
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tc.want)
			}
		})
	}
}

// TestRepairDefaults: repairs are off unless asked for, and the defaults are the documented
// ones.
func TestRepairDefaults(t *testing.T) {
	r := Default(testSchema()).Repair
	if r.Enabled {
		t.Error("repairs are on by default")
	}
	if !slices.Equal(r.GPUReset, []string{"/usr/bin/nvidia-smi", "--gpu-reset", "-i", "{gpus}"}) || r.ResetTimeout != 30*time.Second ||
		!r.Reboot || r.Squeue != "/usr/bin/squeue" || r.MaxRepairing != "5%" ||
		r.PassesToResume != 2 || r.GPURepairs != 3 || r.GPUWindow != 168*time.Hour || r.NodeRepairs != 5 || r.NodeWindow != 168*time.Hour {
		t.Errorf("defaults: %+v", r)
	}
	cfg, err := ParseConfig([]byte("[repair]\nenabled = true\ngpu_reset = [\"/usr/local/sbin/gpu-reset\", \"--gpus={gpus}\"]\nmax_repairing = \"2\"\nreboot = false\n"), "nodecheck.toml", testSchema())
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Repair; !r.Enabled || r.Reboot || r.MaxRepairing != "2" || r.GPUReset[1] != "--gpus={gpus}" || r.GPURepairs != 3 {
		t.Errorf("parsed: %+v", r)
	}
}

// TestRepairAbsent: a nodecheck.toml without [repair] (today's files) parses to repairs off
// with the defaults, exactly as Default has them.
func TestRepairAbsent(t *testing.T) {
	cfg, err := ParseConfig([]byte("[drain]\nenabled = true\n"), "nodecheck.toml", testSchema())
	if err != nil {
		t.Fatal(err)
	}
	if want := Default(testSchema()).Repair; cfg.Repair.Enabled || !slices.Equal(cfg.Repair.GPUReset, want.GPUReset) || cfg.Repair.MaxRepairing != want.MaxRepairing {
		t.Errorf("[repair] absent: %+v, want the defaults %+v", cfg.Repair, want)
	}
}

func TestParseMaxRepairing(t *testing.T) {
	for _, tc := range []struct {
		in      string
		n       int
		percent bool
		ok      bool
	}{{"", 0, false, true}, {"1", 1, false, true}, {" 5% ", 5, true, true}, {"0", 0, false, false}, {"x", 0, false, false}, {"101%", 0, false, false}} {
		n, p, err := ParseMaxRepairing(tc.in)
		if n != tc.n || p != tc.percent || (err == nil) != tc.ok {
			t.Errorf("ParseMaxRepairing(%q) = %d, %v, %v; want %d, %v, ok %v", tc.in, n, p, err, tc.n, tc.percent, tc.ok)
		}
	}
}
