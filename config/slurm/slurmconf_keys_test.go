package slurm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSlurmConfKeysTable: the embedded table parses, has the supported releases, and holds
// what its source says of a few keys (read_config.c at each tag).
func TestSlurmConfKeysTable(t *testing.T) {
	k := slurmConfKeys()
	if want := []string{"22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11", "master"}; !slices.Equal(k.releases, want) {
		t.Errorf("releases %v, want %v", k.releases, want)
	}
	for _, tc := range []struct{ key, marks string }{
		{"SelectType", "KKKKKKKK"}, {"NodeName", "KKKKKKKK"}, {"TLSType", "---KKKKK"}, {"CoreSpecPlugin", "KKKDDDDD"},
		{"SlurmctldPlugstack", "K-------"}, {"PrologTimeout", "-----KKK"}, {"HealthCheckTimeout", "-------K"},
		{"FrontendName", "KKKKK---"}, {"schedulerauth", "DDD-----"},
	} {
		if got := string(k.marks[strings.ToLower(tc.key)]); got != tc.marks {
			t.Errorf("%s: marks %q, want %q", tc.key, got, tc.marks)
		}
	}
	for _, bad := range []string{"", "# key 22.05\nA K\n", "# key 22.05 24.11\nA K\n", "# key 22.05 24.11\nA K X\n"} {
		if _, err := parseConfKeyTable(bad); err == nil {
			t.Errorf("parseConfKeyTable(%q) took a broken table", bad)
		}
	}
}

// TestSlurmConfUnknownKeys: each top-level key is judged by the releases that read it.
func TestSlurmConfUnknownKeys(t *testing.T) {
	tests := []struct {
		name, line string
		want       []string // "severity line: message part"
	}{
		{name: "known everywhere, any case", line: "SelectType=select/cons_tres selecttype=select/cons_tres SCHEDULERTYPE=sched/backfill"},
		{name: "unknown", line: "FooBarKey=1", want: []string{"error 1: unknown key FooBarKey=: no Slurm release from 22.05 to 25.11, nor the development branch, reads it, and slurmctld refuses the file (Parsing error at unrecognized key: FooBarKey)"}},
		{name: "a typo", line: "SelectTyp=select/cons_tres", want: []string{"error 1: unknown key SelectTyp= (did you mean SelectType=?)"}},
		{name: "a typo after a good key", line: "ClusterName=c SchedulerTyp=sched/backfill", want: []string{"error 1: unknown key SchedulerTyp= (did you mean SchedulerType=?)"}},
		{name: "gone before 22.05", line: "CacheGroups=0", want: []string{"error 1: unknown key CacheGroups="}},
		{name: "newer than 22.05", line: "TLSType=tls/none", want: []string{"warning 1: TLSType= is read only by Slurm 24.05 and later: slurmctld 22.05 to 23.11 refuses the file"}},
		{name: "22.05 only", line: "SlurmctldPlugstack=x", want: []string{"warning 1: SlurmctldPlugstack= is read only by Slurm 22.05: slurmctld 23.02 and later refuses the file"}},
		{name: "development branch only", line: "HealthCheckTimeout=30", want: []string{"warning 1: HealthCheckTimeout= is read only by Slurm after 25.11 (its development branch): slurmctld 22.05 to 25.11 refuses the file"}},
		{name: "defunct in 24.11", line: "CoreSpecPlugin=core_spec/none", want: []string{"warning 1: CoreSpecPlugin= is defunct in Slurm 24.05 and later: slurmctld logs an error"}},
		{name: "a record whose key is gone later: fine for both", line: "FrontendName=fe1"},
		{name: "a switch in slurm.conf", line: "SwitchName=s1 Nodes=n1", want: []string{"error 1: SwitchName= lines belong in topology.conf"}},
		{name: "a typo of NodeName: the line is not read", line: "NodeNme=n1 CPUs=4 Gres=gpu:1", want: []string{"error 1: unknown key NodeNme= (did you mean NodeName=?)"}},
		{name: "NodeName's own keys are not top-level", line: "NodeName=n1 CPUs=4 RealMemory=1000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseSlurmConf([]byte(tc.line+"\n"), "slurm.conf", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Problems) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %q", dumpProblems(c.Problems), tc.want)
			}
			for i, p := range c.Problems {
				sev, rest, _ := strings.Cut(tc.want[i], " ")
				if p.Severity != sev || !strings.HasPrefix(p.Message, "slurm.conf:"+rest) {
					t.Errorf("problem %d = %s %q, want %s slurm.conf:%s...", i, p.Severity, p.Message, sev, rest)
				}
			}
		})
	}
}

// TestSlurmConfKeysOracle: the real scontrol of each Slurm here refuses a slurm.conf with a
// key exactly when the table's column for its release says the key is unknown.
func TestSlurmConfKeysOracle(t *testing.T) {
	k := slurmConfKeys()
	for _, o := range newScontrolOracles(t) {
		col := slices.Index(k.releases, strings.Join(strings.SplitN(o.version, ".", 3)[:2], "."))
		if col < 0 {
			t.Logf("Slurm %s: no column in the table", o.version)
			continue
		}
		t.Run(o.version, func(t *testing.T) {
			keys := append(slices.Clone(k.names), "FooBarKey")
			for _, key := range keys {
				t.Run(key, func(t *testing.T) {
					t.Parallel()
					name := "key-" + key + ".conf"
					conf := "ClusterName=x\nSlurmctldHost=localhost\n" + key + "=1\n"
					if err := os.WriteFile(filepath.Join(o.dir, name), []byte(conf), 0o644); err != nil {
						t.Fatal(err)
					}
					_, errOut, _ := o.runConf(filepath.Join(o.confDir, name), "show", "hostnames", "a1")
					refused := strings.Contains(errOut, "Parsing error at unrecognized key: "+key)
					m, ok := k.marks[strings.ToLower(key)]
					if want := !ok || m[col] == '-'; refused != want {
						t.Errorf("scontrol %s refused %s=: %v, the table says %v:\n%s", o.version, key, refused, want, errOut)
					}
				})
			}
		})
	}
}
