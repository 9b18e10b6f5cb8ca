package checks

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// reservedFaults are rows no check emits yet.
var reservedFaults []fault

// TestRemedyTable holds the table the registry assembles to its rules: one row per fault
// constant, a known remedy, a failure and a source in words; a check's own faults are named
// after it; a check declares only shared faults as shared; every fault is given by a judge
// somewhere (but the reserved ones); and a check whose code can give a shared fault declares
// it, so the table names it among the checks of that row.
func TestRemedyTable(t *testing.T) {
	seen := map[fault]bool{}
	for _, r := range remedyTable() {
		if seen[r.fault] {
			t.Errorf("fault %s has two rows", r.fault)
		}
		seen[r.fault] = true
		if !r.remedy.Valid() {
			t.Errorf("%s: remedy %q is none of %v", r.fault, r.remedy, Remedies())
		}
		if strings.TrimSpace(r.when) == "" || strings.TrimSpace(r.source) == "" {
			t.Errorf("%s: a row says when and why", r.fault)
		}
	}
	for _, c := range ordered {
		fs := c.Faults()
		for _, r := range fs.own {
			if !strings.HasPrefix(string(r.fault), c.ID()+"/") {
				t.Errorf("%s declares fault %s: a check's own faults are named %s/<what>", c.ID(), r.fault, c.ID())
			}
		}
		for i, f := range fs.shared {
			if !slices.ContainsFunc(sharedRows, func(r remedyRow) bool { return r.fault == f }) {
				t.Errorf("%s declares %s as shared: it is no row of sharedRows", c.ID(), f)
			}
			if slices.Contains(fs.shared[:i], f) {
				t.Errorf("%s declares %s twice", c.ID(), f)
			}
		}
	}
	src := parsePackage(t)
	consts := src.faultConsts()
	if len(consts) == 0 {
		t.Fatal("no fault constants found in the package")
	}
	used := src.faultUses()
	for name, f := range consts {
		if _, ok := rowOf(f); !ok {
			t.Errorf("fault constant %s (%q) has no row: declare it in its check's Faults", name, f)
		}
		if !used[name] && !slices.Contains(reservedFaults, f) {
			t.Errorf("fault constant %s is given by no judge: remove its row or use it", name)
		}
	}
	if len(consts) != len(remedyTable()) {
		t.Errorf("%d fault constants, %d rows", len(consts), len(remedyTable()))
	}
	for _, c := range ordered {
		declared := c.Faults().shared
		for _, r := range sharedRows {
			name := src.constOf(r.fault)
			if src.reaches(checkType(c), name) && !slices.Contains(declared, r.fault) {
				t.Errorf("%s can give the shared fault %s (%s) but does not declare it in its Faults", c.ID(), r.fault, name)
			}
		}
	}
}

// checkType is the name of c's type in this package: "ibPorts".
func checkType(c Check) string {
	s := fmt.Sprintf("%T", c)
	return s[strings.LastIndex(s, ".")+1:]
}

// pkgSource is the package's non-test files, parsed.
type pkgSource struct {
	files []*ast.File
	// funcs maps a function's name, or a method's "Type.name", to its declaration.
	funcs map[string]*ast.FuncDecl
}

func parsePackage(t *testing.T) pkgSource {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	src := pkgSource{funcs: map[string]*ast.FuncDecl{}}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		src.files = append(src.files, f)
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				src.funcs[funcKey(fd)] = fd
			}
		}
	}
	return src
}

// funcKey is "name" for a function, "Type.name" for a method.
func funcKey(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if st, ok := typ.(*ast.StarExpr); ok {
		typ = st.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// faultConsts are the package's constants of type fault, by name.
func (p pkgSource) faultConsts() map[string]fault {
	out := map[string]fault{}
	for _, f := range p.files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "fault" {
					continue
				}
				lit := vs.Values[0].(*ast.BasicLit)
				out[vs.Names[0].Name] = fault(strings.Trim(lit.Value, `"`))
			}
		}
	}
	return out
}

// constOf is the name of the constant whose value is f.
func (p pkgSource) constOf(f fault) string {
	for name, v := range p.faultConsts() {
		if v == f {
			return name
		}
	}
	return ""
}

// faultUses are the identifiers the package names outside the declarations of the faults
// and their rows (the const blocks, the checks' Faults methods, sharedRows and genericRows):
// what the judges give.
func (p pkgSource) faultUses() map[string]bool {
	used := map[string]bool{}
	mark := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				used[id.Name] = true
			}
			return true
		})
	}
	for _, f := range p.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || d.Name.Name != "Faults" {
					mark(d)
				}
			case *ast.GenDecl:
				if d.Tok == token.CONST {
					continue
				}
				for _, spec := range d.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok && (vs.Names[0].Name == "sharedRows" || vs.Names[0].Name == "genericRows") {
						continue
					}
					mark(spec)
				}
			}
		}
	}
	return used
}

// reaches reports whether the methods of the check type typ (but Faults) name the identifier
// target, directly or through the functions and methods they call. Calls are followed by
// name, each method call to every method of that name but those of other checks and the
// Faults methods: more than the program can call, never less.
func (p pkgSource) reaches(typ, target string) bool {
	checkTypes := map[string]bool{}
	for _, c := range ordered {
		checkTypes[checkType(c)] = true
	}
	byMethod := map[string][]string{}
	for key := range p.funcs {
		// Faults methods declare faults, they give none.
		if recv, name, ok := strings.Cut(key, "."); ok && name != "Faults" && (!checkTypes[recv] || recv == typ) {
			byMethod[name] = append(byMethod[name], key)
		}
	}
	var queue []string
	seen := map[string]bool{}
	push := func(key string) {
		if !seen[key] && p.funcs[key] != nil && !strings.HasSuffix(key, ".Faults") {
			seen[key] = true
			queue = append(queue, key)
		}
	}
	for key := range p.funcs {
		if strings.HasPrefix(key, typ+".") {
			push(key)
		}
	}
	found := false
	for len(queue) > 0 && !found {
		fd := p.funcs[queue[0]]
		queue = queue[1:]
		if fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				for _, key := range byMethod[n.Sel.Name] {
					push(key)
				}
			case *ast.Ident:
				if n.Name == target {
					found = true
				}
				push(n.Name)
			}
			return !found
		})
	}
	return found
}
