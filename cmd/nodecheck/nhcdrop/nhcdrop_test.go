package nhcdrop

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
)

func writeConf(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nhc.conf")
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func noHostname() (string, error) { return "", errors.New("no host name here") }

// TestAdjust: the lines for this host set the generic checks over nodecheck.toml; -t only
// shortens the budget; MARK_OFFLINE=0 turns drain, resume and repair off.
func TestAdjust(t *testing.T) {
	conf := writeConf(t, "* || check_fs_mount_rw -f /scratch\n"+
		"gpu* || check_ps_service -u root -S sshd\n"+
		"login* || check_ps_service -u root -S nscd\n"+
		"login* || export MARK_OFFLINE=0\n", 0o644)
	for _, tc := range []struct {
		args      []string
		health    time.Duration
		drain     bool
		processes []string
		mounts    []string
		logFile   string
		logLevel  string
	}{
		{[]string{"-m", "gpu01"}, 50 * time.Second, true, []string{"sshd root"}, []string{"/scratch rw"}, "", "info"},
		{[]string{"-m", "login1", "-t", "20", "-l", "/var/log/nhc.log", "-d"}, 20 * time.Second, false, []string{"nscd root"}, []string{"/scratch rw"}, "/var/log/nhc.log", "debug"},
		{[]string{"-m", "gpu01", "TIMEOUT=300"}, 50 * time.Second, true, []string{"sshd root"}, []string{"/scratch rw"}, "", "info"},
	} {
		p, err := Load(context.Background(), append([]string{"-c", conf}, tc.args...), Host{Hostname: noHostname, SysconfigDir: t.TempDir()})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		cfg, err := p.Adjust(config.Default(checks.Schema()))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if cfg.Budget.Health != tc.health || cfg.Drain.Enabled != tc.drain || cfg.Drain.Resume != tc.drain || cfg.Log.File != tc.logFile || cfg.Log.Level != tc.logLevel {
			t.Errorf("%v: budget %v drain %v resume %v log %q %q", tc.args, cfg.Budget.Health, cfg.Drain.Enabled, cfg.Drain.Resume, cfg.Log.File, cfg.Log.Level)
		}
		processes, mounts := stringsKey(t, cfg, "services", "processes"), stringsKey(t, cfg, "fs_mounts", "mounts")
		if !reflect.DeepEqual(processes, tc.processes) || !reflect.DeepEqual(mounts, tc.mounts) {
			t.Errorf("%v: processes %q mounts %q", tc.args, processes, mounts)
		}
	}
}

// stringsKey is the []string key of a check's section, read through the encoded config.
func stringsKey(t *testing.T, cfg *config.Config, sec, key string) []string {
	t.Helper()
	var b strings.Builder
	if err := cfg.Encode(&b); err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "[") {
			in = line == "[checks."+sec+"]"
			continue
		}
		if k, v, ok := strings.Cut(line, " = "); in && ok && k == key {
			v = strings.Trim(v, "[]")
			var out []string
			for _, f := range strings.Split(v, ", ") {
				if f != "" {
					out = append(out, strings.Trim(f, `"`))
				}
			}
			return out
		}
	}
	t.Fatalf("no %s.%s in\n%s", sec, key, b.String())
	return nil
}

// TestLoadRefuses: an nhc.conf others can write is refused (it says what nodecheck checks as
// root), as is a host name that cannot be had.
func TestLoadRefuses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the ownership rule is root's")
	}
	conf := writeConf(t, "* || check_fs_mount_rw -f /\n", 0o666)
	if _, err := Load(context.Background(), []string{"-c", conf, "-m", "n1"}, Host{Hostname: noHostname, SysconfigDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "chmod go-w") {
		t.Errorf("a world-writable nhc.conf: %v", err)
	}
	ok := writeConf(t, "* || check_fs_mount_rw -f /\n", 0o644)
	if _, err := Load(context.Background(), []string{"-c", ok}, Host{Hostname: noHostname, SysconfigDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "give -m HOST") {
		t.Errorf("no host name: %v", err)
	}
}

// TestNotRun: the check that names the lines not run is an error while there is one, and
// names each with its file and line.
func TestNotRun(t *testing.T) {
	conf := writeConf(t, "* || check_fs_mount_rw -f /\n* || check_net_ping -I eth0 10.0.0.1\n@ng@ || check_fs_mount_rw -f /x\n", 0o644)
	p, err := Load(context.Background(), []string{"-c", conf, "-m", "n1"}, Host{Hostname: noHostname, SysconfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Check().Run(context.Background(), nil)
	if res.Status != checks.StatusError || len(res.Details) != 2 ||
		!strings.HasSuffix(res.Summary, conf+":2, "+conf+":3") || !strings.Contains(res.Details[1].Message, "external matcher") {
		t.Errorf("%+v", res)
	}
}

// TestAdjustAuthUsers: NHC_AUTH_USERS replaces NHC's default users ahead of the line's own -n
// and -u, and MAX_SYS_UID sets the system accounts, wherever NHC reads them from.
func TestAdjustAuthUsers(t *testing.T) {
	conf := writeConf(t, "* || check_ps_unauth_users -n svc die\n* || export MAX_SYS_UID=499\n", 0o644)
	p, err := Load(context.Background(), []string{"-c", conf, "-m", "n1", "NHC_AUTH_USERS=root admin"}, Host{Hostname: noHostname, SysconfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := p.Adjust(config.Default(checks.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	if got := stringsKey(t, cfg, "stray_processes", "allow_users"); strings.Join(got, ",") != "root,admin,svc" {
		t.Errorf("allow_users %q", got)
	}
	var b strings.Builder
	if err := cfg.Encode(&b); err != nil || !strings.Contains(b.String(), "max_system_uid = 499") {
		t.Errorf("max_system_uid not 499 (%v)", err)
	}
}

// TestKeepValid: a line the translation takes but a check's own rules refuse (a fudge over
// 100%) is not run, named with why, and the other lines still are: one such line leaves the
// run undecided instead of stopping it.
func TestKeepValid(t *testing.T) {
	conf := writeConf(t, "* || check_hw_physmem 1kb 1gb 200%\n* || check_fs_mount_rw -f /\n", 0o644)
	p, err := Load(context.Background(), []string{"-c", conf, "-m", "n1"}, Host{Hostname: noHostname, SysconfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Translation.Skipped) != 1 || p.Translation.Skipped[0].Line.Num != 1 || !strings.Contains(p.Translation.Skipped[0].Why, "fudge") {
		t.Errorf("skipped %+v", p.Translation.Skipped)
	}
	if _, err := p.Adjust(config.Default(checks.Schema())); err != nil {
		t.Errorf("the rest does not apply: %v", err)
	}
	if got := stringsKey(t, mustAdjust(t, p), "fs_mounts", "mounts"); strings.Join(got, ",") != "/ rw" {
		t.Errorf("mounts %q", got)
	}
}

func mustAdjust(t *testing.T, p Plan) *config.Config {
	t.Helper()
	cfg, err := p.Adjust(config.Default(checks.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
