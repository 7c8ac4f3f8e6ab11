package goreka_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocReferences checks that the README sections other files point to
// exist: references written `README "Section"` (application.example.yml's
// comments, docs/, deploy/) must name a heading of README.md that starts
// with that text, or a bold paragraph label (`**Section`) in it; markdown
// links `file.md#anchor` and `#anchor` must name a heading of that file
// (GitHub's anchor of it).
func TestDocReferences(t *testing.T) {
	files := []string{"application.example.yml", "README.md", "compat/README.md", "RELIABILITY.md", "BENCHMARKS.md"}
	for _, dir := range []string{"docs", "deploy"} {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && slices.Contains([]string{".md", ".yml", ".yaml", ".txt", ".tpl"}, filepath.Ext(p)) {
				files = append(files, p)
			}
			return nil
		})
	}
	named := regexp.MustCompile(`\b((?:compat/)?README)(?:\.md)? "([^"]+)"`)
	link := regexp.MustCompile(`\]\(([A-Za-z0-9_./-]*\.md)?#([A-Za-z0-9_-]+)\)`)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range named.FindAllStringSubmatch(line, -1) {
				doc := m[1] + ".md"
				if !hasSection(t, doc, m[2]) {
					t.Errorf("%s:%d: %s has no section or bold label %q", f, i+1, doc, m[2])
				}
				checked++
			}
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				doc := f
				if m[1] != "" {
					doc = filepath.Join(filepath.Dir(f), m[1])
				}
				if !hasAnchor(t, doc, m[2]) {
					t.Errorf("%s:%d: %s has no heading with anchor #%s", f, i+1, doc, m[2])
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no references found: the patterns are wrong")
	}
}

func headings(t *testing.T, doc string) []string {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatalf("referenced document: %v", err)
	}
	var hs []string
	fence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(line, "#") {
			hs = append(hs, strings.TrimSpace(strings.TrimLeft(line, "#")))
		}
	}
	return hs
}

func hasSection(t *testing.T, doc, name string) bool {
	for _, h := range headings(t, doc) {
		if strings.HasPrefix(h, name) {
			return true
		}
	}
	b, _ := os.ReadFile(doc)
	return strings.Contains(string(b), "**"+name)
}

// anchor is GitHub's: lower case, punctuation other than - and _ removed,
// spaces to -.
func anchor(h string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			sb.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func hasAnchor(t *testing.T, doc, a string) bool {
	for _, h := range headings(t, doc) {
		if anchor(h) == a {
			return true
		}
	}
	return false
}

// TestLayoutTable keeps README's Layout table in step with the tree: every
// folder a row names exists, every top-level folder has a row (or rows
// for its subfolders), and every Go package is a row or is named (in backquotes) in the
// table, so a new package cannot land undocumented.
func TestLayoutTable(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "\n## Layout\n")
	if start < 0 {
		t.Fatal("README.md has no Layout section")
	}
	section := s[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	rows := map[string]bool{}
	cell := regexp.MustCompile("^\\| `([^`]+)` \\|")
	for _, line := range strings.Split(section, "\n") {
		if m := cell.FindStringSubmatch(line); m != nil {
			rows[m[1]] = true
			if fi, err := os.Stat(m[1]); err != nil || !fi.IsDir() {
				t.Errorf("README Layout names %s, which is not a folder of the repository", m[1])
			}
		}
	}
	if len(rows) == 0 {
		t.Fatal("README Layout table has no rows")
	}
	tops := map[string]bool{}
	pkgs := map[string]bool{}
	_ = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() && p != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "target" || name == "out" || name == "bin") {
			if strings.Count(p, string(filepath.Separator)) == 0 && name == "testdata" {
				tops[p] = true
			}
			return filepath.SkipDir
		}
		if d.IsDir() && p != "." && !strings.Contains(p, string(filepath.Separator)) {
			tops[p] = true
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && filepath.Dir(p) != "." {
			pkgs[filepath.ToSlash(filepath.Dir(p))] = true
		}
		return nil
	})
	for top := range tops {
		covered := rows[top]
		for r := range rows {
			covered = covered || strings.HasPrefix(r, top+"/")
		}
		if !covered {
			t.Errorf("top-level folder %s has no row in README Layout", top)
		}
	}
	for p := range pkgs {
		if !rows[p] && !strings.Contains(section, "`"+p+"`") {
			t.Errorf("Go package %s is neither a row nor named in README Layout", p)
		}
	}
}
