// Package goreka_test holds checks on the module as a whole. It has no
// non-test files, so nothing can import it.
package goreka_test

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// designDoc holds the import rules; the test reads them from there so that
// the document and the check cannot disagree.
const (
	designDoc     = "docs/DESIGN.md"
	designSection = "## Packages and who imports whom"
)

// rules is what designDoc allows: per package (relative to the module root,
// "registry", "server/metrics"), the module packages it may import.
type rules struct {
	allowed    map[string][]string // rows "none" and "`a`, `b`"
	any        map[string]bool     // rows "any"
	exceptions map[string][]string // temporary, listed below the table
	rowLine    map[string]int      // designDoc line of each row, for messages
	excLine    map[string]int      // designDoc line of each exception
}

// TestImportGraph checks every package of the module against the table of
// designDoc: each import of a module package by a non-test file must be
// allowed by the importer's row or by a temporary exception.
func TestImportGraph(t *testing.T) {
	mod := modulePath(t)
	r := readRules(t, designDoc)
	pkgs := modulePackages(t, mod)
	checkRules(t, r, pkgs)
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		imps := pkgs[p]
		if _, ok := r.rowLine[p]; !ok {
			t.Errorf("package %s has no row in the table of %s (%q); add one saying what it may import", p, designDoc, designSection)
			continue
		}
		for _, i := range imps {
			if r.any[p] || slices.Contains(r.allowed[p], i.path) || slices.Contains(r.exceptions[p], i.path) {
				continue
			}
			t.Errorf("%s: %s imports %s, which %s:%d does not allow", i.pos, p, i.path, designDoc, r.rowLine[p])
		}
	}
	for _, p := range slices.Sorted(maps.Keys(r.exceptions)) {
		for _, e := range r.exceptions[p] {
			if !slices.ContainsFunc(pkgs[p], func(i imp) bool { return i.path == e }) {
				t.Errorf("%s:%d: the temporary exception %s imports %s is no longer used; delete it", designDoc, r.excLine[p], p, e)
			}
		}
	}
}

// checkRules checks the table itself: every row and every name in it is a
// package of the module, and only cmd/... may import server.
func checkRules(t *testing.T, r rules, pkgs map[string][]imp) {
	t.Helper()
	exists := func(p string) bool { _, ok := pkgs[p]; return ok }
	check := func(lines map[string]int, names map[string][]string) {
		for _, p := range slices.Sorted(maps.Keys(lines)) {
			if !exists(p) {
				t.Errorf("%s:%d names package %s, which does not exist", designDoc, lines[p], p)
			}
			for _, n := range names[p] {
				if !exists(n) {
					t.Errorf("%s:%d allows %s to import %s, which does not exist", designDoc, lines[p], p, n)
				}
				if n == "server" && !strings.HasPrefix(p, "cmd/") {
					t.Errorf("%s:%d lets %s import server; only cmd/... may", designDoc, lines[p], p)
				}
			}
		}
	}
	check(r.rowLine, r.allowed)
	check(r.excLine, r.exceptions)
}

var (
	rowRe       = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|([^|]*)\\|")
	nameRe      = regexp.MustCompile("`([^`]+)`")
	exceptionRe = regexp.MustCompile("^- temporary exception: `([^`]+)` imports ((?:`[^`]+`(?:, )?)+)")
)

// readRules parses the "may import" table of designSection and the
// "- temporary exception:" lines after it.
func readRules(t *testing.T, file string) rules {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := rules{allowed: map[string][]string{}, any: map[string]bool{}, exceptions: map[string][]string{},
		rowLine: map[string]int{}, excLine: map[string]int{}}
	in, header := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case l == designSection:
			in = true
			continue
		case in && strings.HasPrefix(l, "## "):
			in = false
		}
		if !in {
			continue
		}
		if strings.HasPrefix(l, "| package | may import |") {
			header = true
			continue
		}
		if m := exceptionRe.FindStringSubmatch(l); m != nil {
			for _, nm := range nameRe.FindAllStringSubmatch(m[2], -1) {
				r.exceptions[m[1]] = append(r.exceptions[m[1]], nm[1])
			}
			if _, dup := r.excLine[m[1]]; dup {
				t.Errorf("%s:%d: second exception line for %s", file, n, m[1])
			}
			r.excLine[m[1]] = n
			continue
		}
		m := rowRe.FindStringSubmatch(l)
		if !header || m == nil {
			continue
		}
		p, cell := m[1], strings.TrimSpace(m[2])
		if _, dup := r.rowLine[p]; dup {
			t.Errorf("%s:%d: second row for %s", file, n, p)
		}
		r.rowLine[p] = n
		switch cell {
		case "any":
			r.any[p] = true
		case "none":
			r.allowed[p] = []string{}
		default:
			names := nameRe.FindAllStringSubmatch(cell, -1)
			if len(names) == 0 {
				t.Errorf("%s:%d: %q is not none, any or a list of `package` names", file, n, cell)
			}
			for _, nm := range names {
				r.allowed[p] = append(r.allowed[p], nm[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(r.rowLine) == 0 {
		t.Fatalf("%s: no table \"| package | may import | ...\" under %q", file, designSection)
	}
	return r
}

// imp is one import of a module package: the imported package relative to
// the module root and where the import is written.
type imp struct {
	path string
	pos  token.Position
}

// modulePackages returns every package of the module that has non-test Go
// files (the directories go list ./... walks: no testdata, no _ or .
// directories, no nested modules), each with its imports of module packages,
// read from the files' import clauses under every build tag.
func modulePackages(t *testing.T, mod string) map[string][]imp {
	t.Helper()
	pkgs := map[string][]imp{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); p != "." && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(p))
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if _, ok := pkgs[pkg]; !ok {
			pkgs[pkg] = nil
		}
		for _, is := range f.Imports {
			ip, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %v", fset.Position(is.Pos()), err)
			}
			if rel, ok := strings.CutPrefix(ip, mod+"/"); ok {
				pkgs[pkg] = append(pkgs[pkg], imp{path: rel, pos: fset.Position(is.Pos())})
			} else if ip == mod {
				pkgs[pkg] = append(pkgs[pkg], imp{path: ".", pos: fset.Position(is.Pos())})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatal("found no packages; the test must run from the module root")
	}
	return pkgs
}

// modulePath reads the module path from go.mod.
func modulePath(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return path.Clean(strings.Trim(strings.TrimSpace(m), `"`))
		}
	}
	t.Fatal("go.mod has no module line")
	return ""
}
