package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports enforces the one-way data flow of DESIGN.md section 3 as a test: config knows
// nothing of checks; checks never call drain; drain never reads hardware; only the NVML
// adapter imports go-nvml (so everything else builds with CGO_ENABLED=0).
func TestImports(t *testing.T) {
	const mod = "github.com/nodecheck/nodecheck/"
	rules := []struct {
		pkgPrefix string // directory, relative to the module root
		forbidden string // import path prefix
		why       string
	}{
		{"config", mod + "checks", "config is read by checks, never the reverse"},
		{"config", mod + "drain", "config does not act on Slurm"},
		{"checks", mod + "drain", "checks never call scontrol; drain acts on results"},
		{"drain", mod + "checks/node", "drain never reads hardware"},
		{"", "github.com/NVIDIA/go-nvml", "only checks/node/nvml may import go-nvml"},
	}
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, r := range rules {
				if r.pkgPrefix != "" && !strings.HasPrefix(rel, r.pkgPrefix+"/") {
					continue
				}
				if r.pkgPrefix == "" && strings.HasPrefix(rel, "checks/node/nvml/") {
					continue
				}
				if strings.HasPrefix(p, r.forbidden) {
					t.Errorf("%s imports %s: %s", rel, p, r.why)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
