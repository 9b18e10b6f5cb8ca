package slurm

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var errTooLarge = errors.New("file too large")

func TestFindConf(t *testing.T) {
	tests := []struct {
		name      string
		search    ConfSearch
		env       string
		exist     []string
		refused   map[string]error // present but unusable
		want      Candidate
		wantErr   []string
		wantNamed bool
	}{
		{name: "explicit", search: ConfSearch{Explicit: "/x/slurm.conf", ExplicitFrom: "--slurm-conf"}, exist: []string{"/x/slurm.conf", DefaultSlurmConfPath},
			want: Candidate{"/x/slurm.conf", "--slurm-conf"}},
		{name: "explicit missing is an error, not a reason to look elsewhere", search: ConfSearch{Explicit: "/x/slurm.conf", ExplicitFrom: "--slurm-conf"}, exist: []string{DefaultSlurmConfPath},
			wantErr: []string{"--slurm-conf /x/slurm.conf does not exist"}, wantNamed: true},
		{name: "SLURM_CONF", env: "/y/slurm.conf", exist: []string{"/y/slurm.conf", ConfiglessConfPath}, want: Candidate{"/y/slurm.conf", "SLURM_CONF"}},
		{name: "SLURM_CONF missing is an error", env: "/y/slurm.conf", exist: []string{DefaultSlurmConfPath},
			wantErr: []string{"SLURM_CONF=/y/slurm.conf does not exist"}, wantNamed: true},
		{name: "slurmd -f before the defaults", search: ConfSearch{Daemon: "/srv/slurm.conf", DaemonFrom: "slurmd -f, pid 7"}, exist: []string{"/srv/slurm.conf", DefaultSlurmConfPath},
			want: Candidate{"/srv/slurm.conf", "slurmd -f, pid 7"}},
		{name: "the installed Slurm's default before the packaged one",
			search: ConfSearch{Installed: []Candidate{{"/usr/local/etc/slurm.conf", "default of /usr/local/sbin/slurmd"}}},
			exist:  []string{"/usr/local/etc/slurm.conf", DefaultSlurmConfPath, ConfiglessConfPath},
			want:   Candidate{"/usr/local/etc/slurm.conf", "default of /usr/local/sbin/slurmd"}},
		{name: "default before the configless cache, as Slurm's clients look", exist: []string{ConfiglessConfPath, ConfiglessSpoolConfPath, DefaultSlurmConfPath},
			want: Candidate{DefaultSlurmConfPath, "packaged default"}},
		{name: "configless cache", exist: []string{ConfiglessConfPath, ConfiglessSpoolConfPath}, want: Candidate{ConfiglessConfPath, "configless cache"}},
		{name: "older configless cache", exist: []string{ConfiglessSpoolConfPath}, want: Candidate{ConfiglessSpoolConfPath, "configless cache of Slurm 20.02 to 21.05"}},
		{name: "a source build's place last", exist: []string{"/opt/slurm/etc/slurm.conf"}, want: Candidate{"/opt/slurm/etc/slurm.conf", "well-known place of a source build"}},
		{name: "a file that is there but too large ends the search with what it is",
			exist: []string{ConfiglessConfPath}, refused: map[string]error{DefaultSlurmConfPath: errTooLarge},
			wantErr: []string{DefaultSlurmConfPath + " (packaged default) cannot be used: file too large"}},
		{name: "nothing lists every place", wantErr: []string{ConfiglessConfPath, ConfiglessSpoolConfPath, DefaultSlurmConfPath, "/usr/local/etc/slurm.conf", "SLURM_CONF is not set"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.search
			s.Getenv = func(k string) string {
				if k == "SLURM_CONF" {
					return tc.env
				}
				return ""
			}
			s.Stat = func(p string) error {
				if err := tc.refused[p]; err != nil {
					return err
				}
				if sliceHas(tc.exist, p) {
					return nil
				}
				return fmt.Errorf("read %s: %w", p, fs.ErrNotExist)
			}
			got, err := FindConf(s)
			if len(tc.wantErr) > 0 {
				var fe *FindConfError
				if !errors.As(err, &fe) {
					t.Fatalf("FindConf = %+v, %v; want a *FindConfError", got, err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				if fe.Named("--slurm-conf") != tc.wantNamed {
					t.Errorf("Named = %v, want %v", fe.Named("--slurm-conf"), tc.wantNamed)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("FindConf = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestInstalledConfPaths(t *testing.T) {
	tests := []struct {
		bin  string
		want []string
	}{
		{"/usr/sbin/slurmd", []string{DefaultSlurmConfPath}},
		{"/usr/bin/scontrol", []string{DefaultSlurmConfPath}},
		{"/usr/local/sbin/slurmd", []string{"/usr/local/etc/slurm.conf"}},
		{"/opt/slurm/sbin/slurmd", []string{"/opt/slurm/etc/slurm.conf"}},
		{"/opt/slurm/23.11.4/bin/scontrol", []string{"/opt/slurm/23.11.4/etc/slurm.conf"}},
		{"/cm/shared/apps/slurm/current/bin/scontrol", []string{"/cm/shared/apps/slurm/current/etc/slurm.conf"}},
		{"/home/x/slurmd", nil},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, InstalledConfPaths(tc.bin)); diff != "" {
			t.Errorf("InstalledConfPaths(%q) (-want +got):\n%s", tc.bin, diff)
		}
	}
}

func TestFindSlurmConf(t *testing.T) {
	none := func(string) string { return "" }
	if _, err := FindSlurmConf("/x/slurm.conf", none, func(string) bool { return false }); err == nil || !strings.Contains(err.Error(), "/x/slurm.conf does not exist") {
		t.Errorf("explicit missing: %v", err)
	}
	if p, err := FindSlurmConf("", none, func(p string) bool { return p == ConfiglessConfPath }); err != nil || p != ConfiglessConfPath {
		t.Errorf("configless: %q, %v", p, err)
	}
}

func ExampleFindSlurmConf() {
	// On a configless node slurmd keeps the fetched slurm.conf in /run/slurm/conf.
	present := map[string]bool{ConfiglessConfPath: true}
	path, err := FindSlurmConf("", func(string) string { return "" }, func(p string) bool { return present[p] })
	fmt.Println(path, err)
	_, err = FindSlurmConf("", func(string) string { return "" }, func(string) bool { return false })
	fmt.Println(err)
	// Output:
	// /run/slurm/conf/slurm.conf <nil>
	// find slurm.conf: no file given, SLURM_CONF is not set, and none of /etc/slurm/slurm.conf, /run/slurm/conf/slurm.conf, /var/spool/slurmd/conf-cache/slurm.conf, /usr/local/etc/slurm.conf, /opt/slurm/etc/slurm.conf, /etc/slurm-llnl/slurm.conf exists: name the file (--slurm-conf) or set SLURM_CONF
}
