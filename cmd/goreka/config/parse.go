package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// entry is one property as a source wrote it.
type entry struct {
	key    string // the name as written
	value  string // the text, placeholders unresolved
	source string // where it came from, for messages
}

// document is one YAML document or properties section, or a whole
// non-file source (command line, environment).
type document struct {
	source  string
	entries []entry
	// onProfile is the profile expression of spring.config.activate.on-profile
	// (or legacy spring.profiles); hasProfile tells whether one was given.
	onProfile  string
	hasProfile bool
}

func (d *document) add(key, value string) {
	d.entries = append(d.entries, entry{key: key, value: value, source: d.source})
}

// parseYAML flattens every document of a YAML stream into dotted keys.
// Scalars keep their source text, so 0.85, 08 and true reach the binder as
// written. name labels the source in messages.
func parseYAML(name string, data []byte) ([]*document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*document
	for i := 1; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parsing YAML file %s: %w", name, err)
		}
		d := &document{source: name}
		if len(n.Content) == 0 {
			docs = append(docs, d)
			continue
		}
		root := n.Content[0]
		switch root.Kind {
		case yaml.MappingNode:
			if err := flattenYAML(d, "", root, 0); err != nil {
				return nil, fmt.Errorf("parsing YAML file %s: %w", name, err)
			}
		case yaml.ScalarNode:
			if root.Tag != "!!null" {
				return nil, fmt.Errorf("parsing YAML file %s: line %d: document %d is a scalar, not a map of properties", name, root.Line, i)
			}
		default:
			return nil, fmt.Errorf("parsing YAML file %s: line %d: document %d is a list, not a map of properties", name, root.Line, i)
		}
		docs = append(docs, d)
	}
	return labelDocuments(docs), nil
}

// labelDocuments names the documents of a multi-document file
// "file (document N)", keeps single ones plain, and pulls out the profile
// condition of each.
func labelDocuments(docs []*document) []*document {
	var out []*document
	for i, d := range docs {
		if len(docs) > 1 {
			d.source = fmt.Sprintf("%s (document %d)", d.source, i+1)
			for j := range d.entries {
				d.entries[j].source = d.source
			}
		}
		extractProfile(d)
		if len(d.entries) > 0 || d.hasProfile {
			out = append(out, d)
		}
	}
	return out
}

// extractProfile moves spring.config.activate.on-profile / spring.profiles
// (a string or a list) out of the entries into onProfile.
func extractProfile(d *document) {
	var kept []entry
	var parts []string
	for _, e := range d.entries {
		c := canonicalKey(e.key)
		base := c
		if i := strings.IndexByte(c, '['); i >= 0 {
			base = c[:i]
		}
		if base == "spring.config.activate.onprofile" || base == "spring.profiles" {
			d.hasProfile = true
			parts = append(parts, e.value)
			continue
		}
		kept = append(kept, e)
	}
	d.entries = kept
	d.onProfile = strings.Join(parts, ",")
}

const (
	maxYAMLDepth   = 64
	maxYAMLEntries = 100000 // stops alias bombs (a: &a [*b, *b, ...])
)

func flattenYAML(d *document, prefix string, n *yaml.Node, depth int) error {
	if depth > maxYAMLDepth {
		return fmt.Errorf("line %d: nested too deeply", n.Line)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return fmt.Errorf("line %d: unknown alias", n.Line)
		}
		return flattenYAML(d, prefix, n.Alias, depth+1)
	case yaml.MappingNode:
		if len(n.Content) == 0 && prefix != "" {
			d.add(prefix, "")
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a map key must be a plain string", k.Line)
			}
			if k.Value == "<<" { // merge key: the aliased map's entries land here
				if err := flattenYAML(d, prefix, v, depth+1); err != nil {
					return err
				}
				continue
			}
			key := k.Value
			if prefix != "" {
				key = prefix + "." + key
			}
			if err := flattenYAML(d, key, v, depth+1); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.add(prefix, "")
		}
		for i, c := range n.Content {
			if err := flattenYAML(d, fmt.Sprintf("%s[%d]", prefix, i), c, depth+1); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if prefix == "" {
			return fmt.Errorf("line %d: a value without a key", n.Line)
		}
		if len(d.entries) >= maxYAMLEntries {
			return fmt.Errorf("line %d: more than %d properties (alias expansion?)", n.Line, maxYAMLEntries)
		}
		v := n.Value
		if n.Tag == "!!null" && (v == "~" || v == "null" || v == "Null" || v == "NULL") {
			v = ""
		}
		d.add(prefix, v)
	}
	return nil
}

// parseProperties reads a Java .properties file: key=value, key: value or
// "key value"; # and ! comments; backslash line continuations; \uXXXX and
// \t \n \r \f escapes. A line "#---" or "!---" starts a new document, as in
// Spring Boot 2.4+.
func parseProperties(name string, data []byte) ([]*document, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("parsing properties file %s: not valid UTF-8", name)
	}
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n"), "\n")
	cur := &document{source: name}
	docs := []*document{cur}
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "#---" || line == "!---" {
			cur = &document{source: name}
			docs = append(docs, cur)
			continue
		}
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines: an odd number of trailing backslashes.
		for endsWithContinuation(line) {
			line = line[:len(line)-1]
			i++
			if i >= len(lines) {
				break
			}
			line += strings.TrimLeft(lines[i], " \t\f")
		}
		key, value, err := splitProperty(line)
		if err != nil {
			return nil, fmt.Errorf("parsing properties file %s: line %d: %w", name, lineNo, err)
		}
		cur.add(key, value)
	}
	return labelDocuments(docs), nil
}

func endsWithContinuation(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits one logical line into an unescaped key and value.
func splitProperty(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	rawKey, rest := line[:end], line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescapeProperties(rawKey)
	if err != nil {
		return "", "", err
	}
	value, err := unescapeProperties(rest)
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

func unescapeProperties(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\uXXXX escape %q", s[i-1:])
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uXXXX escape %q", s[i-1:i+5])
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// parseJSON flattens SPRING_APPLICATION_JSON. Numbers keep their text.
func parseJSON(name, data string) (*document, error) {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("parsing %s: text after the JSON object", name)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parsing %s: not a JSON object", name)
	}
	d := &document{source: name}
	flattenJSON(d, "", m)
	return d, nil
}

func flattenJSON(d *document, prefix string, v any) {
	switch t := v.(type) {
	case map[string]any:
		keys := sortedKeys(t)
		for _, k := range keys {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flattenJSON(d, key, t[k])
		}
	case []any:
		for i, c := range t {
			flattenJSON(d, fmt.Sprintf("%s[%d]", prefix, i), c)
		}
	case nil:
		d.add(prefix, "")
	case string:
		d.add(prefix, t)
	case json.Number:
		d.add(prefix, t.String())
	case bool:
		d.add(prefix, strconv.FormatBool(t))
	}
}
