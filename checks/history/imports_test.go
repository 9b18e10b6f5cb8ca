package history

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNothingFromTheModule keeps the package a leaf: checks, checks/node and the CLI
// may import it, it imports none of them (nor config or drain), only the leaf config/files.
func TestImportsNothingFromTheModule(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		pf, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pf.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "github.com/nodecheck/nodecheck/config/files" {
				continue // the leaf that opens the state directory (statedir.go)
			}
			if strings.HasPrefix(p, "github.com/nodecheck/nodecheck") || strings.Contains(p, ".") {
				t.Errorf("%s imports %s: the history package imports only the standard library and config/files", f, p)
			}
		}
	}
}
