package config

import (
	"strings"
	"testing"
	"time"
)

func siteSchema() Schema {
	return Schema{{ID: SiteChecksID, Default: func() Section {
		return &testPlain{CheckCommon{Enabled: true, Timeout: 30 * time.Second, Modes: []string{"health", "manual"}}}
	}}}
}

func TestSiteCheckConfig(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		wantErr string // "": valid
	}{
		{"valid", `[[site_check]]
name = "scratch"
command = "/usr/local/sbin/check-scratch"
args = ["-q", "/scratch"]
modes = ["health"]
timeout = "30s"
user = "nobody"
remedy = "reboot"
`, ""},
		{"defaults", "[[site_check]]\nname = \"nhc\"\ncommand = \"/usr/sbin/nhc\"\n", ""},
		{"no name", "[[site_check]]\ncommand = \"/bin/true\"\n", "nodecheck.toml:1: site_check[0].name: missing"},
		{"bad name", "[[site_check]]\nname = \"Bad Name\"\ncommand = \"/bin/true\"\n", `site_check[0].name = "Bad Name": use lowercase`},
		{"duplicate", "[[site_check]]\nname = \"a\"\ncommand = \"/bin/true\"\n[[site_check]]\nname = \"a\"\ncommand = \"/bin/true\"\n", "site_check[1].name = \"a\": site_check[0] has that name too"},
		{"relative command", "[[site_check]]\nname = \"a\"\ncommand = \"check.sh\"\n", `site_check[0].command = "check.sh": give a clean absolute path`},
		{"no command", "[[site_check]]\nname = \"a\"\n", "site_check[0].command: missing"},
		{"unknown key", "[[site_check]]\nname = \"a\"\ncommand = \"/bin/true\"\nshell = true\n", `site_check[0].shell`},
		{"bad mode", "[[site_check]]\nname = \"a\"\ncommand = \"/bin/true\"\nmodes = [\"helth\"]\n", `"helth" is not a mode`},
		{"mode the section lacks", "[[site_check]]\nname = \"a\"\ncommand = \"/bin/true\"\nmodes = [\"prolog\"]\ntimeout = \"2s\"\n", `"prolog" is not in checks.site_checks.modes`},
		{"timeout over the section's", "[[site_check]]\nname = \"a\"\ncommand = \"/bin/true\"\ntimeout = \"31s\"\n", `timeout = "31s" is longer than checks.site_checks.timeout = "30s"`},
		{"timeout at the section's", "[[site_check]]\nname = \"a\"\ncommand = \"/bin/true\"\ntimeout = \"30s\"\n", ""},
		{"timeout over a mode's budget", "[budget]\nepilog = \"20s\"\n[[site_check]]\nname = \"a\"\ncommand = \"/bin/true\"\nmodes = [\"epilog\"]\ntimeout = \"25s\"\n", `longer than budget.epilog`},
		{"bad remedy", "[[site_check]]\nname = \"a\"\ncommand = \"/bin/true\"\nremedy = \"rebot\"\n", `did you mean "reboot"`},
		{"bad user", "[[site_check]]\nname = \"a\"\ncommand = \"/bin/true\"\nuser = \"a b\"\n", `user = "a b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tc.toml), "nodecheck.toml", siteSchema())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want none", err)
				}
				if len(cfg.SiteChecks) == 0 {
					t.Fatal("no site check decoded")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestSiteCheckEffective(t *testing.T) {
	c := Default(siteSchema())
	sc := SiteCheck{Name: "a"}
	if got := sc.EffectiveModes(c); strings.Join(got, ",") != "health,manual" {
		t.Errorf("modes %v, want the section's", got)
	}
	if sc.EffectiveTimeout(c) != 30*time.Second {
		t.Errorf("timeout %s, want the section's", sc.EffectiveTimeout(c))
	}
	sc.Modes, sc.Timeout = []string{"health"}, time.Second
	if got := sc.EffectiveModes(c); strings.Join(got, ",") != "health" || sc.EffectiveTimeout(c) != time.Second {
		t.Errorf("own modes and timeout not kept: %v %s", got, sc.EffectiveTimeout(c))
	}
}

// TestSiteCheckEncodeRoundTrip: config show writes the site checks, and reading its output
// back gives the same config.
func TestSiteCheckEncodeRoundTrip(t *testing.T) {
	in := "[[site_check]]\nname = \"nhc\"\ncommand = \"/usr/sbin/nhc\"\nargs = [\"-c\", \"/etc/nhc/rest.conf\"]\ntimeout = \"20s\"\nuser = \"root\"\n"
	cfg, err := ParseConfig([]byte(in), "in.toml", siteSchema())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := cfg.Encode(&b); err != nil {
		t.Fatal(err)
	}
	back, err := ParseConfig([]byte(b.String()), "out.toml", siteSchema())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(back.SiteChecks) != 1 || back.SiteChecks[0].Name != "nhc" || back.SiteChecks[0].Timeout != 20*time.Second ||
		strings.Join(back.SiteChecks[0].Args, " ") != "-c /etc/nhc/rest.conf" || back.SiteChecks[0].User != "root" {
		t.Errorf("read back %+v from:\n%s", back.SiteChecks, b.String())
	}
}
