package main

import (
	"os/exec"
	"strings"
	"testing"
)

// startupForbidden are packages that must not be linked into the shipped binary: Go runs
// every linked package's initialisation in every process, prolog included, whatever the verb
// (README "Speed"). Each entry says what it would cost and where its work lives instead.
// An entry names a package and everything under it.
var startupForbidden = []struct{ prefix, why string }{
	{"github.com/spf13/cobra/doc", "the man-page renderer: a gendocs build only (scripts/gendocs)"},
	{"github.com/cpuguy83/go-md2man", "the man-page renderer: a gendocs build only (scripts/gendocs)"},
	{"github.com/russross/blackfriday", "the markdown renderer behind the man pages (0.5 ms of init)"},
	{"gopkg.in/yaml.v3", "YAML: nothing at run time reads it"},
	{"go.yaml.in/yaml", "YAML: nothing at run time reads it"},
	{"github.com/jaypipes/ghw", "ghw links net/http, crypto/tls and YAML; node_inventory reads /proc and /sys itself (checks/node/inventory.go)"},
	{"github.com/jaypipes/pcidb", "pcidb downloads pci.ids over HTTP: net/http and crypto/tls"},
	{"github.com/prometheus", "the metrics are written by checks/report's own writer; expfmt validates it in tests"},
	{"net/http", "HTTP/2 tables and TLS: nodecheck speaks no HTTP"},
	{"crypto/tls", "TLS: nodecheck speaks no TLS"},
}

// TestStartupDeps lists the shipped binary's packages (go list -deps, default build tags)
// and fails on any of startupForbidden.
func TestStartupDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go is not on PATH: %v", err)
	}
	for _, cgo := range []string{"0", "1"} {
		cmd := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", ".")
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED="+cgo)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("CGO_ENABLED=%s go list -deps: %v", cgo, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 50 {
			t.Fatalf("CGO_ENABLED=%s go list -deps listed %d packages, want the binary's", cgo, len(deps))
		}
		for _, d := range deps {
			for _, f := range startupForbidden {
				if d == f.prefix || strings.HasPrefix(d, f.prefix+"/") {
					t.Errorf("CGO_ENABLED=%s: the binary links %s: %s", cgo, d, f.why)
				}
			}
		}
	}
}
