package drain

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestActionsListsEveryAction holds Actions to the Action constants of this package, so
// that a new action also gets its metrics series.
func TestActionsListsEveryAction(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []Action
	for _, p := range pkgs {
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				vs, ok := n.(*ast.ValueSpec)
				if !ok {
					return true
				}
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Action" {
					for _, v := range vs.Values {
						if lit, ok := v.(*ast.BasicLit); ok {
							s, _ := strconv.Unquote(lit.Value)
							consts = append(consts, Action(s))
						}
					}
				}
				return true
			})
		}
	}
	if len(consts) == 0 {
		t.Fatal("no Action constants found")
	}
	got := Actions()
	slices.Sort(got)
	slices.Sort(consts)
	if !slices.Equal(got, consts) {
		t.Errorf("Actions() = %v, constants %v", got, consts)
	}
}
