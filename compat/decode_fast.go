package compat

import (
	"unicode/utf8"

	"github.com/goreka/goreka/registry"
)

// A hand-written reader for the JSON shapes goreka decodes on hot paths (a
// register body, a peer's registry at start-up, a peer's batch), about ten times faster than
// encoding/json's reflection. It fills the same wire structs as the
// encoding/json path and then shares its interpretation (toLeaseView), and
// it only answers when it is sure to agree with encoding/json: on anything
// it does not handle exactly like it (a syntax error, a type mismatch, a
// string with an escape or invalid UTF-8, a key that matches a field only
// case-insensitively, deep nesting) it gives up and the caller decodes
// with encoding/json, which produces the result or the error as before.
// TestFastDecoderAgrees and FuzzFastDecoderAgrees hold it to that.

type fastJSON struct {
	b     []byte
	i     int
	depth int
}

const fastMaxDepth = 1000 // encoding/json allows 10000; deeper documents take the slow path

func (s *fastJSON) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (s *fastJSON) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// rawString reads a string without escapes and returns its bytes (not
// copied). ok is false for an escape, a control character, invalid UTF-8
// or an unterminated string.
func (s *fastJSON) rawString() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i + 1
	ascii := true
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			v := s.b[start:j]
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// skipString validates and skips a string, escapes included.
func (s *fastJSON) skipString() bool {
	if s.peek() != '"' {
		return false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			j++
			if j >= len(s.b) {
				return false
			}
			switch s.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s.b) {
					return false
				}
				for _, h := range s.b[j+1 : j+5] {
					if !isHex(h) {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number reads a number literal by JSON's grammar.
func (s *fastJSON) number() ([]byte, bool) {
	s.ws()
	b, j := s.b, s.i
	start := j
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		for j < len(b) && isDigit(b[j]) {
			j++
		}
	default:
		return nil, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if j >= len(b) || !isDigit(b[j]) {
			return nil, false
		}
		for j < len(b) && isDigit(b[j]) {
			j++
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) || !isDigit(b[j]) {
			return nil, false
		}
		for j < len(b) && isDigit(b[j]) {
			j++
		}
	}
	s.i = j
	return b[start:j], true
}

func (s *fastJSON) literal(lit string) bool {
	s.ws()
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// skipValue validates and skips any value.
func (s *fastJSON) skipValue() bool {
	switch s.peek() {
	case '"':
		return s.skipString()
	case '{':
		return s.object(func([]byte) bool { return s.skipValue() })
	case '[':
		return s.array(s.skipValue)
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	_, ok := s.number()
	return ok
}

// object reads an object, calling member with the reader at each member's
// value (keys without escapes only); member must consume the value.
func (s *fastJSON) object(member func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	if s.depth++; s.depth > fastMaxDepth {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		s.depth--
		return true
	}
	for {
		key, ok := s.rawString()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// array reads an array, calling elem at each element.
func (s *fastJSON) array(elem func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	if s.depth++; s.depth > fastMaxDepth {
		return false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		s.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// scalar reads what wireValue.UnmarshalJSON accepts: a string (its text),
// a number or boolean (its literal), null (absent).
func (s *fastJSON) scalar(v *wireValue) bool {
	switch s.peek() {
	case '"':
		b, ok := s.rawString()
		*v = wireValue{s: intern(b), ok: true}
		return ok
	case 'n':
		*v = wireValue{}
		return s.literal("null")
	case 't':
		*v = wireValue{s: "true", ok: true}
		return s.literal("true")
	case 'f':
		*v = wireValue{s: "false", ok: true}
		return s.literal("false")
	case '{', '[':
		return false
	}
	b, ok := s.number()
	*v = wireValue{s: intern(b), ok: true}
	return ok
}

// intern is string(b), without an allocation for the values nearly every
// registration carries (statuses, booleans, the data centre's class and
// name, the action, the usual ports and lease timings): a register body
// decodes with a dozen fewer allocations, and stored instances share these
// strings instead of holding a copy each. The switch on string(b) does not
// allocate.
func intern(b []byte) string {
	switch string(b) {
	case "UP":
		return "UP"
	case "DOWN":
		return "DOWN"
	case "STARTING":
		return "STARTING"
	case "OUT_OF_SERVICE":
		return "OUT_OF_SERVICE"
	case "UNKNOWN":
		return "UNKNOWN"
	case "true":
		return "true"
	case "false":
		return "false"
	case "ADDED":
		return "ADDED"
	case "MODIFIED":
		return "MODIFIED"
	case "DELETED":
		return "DELETED"
	case "MyOwn":
		return "MyOwn"
	case "Amazon":
		return "Amazon"
	case classDefaultDataCenter:
		return classDefaultDataCenter
	case classAmazonInfo:
		return classAmazonInfo
	case "80":
		return "80"
	case "443":
		return "443"
	case "8080":
		return "8080"
	case "30":
		return "30"
	case "90":
		return "90"
	}
	return string(b)
}

// prefixOf is b as a string, sharing the bytes of s when b is a prefix of
// it (a host name is the start of Spring's default instance id,
// host:app:port): one allocation less per registration, and one copy less
// per stored instance.
func prefixOf(s string, b []byte) string {
	if len(b) <= len(s) && s[:len(b)] == string(b) {
		return s[:len(b)]
	}
	return intern(b)
}

// sharedScalar is scalar for a value that is often a prefix of (or equal
// to) an earlier one, like (as prefixOf) the host name of the instance id or
// the secure VIP address of the VIP address.
func (s *fastJSON) sharedScalar(v *wireValue, earlier wireValue) bool {
	if !earlier.ok || s.peek() != '"' {
		return s.scalar(v)
	}
	b, ok := s.rawString()
	*v = wireValue{s: prefixOf(earlier.s, b), ok: true}
	return ok
}

// unknownKey is the member function for keys that name no field: skip the
// value, unless the key would match a field case-insensitively (as
// encoding/json matches), which the fast path leaves to encoding/json.
func (s *fastJSON) unknownKey(key []byte, fields []string) bool {
	for _, c := range key {
		if c >= 0x80 {
			return false // encoding/json folds a few non-ASCII letters too
		}
	}
	for _, f := range fields {
		if len(f) == len(key) && asciiEqualFold(f, key) {
			return false
		}
	}
	return s.skipValue()
}

func asciiEqualFold(a string, b []byte) bool {
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

var (
	instanceFields = []string{"instanceId", "hostName", "app", "appGroupName", "ipAddr", "sid", "status",
		"overriddenStatus", "overriddenstatus", "port", "securePort", "countryId", "dataCenterInfo", "leaseInfo",
		"metadata", "homePageUrl", "statusPageUrl", "healthCheckUrl", "secureHealthCheckUrl", "vipAddress",
		"secureVipAddress", "isCoordinatingDiscoveryServer", "lastUpdatedTimestamp", "lastDirtyTimestamp",
		"actionType", "asgName"}
	portFields       = []string{"$", "@enabled"}
	dataCenterFields = []string{"@class", "name", "metadata"}
	leaseFields      = []string{"renewalIntervalInSecs", "durationInSecs", "registrationTimestamp",
		"lastRenewalTimestamp", "renewalTimestamp", "evictionTimestamp", "serviceUpTimestamp"}
	applicationsFields = []string{"versions__delta", "apps__hashcode", "application"}
	applicationFields  = []string{"name", "instance"}
)

func (s *fastJSON) instance(w *wireInstance) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "instanceId":
			return s.scalar(&w.InstanceID)
		case "hostName":
			return s.sharedScalar(&w.HostName, w.InstanceID)
		case "app":
			return s.scalar(&w.App)
		case "appGroupName":
			return s.scalar(&w.AppGroupName)
		case "ipAddr":
			return s.scalar(&w.IPAddr)
		case "sid":
			return s.scalar(&w.SID)
		case "status":
			return s.scalar(&w.Status)
		case "overriddenStatus":
			return s.scalar(&w.OverriddenStatus)
		case "overriddenstatus":
			return s.scalar(&w.OverriddenStatusLegacy)
		case "port":
			return s.port(&w.Port)
		case "securePort":
			return s.port(&w.SecurePort)
		case "countryId":
			return s.scalar(&w.CountryID)
		case "dataCenterInfo":
			return s.dataCenter(&w.DataCenterInfo)
		case "leaseInfo":
			return s.lease(&w.LeaseInfo)
		case "metadata":
			return s.metadata(&w.Metadata)
		case "homePageUrl":
			return s.scalar(&w.HomePageURL)
		case "statusPageUrl":
			return s.scalar(&w.StatusPageURL)
		case "healthCheckUrl":
			return s.scalar(&w.HealthCheckURL)
		case "secureHealthCheckUrl":
			return s.scalar(&w.SecureHealthCheckURL)
		case "vipAddress":
			return s.scalar(&w.VIPAddress)
		case "secureVipAddress":
			return s.sharedScalar(&w.SecureVIPAddress, w.VIPAddress)
		case "isCoordinatingDiscoveryServer":
			return s.scalar(&w.IsCoordinating)
		case "lastUpdatedTimestamp":
			return s.scalar(&w.LastUpdatedTimestamp)
		case "lastDirtyTimestamp":
			return s.sharedScalar(&w.LastDirtyTimestamp, w.LastUpdatedTimestamp)
		case "actionType":
			return s.scalar(&w.ActionType)
		case "asgName":
			return s.scalar(&w.ASGName)
		}
		return s.unknownKey(key, instanceFields)
	})
}

// optional starts reading an optional object into *p as encoding/json does:
// null clears the pointer (done), an object fills the existing struct or a
// new one (a repeated key merges into it).
func optional[T any](s *fastJSON, p **T) (w *T, done, ok bool) {
	if s.peek() == 'n' {
		*p = nil
		return nil, true, s.literal("null")
	}
	if *p == nil {
		*p = new(T)
	}
	return *p, false, false
}

// port reads a *wirePort as encoding/json does: null clears the pointer, an
// object fills the existing struct (a repeated key merges into it).
func (s *fastJSON) port(p **wirePort) bool {
	w, done, ok := optional(s, p)
	if done {
		return ok
	}
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "$":
			return s.scalar(&w.Number)
		case "@enabled":
			return s.scalar(&w.Enabled)
		}
		return s.unknownKey(key, portFields)
	})
}

func (s *fastJSON) dataCenter(p **wireDataCenter) bool {
	w, done, ok := optional(s, p)
	if done {
		return ok
	}
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "@class":
			return s.scalar(&w.Class)
		case "name":
			return s.scalar(&w.Name)
		case "metadata":
			return s.metadata(&w.Metadata)
		}
		return s.unknownKey(key, dataCenterFields)
	})
}

func (s *fastJSON) lease(p **wireLease) bool {
	w, done, ok := optional(s, p)
	if done {
		return ok
	}
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "renewalIntervalInSecs":
			return s.scalar(&w.RenewalInterval)
		case "durationInSecs":
			return s.scalar(&w.Duration)
		case "registrationTimestamp":
			return s.scalar(&w.Registration)
		case "lastRenewalTimestamp":
			return s.scalar(&w.LastRenewal)
		case "renewalTimestamp":
			return s.scalar(&w.RenewalLegacy)
		case "evictionTimestamp":
			return s.scalar(&w.Eviction)
		case "serviceUpTimestamp":
			return s.scalar(&w.ServiceUp)
		}
		return s.unknownKey(key, leaseFields)
	})
}

// metadata is wireMetadata.UnmarshalJSON: the whole map is replaced, "@class"
// and null values dropped, a repeated key keeps its last value.
func (s *fastJSON) metadata(m *wireMetadata) bool {
	if s.peek() == 'n' {
		*m = nil
		return s.literal("null")
	}
	var out wireMetadata
	ok := s.object(func(key []byte) bool {
		var v wireValue
		if !s.scalar(&v) {
			return false
		}
		k := string(key)
		if k == "@class" {
			return true
		}
		if !v.ok {
			delete(out, k) // a null after a value: encoding/json's map holds the null
			return true
		}
		if out == nil {
			out = make(wireMetadata, 8)
		}
		out[k] = v.s
		return true
	})
	*m = out
	return ok
}

// root reads the top-level object and positions the reader at the value of
// its key root (the last one, as a map keeps it); false if absent, null or
// the document is not valid JSON with only space after it.
func (s *fastJSON) root(root string, value func() bool) bool {
	found := false
	var at int
	ok := s.object(func(key []byte) bool {
		if string(key) == root && s.peek() != 'n' {
			found, at = true, s.i
		} else if string(key) == root {
			found = false
		}
		return s.skipValue()
	})
	if !ok || !found {
		return false
	}
	s.ws()
	if s.i != len(s.b) {
		return false
	}
	s.i, s.depth = at, 1
	return value()
}

// fastInstance decodes {"instance":{...}} into w; false: use encoding/json.
// It reads the body once: each "instance" member is decoded where it stands
// (a later one replaces it, as root's last one wins), instead of root's
// validating pass followed by a second read of the value.
func fastInstance(body []byte, w *wireInstance) bool {
	s := &fastJSON{b: body}
	found := false
	ok := s.object(func(key []byte) bool {
		if string(key) != "instance" {
			return s.skipValue()
		}
		if s.peek() == 'n' {
			found = false
			return s.literal("null")
		}
		*w, found = wireInstance{}, true
		return s.instance(w)
	})
	if !ok || !found {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// fastApplications decodes {"applications":{...}}; false: use encoding/json.
func fastApplications(body []byte, doc *jsonApplications) bool {
	s := &fastJSON{b: body}
	return s.root("applications", func() bool {
		return s.object(func(key []byte) bool {
			switch string(key) {
			case "versions__delta":
				return s.scalar(&doc.VersionsDelta)
			case "apps__hashcode":
				return s.scalar(&doc.AppsHashcode)
			case "application":
				return oneOrManyFast(s, &doc.Application, func(a *jsonApplication) bool {
					return s.object(func(key []byte) bool {
						switch string(key) {
						case "name":
							return s.scalar(&a.Name)
						case "instance":
							return oneOrManyFast(s, &a.Instance, s.instance)
						}
						return s.unknownKey(key, applicationFields)
					})
				})
			}
			return s.unknownKey(key, applicationsFields)
		})
	})
}

// oneOrManyFast is oneOrMany.UnmarshalJSON: an object is a list of one, an
// array a list, null no list; each element starts from zero. A null element
// is left to encoding/json.
func oneOrManyFast[T any](s *fastJSON, o *oneOrMany[T], elem func(*T) bool) bool {
	switch s.peek() {
	case 'n':
		*o = nil
		return s.literal("null")
	case '{':
		*o = make(oneOrMany[T], 1)
		return elem(&(*o)[0])
	}
	list := make(oneOrMany[T], 0, 16)
	ok := s.array(func() bool {
		if s.peek() == 'n' {
			return false
		}
		var zero T
		list = append(list, zero)
		return elem(&list[len(list)-1])
	})
	*o = list
	return ok
}

var replicationItemFields = []string{"appName", "id", "lastDirtyTimestamp", "overriddenStatus", "status",
	"instanceInfo", "action"}

// fastReplicationList decodes {"replicationList":[...]} as
// slowReplicationList does; false: use it. An item or an instanceInfo the
// slow path would answer alone (not an object, a bad field) makes the fast
// path give up on the whole batch.
func fastReplicationList(body []byte) ([]ReplicationItem, bool) {
	s := &fastJSON{b: body}
	var items []ReplicationItem
	ok := s.root("replicationList", func() bool {
		items = make([]ReplicationItem, 0, 256)
		return s.array(func() bool {
			var j jsonReplicationItem
			var in *registry.LeaseView
			ok := s.object(func(key []byte) bool {
				switch string(key) {
				case "appName":
					return s.scalar(&j.AppName)
				case "id":
					return s.scalar(&j.ID)
				case "lastDirtyTimestamp":
					return s.scalar(&j.LastDirtyTimestamp)
				case "overriddenStatus":
					return s.scalar(&j.OverriddenStatus)
				case "status":
					return s.scalar(&j.Status)
				case "action":
					return s.scalar(&j.Action)
				case "instanceInfo":
					// A repeated key replaces the value, as the slow
					// path's json.RawMessage does.
					if s.peek() == 'n' {
						in = nil
						return s.literal("null")
					}
					var w wireInstance
					if !s.instance(&w) {
						return false
					}
					v, err := w.toLeaseView(JSON)
					if err != nil {
						return false
					}
					in = v
					return true
				}
				return s.unknownKey(key, replicationItemFields)
			})
			if ok {
				items = append(items, j.item(in))
			}
			return ok
		})
	})
	return items, ok
}
