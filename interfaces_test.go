package agentmem_test

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxInterfaceMethods bounds the exported interfaces of the module: a
// larger one is several capabilities in one, which every implementation
// must provide together and every wrapper must forward.
const maxInterfaceMethods = 8

// TestExportedInterfacesAreSmall checks that no exported interface of
// the module's production code (test files and internal packages left
// out) has more than maxInterfaceMethods methods, counting those of the
// interfaces it embeds.
func TestExportedInterfacesAreSmall(t *testing.T) {
	sizes, err := exportedInterfaceSizes(".", "github.com/agentmem/agentmem")
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) == 0 {
		t.Fatal("found no exported interfaces: is the test running in the module's root?")
	}
	largest := slices.MaxFunc(sizes, func(a, b interfaceSize) int { return a.methods - b.methods })
	t.Logf("the largest exported interface is %s, with %d methods", largest.name, largest.methods)
	for _, s := range sizes {
		if s.methods > maxInterfaceMethods {
			t.Errorf("%s has %d methods, more than %d: split it into capabilities", s.name, s.methods, maxInterfaceMethods)
		}
	}
}

// The count includes embedded interfaces: an interface of nine methods,
// four of them embedded from another package of the module and one from
// the standard library, is found too large; interfaces of internal
// packages and test files are not looked at.
func TestExportedInterfaceSizesCountEmbedded(t *testing.T) {
	root := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", `package a
type Four interface { A(); B(); C(); D() }
type five interface { Four; E() }
`)
	write("b/b.go", `package b
import (
	"io"
	x "example.com/m/a"
)
// Nine is Four of a, io.Closer and four of its own.
type Nine interface {
	x.Four
	io.Closer
	F(); G()
	H()
	I()
}
type small interface{ Nine }
type Number interface{ ~int | ~float64 }
`)
	write("b/b_test.go", `package b
type Big interface { A(); B(); C(); D(); E(); F(); G(); H(); I() }
`)
	write("internal/c/c.go", `package c
type Big interface { A(); B(); C(); D(); E(); F(); G(); H(); I() }
`)
	sizes, err := exportedInterfaceSizes(root, "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, s := range sizes {
		got[s.name] = s.methods
	}
	want := map[string]int{"example.com/m/a.Four": 4, "example.com/m/b.Nine": 9, "example.com/m/b.Number": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sizes = %v, want %v", got, want)
	}
	if got["example.com/m/b.Nine"] <= maxInterfaceMethods {
		t.Fatalf("Nine is within the bound of %d: the fixture no longer tests it", maxInterfaceMethods)
	}
}

// interfaceSize is an exported interface and its number of methods.
type interfaceSize struct {
	name    string // import path and name
	methods int
}

// exportedInterfaceSizes parses the non-test Go files of the module at
// root, whose path is modPath, outside internal and testdata
// directories, and returns the size of every exported interface.
// Embedded interfaces of the module are resolved in the parsed files,
// those of other modules (the standard library) by type-checking them.
func exportedInterfaceSizes(root, modPath string) ([]interfaceSize, error) {
	type pkgInfo struct {
		types   map[string]*ast.InterfaceType
		imports map[*ast.InterfaceType]map[string]string // the file's imports: name to path
	}
	pkgs := map[string]*pkgInfo{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "internal" || name == "testdata" || name == "vendor" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		importPath := modPath
		if rel != "." {
			importPath = path.Join(modPath, filepath.ToSlash(rel))
		}
		imports := map[string]string{}
		for _, spec := range f.Imports {
			ip, _ := strconv.Unquote(spec.Path.Value)
			local := path.Base(ip)
			if spec.Name != nil {
				local = spec.Name.Name
			}
			imports[local] = ip
		}
		pi := pkgs[importPath]
		if pi == nil {
			pi = &pkgInfo{types: map[string]*ast.InterfaceType{}, imports: map[*ast.InterfaceType]map[string]string{}}
			pkgs[importPath] = pi
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					pi.types[ts.Name.Name] = it
					pi.imports[it] = imports
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	std := importer.ForCompiler(fset, "source", nil)
	// methodsOf adds to set the methods of the interface name of package
	// pkgPath.
	var methodsOf func(pkgPath, name string, set map[string]bool) error
	var methodsOfType func(pkgPath string, it *ast.InterfaceType, set map[string]bool) error
	methodsOf = func(pkgPath, name string, set map[string]bool) error {
		if pi := pkgs[pkgPath]; pi != nil {
			it := pi.types[name]
			if it == nil {
				return fmt.Errorf("%s.%s: no such interface", pkgPath, name)
			}
			return methodsOfType(pkgPath, it, set)
		}
		if pkgPath == "" && name == "error" {
			set["Error"] = true
			return nil
		}
		pkg, err := std.Import(pkgPath)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", pkgPath, name, err)
		}
		obj := pkg.Scope().Lookup(name)
		if obj == nil {
			return fmt.Errorf("%s.%s: no such type", pkgPath, name)
		}
		iface, ok := obj.Type().Underlying().(*types.Interface)
		if !ok {
			return fmt.Errorf("%s.%s: not an interface", pkgPath, name)
		}
		for m := range iface.Methods() {
			set[m.Name()] = true
		}
		return nil
	}
	methodsOfType = func(pkgPath string, it *ast.InterfaceType, set map[string]bool) error {
		for _, field := range it.Methods.List {
			if _, ok := field.Type.(*ast.FuncType); ok {
				for _, n := range field.Names {
					set[n.Name] = true
				}
				continue
			}
			expr := field.Type
			if ix, ok := expr.(*ast.IndexExpr); ok { // an instantiated generic interface
				expr = ix.X
			} else if ix, ok := expr.(*ast.IndexListExpr); ok {
				expr = ix.X
			}
			var err error
			switch e := expr.(type) {
			case *ast.Ident:
				if e.Name == "error" || e.Name == "comparable" || e.Name == "any" {
					if e.Name == "error" {
						err = methodsOf("", "error", set)
					}
					break
				}
				err = methodsOf(pkgPath, e.Name, set)
			case *ast.SelectorExpr:
				pkgName, ok := e.X.(*ast.Ident)
				if !ok {
					return fmt.Errorf("%s: cannot resolve an embedded %T", pkgPath, e.X)
				}
				imp, ok := pkgs[pkgPath].imports[it][pkgName.Name]
				if !ok {
					return fmt.Errorf("%s: no import named %s", pkgPath, pkgName.Name)
				}
				err = methodsOf(imp, e.Sel.Name, set)
			default:
				// A type constraint's union or ~T: no methods.
			}
			if err != nil {
				return err
			}
		}
		return nil
	}

	var out []interfaceSize
	for pkgPath, pi := range pkgs {
		for name, it := range pi.types {
			if !ast.IsExported(name) {
				continue
			}
			set := map[string]bool{}
			if err := methodsOfType(pkgPath, it, set); err != nil {
				return nil, err
			}
			out = append(out, interfaceSize{name: pkgPath + "." + name, methods: len(set)})
		}
	}
	slices.SortFunc(out, func(a, b interfaceSize) int { return strings.Compare(a.name, b.name) })
	return out, nil
}
