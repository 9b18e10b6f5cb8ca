package main

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/cmd/nodecheck/run"
)

// startupForbidden are packages that must not be linked into the shipped binary: Go runs
// every linked package's initialisation in every process, prolog included, whatever the verb
// (docs/speed.md). Each entry says what it would cost and where its work lives instead.
// An entry names a package and everything under it.
var startupForbidden = []struct{ prefix, why string }{
	{"github.com/spf13/cobra/doc", "the man-page renderer: a gendocs build only (cmd/nodecheck/gendocs.go)"},
	{"github.com/cpuguy83/go-md2man", "the man-page renderer: a gendocs build only (cmd/nodecheck/gendocs.go)"},
	{"github.com/russross/blackfriday", "the markdown renderer behind the man pages (0.5 ms of init)"},
	{"gopkg.in/yaml.v3", "YAML: nothing at run time reads it"},
	{"go.yaml.in/yaml", "YAML: nothing at run time reads it"},
	{"github.com/jaypipes/ghw", "ghw links net/http, crypto/tls and YAML; node_inventory reads /proc and /sys itself (checks/node/inventory.go)"},
	{"github.com/jaypipes/pcidb", "pcidb downloads pci.ids over HTTP: net/http and crypto/tls"},
	{"github.com/prometheus", "the metrics are written by cmd/nodecheck/report's own writer; expfmt validates it in tests"},
	{"net/http", "HTTP/2 tables and TLS: nodecheck speaks no HTTP"},
	{"crypto/tls", "TLS: nodecheck speaks no TLS"},
	{"github.com/NVIDIA/go-dcgm", "DCGM is reached through dcgmi (checks/node/dcgm, docs/dcgm.md): go-dcgm's cgo binding would load libdcgm.so.4 into the process"},
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

// TestRunCountsFromProcessStart: the run's budget counts from the watchdog's start (the
// process's creation), not from when the run got going. A prolog whose process was created
// more than its 5 s budget ago has no time left for any check, so the run is undecided
// (exit 0 in a prolog) where the same replay started now is healthy.
func TestRunCountsFromProcessStart(t *testing.T) {
	dir := filepath.Join(repoRoot, "testdata", "snapshots", "h100-healthy")
	getenv := func(k string) string { return map[string]string{"SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}[k] }
	for _, tc := range []struct {
		name    string
		age     time.Duration
		verdict string
	}{
		{"started now", 0, `"verdict": "healthy"`},
		{"started 5s ago", 5 * time.Second, `"verdict": "undecided"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := run.NewWatchdog(time.Now().Add(-tc.age), io.Discard, func(int) {}, func() {})
			defer wd.Finish()
			var out, errb bytes.Buffer
			code := executeWith(context.Background(), wd, []string{"nodecheck", "run", "--snapshot", dir, "--format", "json"}, strings.NewReader(""), &out, &errb, getenv)
			if code != exitHealthy || !strings.Contains(out.String(), tc.verdict) {
				t.Errorf("exit %d, want 0 and %s; stdout:\n%s\nstderr:\n%s", code, tc.verdict, out.String(), errb.String())
			}
		})
	}
}

// TestNoRegexpAtInit: a package-level regexp.MustCompile runs in every process, prolog
// included, whether or not the run uses it (12 of them cost about 0.3 ms); the binary's
// packages compile theirs on first use (sync.OnceValue).
func TestNoRegexpAtInit(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	found := 0
	for _, dir := range []string{"checks", "config", "drain", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			found++
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				ast.Inspect(g, func(n ast.Node) bool {
					if _, ok := n.(*ast.FuncLit); ok {
						return false // compiled when the function runs
					}
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "regexp" && strings.HasPrefix(sel.Sel.Name, "MustCompile") {
							t.Errorf("%s: package-level regexp.%s runs at every start; wrap it in sync.OnceValue", fset.Position(sel.Pos()), sel.Sel.Name)
						}
					}
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < 50 {
		t.Fatalf("read %d Go files, want the module's", found)
	}
}

// TestDCGMNoStartupWork: the DCGM binding does nothing when the program starts, prolog included
// (the DCGM checks never run there): checks/node/dcgm has no init function, and its
// package-level variables hold only literals, or work wrapped in a function that runs on
// first use (sync.OnceValue), such as the compiling of the message patterns.
func TestDCGMNoStartupWork(t *testing.T) {
	dir := filepath.Join("..", "..", "checks", "node", "dcgm")
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	vars := 0
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
					t.Errorf("%s: func init runs at every start", fset.Position(fd.Pos()))
				}
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, spec := range g.Specs {
					for _, v := range spec.(*ast.ValueSpec).Values {
						vars++
						ast.Inspect(v, func(n ast.Node) bool {
							switch n := n.(type) {
							case *ast.FuncLit:
								return false // runs when called, not at start
							case *ast.CallExpr:
								if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
									if x, ok := sel.X.(*ast.Ident); ok && x.Name == "sync" && strings.HasPrefix(sel.Sel.Name, "OnceValue") {
										return true
									}
								}
								t.Errorf("%s: a package-level variable calls a function at start", fset.Position(n.Pos()))
							}
							return true
						})
					}
				}
			}
		}
	}
	if vars == 0 {
		t.Fatal("no package-level variable found in checks/node/dcgm: fix the test")
	}
}
