package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// layer is one property source after merging its entries by canonical key
// (the last entry of a key wins within a layer).
type layer struct {
	entries map[string]entry
}

func newLayer(d *document) *layer {
	l := &layer{entries: make(map[string]entry, len(d.entries))}
	for _, e := range d.entries {
		l.entries[canonicalKey(e.key)] = e
	}
	return l
}

// stack holds the layers highest precedence first, plus the raw environment
// for placeholders such as ${PORT}.
type stack struct {
	layers  []*layer
	environ map[string]string
	steps   int // placeholders expanded by the current resolved call
}

// maxPlaceholderSteps bounds the work of one value, so that
// a: ${b}${b}, b: ${c}${c}, ... cannot take exponential time.
const maxPlaceholderSteps = 10000

// lookup finds the winning value of a canonical key. A list written as
// key[0], key[1], ... in the highest layer that has it counts as one
// comma-separated value, as Spring converts lists to strings.
func (s *stack) lookup(canon string) (entry, bool) {
	for _, l := range s.layers {
		if e, ok := l.entries[canon]; ok {
			return e, true
		}
		if e, ok := l.entries[canon+"[0]"]; ok {
			vals := []string{e.value}
			for i := 1; ; i++ {
				n, ok := l.entries[canon+"["+strconv.Itoa(i)+"]"]
				if !ok {
					break
				}
				vals = append(vals, n.value)
			}
			e.key = strings.TrimSuffix(e.key, "[0]")
			e.value = strings.Join(vals, ",")
			return e, true
		}
	}
	return entry{}, false
}

// mapKeys lists the keys under a map property's canonical prefix across all
// layers, with list indexes stripped, sorted.
func (s *stack) mapKeys(prefix string) []string {
	seen := map[string]bool{}
	for _, l := range s.layers {
		for c := range l.entries {
			rest, ok := strings.CutPrefix(c, prefix+".")
			if !ok || rest == "" {
				continue
			}
			if i := strings.LastIndexByte(rest, '['); i > 0 && strings.HasSuffix(rest, "]") && isIndex(rest[i+1:len(rest)-1]) {
				rest = rest[:i]
			}
			seen[rest] = true
		}
	}
	return sortedKeys(seen)
}

// resolved returns the value of canon with placeholders resolved.
func (s *stack) resolved(canon string) (entry, bool, error) {
	e, ok := s.lookup(canon)
	if !ok {
		return e, false, nil
	}
	s.steps = 0
	v, err := s.resolve(e.value, []string{canon})
	if err != nil {
		return e, true, fmt.Errorf("%s=%q (%s): %w", e.key, e.value, e.source, err)
	}
	e.value = v
	return e, true, nil
}

// resolve replaces ${name} and ${name:default} in v. visiting holds the keys
// being resolved, to stop cycles.
func (s *stack) resolve(v string, visiting []string) (string, error) {
	if !strings.Contains(v, "${") {
		return v, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			b.WriteString(v)
			return b.String(), nil
		}
		b.WriteString(v[:i])
		end := matchingBrace(v, i+2)
		if end < 0 {
			return "", fmt.Errorf("unterminated placeholder in %q", v)
		}
		if s.steps++; s.steps > maxPlaceholderSteps {
			return "", fmt.Errorf("more than %d placeholder expansions", maxPlaceholderSteps)
		}
		inner := v[i+2 : end]
		name, def, hasDef := splitPlaceholder(inner)
		name, err := s.resolve(name, visiting)
		if err != nil {
			return "", err
		}
		val, err := s.placeholder(strings.TrimSpace(name), visiting)
		if err != nil {
			return "", err
		}
		if val == nil {
			if !hasDef {
				return "", fmt.Errorf("could not resolve placeholder ${%s}", name)
			}
			d, err := s.resolve(def, visiting)
			if err != nil {
				return "", err
			}
			val = &d
		}
		b.WriteString(*val)
		v = v[end+1:]
	}
}

// placeholder finds the value a placeholder name stands for: a property from
// any source, else an environment variable by exact name or in its
// upper-case underscore form. nil means not found.
func (s *stack) placeholder(name string, visiting []string) (*string, error) {
	canon := canonicalKey(name)
	if slices.Contains(visiting, canon) {
		return nil, fmt.Errorf("circular placeholder reference ${%s}", name)
	}
	if e, ok := s.lookup(canon); ok {
		r, err := s.resolve(e.value, append(visiting, canon))
		if err != nil {
			return nil, err
		}
		return &r, nil
	}
	if v, ok := s.environ[name]; ok {
		return &v, nil
	}
	up := strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(name))
	if v, ok := s.environ[up]; ok {
		return &v, nil
	}
	// goreka's own defaults, so ${spring.application.name}:${server.port}
	// works without setting either.
	for _, p := range properties {
		if p.dynamic == "" && canonicalKey(p.name) == canon {
			v := p.def
			return &v, nil
		}
	}
	return nil, nil
}

// matchingBrace returns the index of the "}" closing a placeholder whose
// name starts at from, allowing nested ${...}.
func matchingBrace(v string, from int) int {
	depth := 0
	for i := from; i < len(v); i++ {
		switch {
		case strings.HasPrefix(v[i:], "${"):
			depth++
			i++
		case v[i] == '}':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

// splitPlaceholder splits "name:default" at the first ":" outside a nested
// placeholder.
func splitPlaceholder(s string) (name, def string, ok bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "${"):
			depth++
			i++
		case s[i] == '}':
			depth--
		case s[i] == ':' && depth == 0:
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// commandLine turns --name=value arguments into a document. A bare --name
// means "true". Arguments that are not options are returned as warnings:
// Spring ignores them, but a single-dash -server.port=1 is a likely typo.
func commandLine(args []string) (*document, []string, error) {
	d := &document{source: "command line"}
	var warns []string
	var errs []error
	for _, a := range args {
		opt, ok := strings.CutPrefix(a, "--")
		if !ok {
			warns = append(warns, fmt.Sprintf("argument %q (command line): not an option of the form --name=value; ignored", a))
			continue
		}
		name, value, hasValue := strings.Cut(opt, "=")
		if strings.TrimSpace(name) == "" {
			errs = append(errs, fmt.Errorf("argument %q (command line): empty property name", a))
			continue
		}
		if !hasValue {
			value = "true"
		}
		d.add(name, value)
	}
	return d, warns, errors.Join(errs...)
}

// environment splits environ ("K=V") into the property document (only
// variables with a known prefix) and a map of every variable.
func environment(environ []string) (*document, map[string]string) {
	all := make(map[string]string, len(environ))
	d := &document{}
	var names []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		all[k] = v
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if key, ok := envKey(k); ok {
			d.entries = append(d.entries, entry{key: key, value: all[k], source: "environment variable " + k})
		}
	}
	return d, all
}

// location is one place spring.config.location names.
type location struct {
	path     string // absolute
	shown    string // as the user wrote it, for messages
	optional bool
	dir      bool
}

// parseLocations splits a spring.config.location style list.
func parseLocations(list, workDir string) ([]location, []string, error) {
	var locs []location
	var warns []string
	var errs []error
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		l := location{shown: raw}
		p := raw
		if rest, ok := strings.CutPrefix(p, "optional:"); ok {
			l.optional, p = true, rest
		}
		if strings.HasPrefix(p, "classpath:") {
			warns = append(warns, fmt.Sprintf("config location %q: goreka has no classpath; skipped", raw))
			continue
		}
		p = strings.TrimPrefix(p, "file:")
		if p == "" {
			errs = append(errs, fmt.Errorf("config location %q: empty path", raw))
			continue
		}
		l.dir = strings.HasSuffix(p, "/") || strings.HasSuffix(p, string(filepath.Separator))
		if !filepath.IsAbs(p) {
			p = filepath.Join(workDir, p)
		}
		if !l.dir {
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				l.dir = true
			}
		}
		l.path = filepath.Clean(p)
		locs = append(locs, l)
	}
	return locs, warns, errors.Join(errs...)
}

// extensions in increasing precedence: .properties beats .yml beats .yaml
// within one location, as in Spring Boot.
var extensions = []string{".yaml", ".yml", ".properties"}

// readConfigFile parses one file. A missing file gives (nil, nil) when
// optional.
func readConfigFile(path, shown string, optional bool) ([]*document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading config file %s: %w", shown, err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".properties":
		return parseProperties(shown, data)
	case ".yml", ".yaml":
		return parseYAML(shown, data)
	default:
		return nil, fmt.Errorf("reading config file %s: unknown extension (want .yml, .yaml or .properties)", shown)
	}
}

// loadLocation reads the files of one location for the given profile
// ("" = the non-profile files). Directories are searched for
// {name}[-{profile}]{ext}; a file location also gets its profile variants
// (app.yml -> app-peer1.yml), as in Spring Boot.
func loadLocation(l location, names []string, profile, workDir string) ([]*document, error) {
	var docs []*document
	if l.dir {
		for _, n := range names {
			for _, ext := range extensions {
				base := n + ext
				if profile != "" {
					base = n + "-" + profile + ext
				}
				p := filepath.Join(l.path, base)
				ds, err := readConfigFile(p, shownPath(p, workDir), true)
				if err != nil {
					return nil, err
				}
				docs = append(docs, ds...)
			}
		}
		if profile == "" && !l.optional {
			if _, err := os.Stat(l.path); err != nil {
				return nil, fmt.Errorf("config location %s: %w", l.shown, err)
			}
		}
		return docs, nil
	}
	if profile == "" {
		return readConfigFile(l.path, l.shown, l.optional)
	}
	ext := filepath.Ext(l.path)
	p := strings.TrimSuffix(l.path, ext) + "-" + profile + ext
	return readConfigFile(p, shownPath(p, workDir), true)
}

func shownPath(p, workDir string) string {
	if rel, err := filepath.Rel(workDir, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// splitList splits a comma list, trimming entries and dropping empty ones.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
