package server

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"testing"
)

// Java writes applications, instances and metadata entries in the iteration
// order of its hash maps (ConcurrentHashMap of the registry, the delta
// queue, HashMap metadata), which depends on hashes and on the history of
// each table; goreka writes them sorted. canonicalOrder sorts exactly these
// three kinds of siblings in a document, moving their bytes unchanged, so
// that everything else (field order, escaping, whitespace) is still compared
// byte for byte. Applications sort by name, instances by instanceId,
// metadata entries by key.
func canonicalOrder(b []byte) ([]byte, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return b, nil
	}
	if b[0] == '{' {
		p := jsonParser{b: b}
		v, err := p.value("")
		if err != nil {
			return nil, err
		}
		if p.i != len(b) {
			return nil, fmt.Errorf("json: trailing bytes at %d", p.i)
		}
		return v, nil
	}
	return xmlCanonical(b)
}

// jsonParser re-emits compact JSON (no whitespace between tokens, as both
// servers write it) with the sortable members reordered.
type jsonParser struct {
	b []byte
	i int
}

func (p *jsonParser) value(key string) ([]byte, error) {
	if p.i >= len(p.b) {
		return nil, fmt.Errorf("json: unexpected end")
	}
	switch p.b[p.i] {
	case '{':
		return p.object(key)
	case '[':
		return p.array(key)
	case '"':
		return p.str()
	default:
		start := p.i
		for p.i < len(p.b) && !bytes.ContainsRune([]byte(",]}"), rune(p.b[p.i])) {
			p.i++
		}
		return p.b[start:p.i], nil
	}
}

func (p *jsonParser) str() ([]byte, error) {
	start := p.i
	p.i++
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			return p.b[start:p.i], nil
		}
		p.i++
	}
	return nil, fmt.Errorf("json: unterminated string at %d", start)
}

type jsonMember struct {
	key, raw []byte // key as written (quoted); raw: "key":value
	sortKey  string
}

func (p *jsonParser) object(key string) ([]byte, error) {
	p.i++
	var ms []jsonMember
	for p.i < len(p.b) && p.b[p.i] != '}' {
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, fmt.Errorf("json: ':' expected at %d", p.i)
		}
		p.i++
		v, err := p.value(string(k[1 : len(k)-1]))
		if err != nil {
			return nil, err
		}
		raw := append(append(append([]byte{}, k...), ':'), v...)
		ms = append(ms, jsonMember{key: k, raw: raw, sortKey: string(k)})
		if p.i < len(p.b) && p.b[p.i] == ',' {
			p.i++
		}
	}
	p.i++
	if key == "metadata" {
		slices.SortStableFunc(ms, func(a, b jsonMember) int { return cmpString(a.sortKey, b.sortKey) })
	}
	out := []byte{'{'}
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.raw...)
	}
	return append(out, '}'), nil
}

func (p *jsonParser) array(key string) ([]byte, error) {
	p.i++
	var items [][]byte
	for p.i < len(p.b) && p.b[p.i] != ']' {
		v, err := p.value("")
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		if p.i < len(p.b) && p.b[p.i] == ',' {
			p.i++
		}
	}
	p.i++
	field := map[string]string{"application": `"name":`, "instance": `"instanceId":`}[key]
	if field != "" {
		slices.SortStableFunc(items, func(a, b []byte) int { return cmpString(jsonField(a, field), jsonField(b, field)) })
	}
	return append(append([]byte{'['}, bytes.Join(items, []byte{','})...), ']'), nil
}

// jsonField returns the first string after field in obj (enough for the
// name of an application and the instanceId of an instance, which come
// before any nested object).
func jsonField(obj []byte, field string) string {
	_, after, ok := bytes.Cut(obj, []byte(field))
	if !ok {
		return ""
	}
	s, _, _ := bytes.Cut(after[1:], []byte{'"'})
	return string(s)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// xmlNode is an element's byte spans: start tag [start, tagEnd), content,
// end tag [closeStart, end), and its child elements.
type xmlNode struct {
	name                           string
	start, tagEnd, closeStart, end int64
	children                       []*xmlNode
	text                           string // direct character data
}

func xmlCanonical(b []byte) ([]byte, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var stack []*xmlNode
	var root *xmlNode
	var last int64 // end of the previous token
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		off := d.InputOffset()
		switch t := tok.(type) {
		case xml.StartElement:
			n := &xmlNode{name: t.Name.Local, start: last, tagEnd: off}
			if len(stack) > 0 {
				parent := stack[len(stack)-1]
				parent.children = append(parent.children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) == 0 {
				return nil, fmt.Errorf("xml: unbalanced end tag at %d", off)
			}
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n.closeStart, n.end = last, off
			if len(stack) == 0 {
				root = n
			}
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
		last = off
	}
	if root == nil || len(stack) != 0 {
		return nil, fmt.Errorf("xml: not one complete root element")
	}
	out := append([]byte{}, b[:root.start]...)
	out = root.emit(b, out)
	return append(out, b[root.end:]...), nil
}

// sortKey is the key a child is sorted by among its siblings, or "" when
// its position is kept.
func (n *xmlNode) sortKey(parent string) string {
	switch {
	case parent == "applications" && n.name == "application":
		return "1" + n.childText("name")
	case parent == "application" && n.name == "instance":
		return "1" + n.childText("instanceId")
	case parent == "metadata":
		return "1" + n.name
	}
	return ""
}

func (n *xmlNode) childText(name string) string {
	for _, c := range n.children {
		if c.name == name {
			return c.text
		}
	}
	return ""
}

// emit appends n's bytes to out with the sortable children permuted among
// their own positions; the bytes between children stay where they were.
func (n *xmlNode) emit(b, out []byte) []byte {
	out = append(out, b[n.start:n.tagEnd]...)
	if len(n.children) == 0 {
		return append(out, b[n.tagEnd:n.end]...)
	}
	var slots []int
	var movable []*xmlNode
	for i, c := range n.children {
		if c.sortKey(n.name) != "" {
			slots = append(slots, i)
			movable = append(movable, c)
		}
	}
	slices.SortStableFunc(movable, func(x, y *xmlNode) int { return cmpString(x.sortKey(n.name), y.sortKey(n.name)) })
	placed := slices.Clone(n.children)
	for j, i := range slots {
		placed[i] = movable[j]
	}
	prev := n.tagEnd
	for i, c := range n.children {
		out = append(out, b[prev:c.start]...)
		out = placed[i].emit(b, out)
		prev = c.end
	}
	out = append(out, b[prev:n.closeStart]...)
	return append(out, b[n.closeStart:n.end]...)
}

func TestCanonicalOrder(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"applications":{"application":[{"name":"B","instance":[{"instanceId":"y","metadata":{"z":"1","a":"2"}},{"instanceId":"x"}]},{"name":"A","instance":[]}],"apps__hashcode":""}}`,
			`{"applications":{"application":[{"name":"A","instance":[]},{"name":"B","instance":[{"instanceId":"x"},{"instanceId":"y","metadata":{"a":"2","z":"1"}}]}],"apps__hashcode":""}}`},
		{"<applications>\n  <versions__delta>1</versions__delta>\n  <application>\n    <name>B</name>\n  </application>\n  <application>\n    <name>A</name>\n    <instance>\n      <instanceId>y</instanceId>\n      <metadata>\n        <z>1</z>\n        <a>&amp;</a>\n      </metadata>\n    </instance>\n    <instance>\n      <instanceId>x</instanceId>\n    </instance>\n  </application>\n</applications>",
			"<applications>\n  <versions__delta>1</versions__delta>\n  <application>\n    <name>A</name>\n    <instance>\n      <instanceId>x</instanceId>\n    </instance>\n    <instance>\n      <instanceId>y</instanceId>\n      <metadata>\n        <a>&amp;</a>\n        <z>1</z>\n      </metadata>\n    </instance>\n  </application>\n  <application>\n    <name>B</name>\n  </application>\n</applications>"},
		{`<applications><application><name>B</name></application><application><name>A</name></application><apps__hashcode></apps__hashcode></applications>`,
			`<applications><application><name>A</name></application><application><name>B</name></application><apps__hashcode></apps__hashcode></applications>`},
	}
	for _, tc := range tests {
		got, err := canonicalOrder([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("canonicalOrder(%s)\n = %s, %v\nwant %s", tc.in, got, err, tc.want)
		}
		again, _ := canonicalOrder([]byte(tc.want))
		if string(again) != tc.want {
			t.Errorf("sorted input changed: %s", again)
		}
	}
}
