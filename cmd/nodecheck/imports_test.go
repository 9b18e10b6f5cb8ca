package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestImports enforces the house's one-way data flow as a
// test: config and its leaves know nothing of checks or drain; Slurm's formats never import
// nodecheck.toml's package; the leaf packages import nothing from the module; checks never
// calls drain (the run does, cmd/nodecheck/run); drain never reads hardware; product programs
// never import build tooling; only the NVML adapter imports go-nvml (so everything else
// builds with CGO_ENABLED=0). Test files count too.
func TestImports(t *testing.T) {
	const mod = "github.com/nodecheck/nodecheck"
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	inModule := func(imp string) bool { return under(imp, mod) }
	rules := []struct {
		applies func(dir string) bool // package directory, relative to the module root
		example string                // a directory the rule must find, so that it cannot pass by finding nothing
		forbids func(imp string) bool
		why     string
	}{
		{func(d string) bool { return under(d, "config") }, "config",
			func(i string) bool { return under(i, mod+"/checks") || under(i, mod+"/drain") || under(i, mod+"/cmd") },
			"config is read by checks and drain, never the reverse"},
		{func(d string) bool { return under(d, "config/slurm") }, "config/slurm",
			func(i string) bool { return i == mod+"/config" },
			"Slurm's formats never import nodecheck.toml's package (config imports config/slurm)"},
		{func(d string) bool { return under(d, "config/text") }, "config/text",
			inModule, "config/text is a leaf: it imports nothing from the module"},
		{func(d string) bool { return under(d, "config/files") }, "config/files",
			inModule, "config/files is a leaf: it imports nothing from the module"},
		{func(d string) bool { return under(d, "checks") }, "checks/node",
			func(i string) bool { return under(i, mod+"/drain") || under(i, mod+"/cmd") },
			"checks never call scontrol; drain acts on results, in the run (cmd/nodecheck/run)"},
		{func(d string) bool { return under(d, "drain") }, "drain",
			func(i string) bool { return under(i, mod+"/checks") },
			"drain never reads hardware nor imports checks"},
		{func(d string) bool { return !under(d, "checks/node/nvml") }, "checks",
			func(i string) bool { return under(i, "github.com/NVIDIA/go-nvml") },
			"only checks/node/nvml may import go-nvml"},
	}

	imports := map[string]map[string]bool{} // package directory -> import paths
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		dir := path.Dir(filepath.ToSlash(rel))
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if imports[dir] == nil {
			imports[dir] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			imports[dir][ip] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs := make([]string, 0, len(imports))
	for d := range imports {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, r := range rules {
		if _, ok := imports[r.example]; !ok || !r.applies(r.example) {
			t.Errorf("rule %q: no Go files in %s, or the rule does not apply there: fix the rule", r.why, r.example)
		}
		for _, d := range dirs {
			if !r.applies(d) {
				continue
			}
			for imp := range imports[d] {
				if r.forbids(imp) {
					t.Errorf("%s imports %s: %s", d, imp, r.why)
				}
			}
		}
	}
}
