package config

import (
	"strings"
)

// mapProperties are the properties whose value is a map: everything after the
// prefix is a map key that keeps its text (Spring binds Map<String,String>
// keys verbatim from files and the command line).
var mapProperties = []string{
	"eureka.client.serviceurl",
	"eureka.client.availabilityzones",
	"eureka.instance.metadatamap",
	"eureka.server.remoteregionurlswithname",
	"eureka.server.remoteregionappwhitelist",
	"spring.ssl.bundle.jks",
	"spring.ssl.bundle.pem",
}

// envPrefixes are the environment variable prefixes that can hold properties;
// other variables are only seen by ${...} placeholders.
var envPrefixes = []string{"SERVER_", "SPRING_", "EUREKA_", "GOREKA_", "LOGGING_"}

// canonicalSegment returns the relaxed form of one name segment: lower case,
// dashes removed.
func canonicalSegment(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "-", ""))
}

// splitKey splits a property name into segments at dots and brackets:
// "a.b[0].c" -> ["a", "b", "[0]", "c"], "m[x.y]" -> ["m", "[x.y]"].
// A bracketed segment keeps its brackets so that indexes and map keys can be
// told apart from plain segments.
func splitKey(key string) []string {
	var segs []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			segs = append(segs, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '.':
			flush()
		case '[':
			flush()
			end := strings.IndexByte(key[i:], ']')
			if end < 0 {
				cur.WriteString(key[i:])
				i = len(key)
				continue
			}
			segs = append(segs, key[i:i+end+1])
			i += end
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return segs
}

// canonicalKey returns the form under which a property is stored and compared.
// Segments are lower-cased with dashes removed up to the prefix of a map
// property; the map key after it keeps its text (without brackets). Indexes
// stay as "[n]".
func canonicalKey(key string) string {
	segs := splitKey(strings.TrimSpace(key))
	var b strings.Builder
	for i, s := range segs {
		if strings.HasPrefix(s, "[") {
			inner := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
			if isIndex(inner) {
				b.WriteString("[" + inner + "]")
				continue
			}
			if isMapPrefix(b.String()) {
				return b.String() + "." + normalizeMapKey(b.String(), joinRaw(inner, segs[i+1:]))
			}
			s = inner
		}
		if isMapPrefix(b.String()) {
			return b.String() + "." + normalizeMapKey(b.String(), joinRaw(s, segs[i+1:]))
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(canonicalSegment(s))
	}
	return b.String()
}

// joinRaw joins the rest of a key after a map prefix back into one map key.
func joinRaw(first string, rest []string) string {
	var b strings.Builder
	b.WriteString(first)
	for _, s := range rest {
		if strings.HasPrefix(s, "[") {
			b.WriteString(s)
			continue
		}
		b.WriteByte('.')
		b.WriteString(s)
	}
	return b.String()
}

// normalizeMapKey maps the spellings goreka accepts for the default zone
// (default-zone, defaultzone from an environment variable) to defaultZone.
// Stock Spring only honours defaultZone (spring-cloud-netflix#3695).
func normalizeMapKey(prefix, key string) string {
	if prefix == "eureka.client.serviceurl" {
		base, idx := key, ""
		if i := strings.IndexByte(key, '['); i >= 0 {
			base, idx = key[:i], key[i:]
		}
		if canonicalSegment(base) == "defaultzone" {
			return defaultZone + idx
		}
	}
	return key
}

func isMapPrefix(canon string) bool {
	for _, p := range mapProperties {
		if canon == p {
			return true
		}
	}
	// A record's map field: goreka.staticinstances[N].metadata.
	for _, lp := range listProps {
		rest, ok := strings.CutPrefix(canon, lp.canon()+"[")
		if !ok {
			continue
		}
		idx, field, ok := strings.Cut(rest, "].")
		if !ok || !isIndex(idx) {
			continue
		}
		for _, f := range lp.fields {
			if m, ok := strings.CutSuffix(f.name, ".*"); ok && field == canonicalSegment(m) {
				return true
			}
		}
	}
	return false
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// envKey maps an environment variable name to a property name the way Spring
// Boot's SystemEnvironmentPropertySource does: lower case, "_" -> ".", and a
// numeric segment becomes an index (SERVER_PORT -> server.port,
// EUREKA_X_0 -> eureka.x[0]). ok is false for variables outside envPrefixes.
func envKey(name string) (key string, ok bool) {
	upper := strings.ToUpper(name)
	found := false
	for _, p := range envPrefixes {
		if strings.HasPrefix(upper, p) {
			found = true
			break
		}
	}
	if !found || upper == "SPRING_APPLICATION_JSON" {
		return "", false
	}
	var b strings.Builder
	for _, seg := range strings.Split(strings.ToLower(name), "_") {
		if seg == "" {
			continue
		}
		if isIndex(seg) {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String(), true
}

// levenshtein returns the edit distance between a and b.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// suggest returns the known property closest to canon if it is a near miss.
// The comparison ignores dots, so an environment variable written with
// underscores between words (EUREKA_SERVER_ENABLE_SELF_PRESERVATION) still
// finds its property.
func suggest(canon, key string) string {
	flat := strings.ReplaceAll(canon, ".", "")
	best, bestDist := "", 1<<30
	try := func(name, candidate string) {
		d := levenshtein(flat, strings.ReplaceAll(candidate, ".", ""))
		if d < bestDist {
			best, bestDist = name, d
		}
	}
	for _, p := range properties {
		try(p.name, canonicalKey(p.name))
	}
	for _, p := range mapProps {
		// Compare only the prefix: the map key is free text.
		i, j := strings.LastIndexByte(canon, '.'), strings.LastIndexByte(key, '.')
		if i > 0 && j > 0 {
			d := levenshtein(strings.ReplaceAll(canon[:i], ".", ""), strings.ReplaceAll(canonicalKey(p.name), ".", ""))
			if d < bestDist {
				best, bestDist = p.name+"."+key[j+1:], d
			}
		}
	}
	for _, ig := range ignored {
		try(ig.name, canonicalKey(ig.name))
	}
	limit := 3
	if len(flat) < 12 {
		limit = 2
	}
	if bestDist <= limit {
		return best
	}
	return ""
}
