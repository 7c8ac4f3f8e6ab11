package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// FormatName and Version identify the file. A reader refuses other names
// and versions it does not know.
const (
	FormatName = "goreka-registry-snapshot"
	Version    = 1
)

// magic is how every snapshot starts: the format name is the file's magic
// number, so a foreign file is recognised before anything is parsed.
const magic = `{"format":"` + FormatName + `","version":`

// The checksum trailer closes the document: `,"checksum":"crc32c:` then 8
// lower-case hex digits of the CRC-32C of every byte before the trailer,
// then `"}`.
const (
	trailerHead = `,"checksum":"crc32c:`
	trailerTail = `"}`
	trailerLen  = len(trailerHead) + 8 + len(trailerTail)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// File is a decoded snapshot file.
type File struct {
	Version  int
	Written  time.Time // when the snapshot was taken
	Server   string    // instance id of the server that wrote it
	Snapshot registry.Snapshot
}

// A FormatError reports a file that is not a readable snapshot: foreign,
// empty, truncated, damaged, or of a version this goreka does not read.
type FormatError struct {
	Reason string
	Err    error // the underlying parse error, if any
}

func (e *FormatError) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *FormatError) Unwrap() error { return e.Err }

// Marshal returns the snapshot document of s, taken at written by server.
// Instances are written one per line in s's order, overrides sorted by id.
func Marshal(s registry.Snapshot, written time.Time, server string) []byte {
	dst := make([]byte, 0, 256+1200*len(s.Instances))
	dst = append(dst, magic...)
	dst = strconv.AppendInt(dst, Version, 10)
	dst = append(dst, `,"written":`...)
	dst = appendString(dst, written.UTC().Format(time.RFC3339Nano))
	dst = append(dst, `,"server":`...)
	dst = appendString(dst, server)
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendInt(dst, int64(len(s.Instances)), 10)
	dst = append(dst, ",\n"+`"instances":[`...)
	for i := range s.Instances {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '\n')
		dst = compat.AppendInstanceBody(dst, &s.Instances[i])
	}
	dst = append(dst, "\n],\n"+`"overrides":{`...)
	for i, id := range slices.Sorted(maps.Keys(s.Overrides)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, id)
		dst = append(dst, ':')
		dst = appendString(dst, string(s.Overrides[id]))
	}
	dst = append(dst, "}\n"...)
	sum := crc32.Checksum(dst, castagnoli)
	dst = append(dst, trailerHead...)
	dst = fmt.Appendf(dst, "%08x", sum)
	dst = append(dst, trailerTail...)
	return append(dst, '\n')
}

func appendString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

type document struct {
	Format    string            `json:"format"`
	Version   int               `json:"version"`
	Written   time.Time         `json:"written"`
	Server    string            `json:"server"`
	Count     int               `json:"count"`
	Instances json.RawMessage   `json:"instances"`
	Overrides map[string]string `json:"overrides"`
	Checksum  string            `json:"checksum"`
}

// Unmarshal decodes a snapshot document. Anything but a complete, intact
// document of a known version yields a *FormatError.
func Unmarshal(data []byte) (*File, error) {
	if len(data) == 0 {
		return nil, &FormatError{Reason: "empty file"}
	}
	if !bytes.HasPrefix(data, []byte(magic)) {
		if len(data) < len(magic) && bytes.HasPrefix([]byte(magic), data) {
			return nil, &FormatError{Reason: "truncated: ends inside the header"}
		}
		return nil, &FormatError{Reason: "not a " + FormatName + " file"}
	}
	body := bytes.TrimSuffix(data, []byte("\n"))
	if len(body) < len(magic)+trailerLen {
		return nil, &FormatError{Reason: "truncated: no checksum trailer"}
	}
	cut := len(body) - trailerLen
	trailer := body[cut:]
	if !bytes.HasPrefix(trailer, []byte(trailerHead)) || !bytes.HasSuffix(trailer, []byte(trailerTail)) {
		return nil, &FormatError{Reason: "truncated: no checksum trailer"}
	}
	hex := trailer[len(trailerHead) : len(trailerHead)+8]
	if bytes.ContainsFunc(hex, func(r rune) bool { return (r < '0' || r > '9') && (r < 'a' || r > 'f') }) {
		return nil, &FormatError{Reason: fmt.Sprintf("damaged checksum trailer %q", hex)}
	}
	want, _ := strconv.ParseUint(string(hex), 16, 32) // 8 lower-case hex digits always parse
	if got := crc32.Checksum(body[:cut], castagnoli); uint64(got) != want {
		return nil, &FormatError{Reason: fmt.Sprintf("checksum mismatch (file says %08x, content is %08x): damaged or edited", want, got)}
	}
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, &FormatError{Reason: "malformed JSON", Err: err}
	}
	if doc.Format != FormatName {
		return nil, &FormatError{Reason: "not a " + FormatName + " file"}
	}
	if doc.Version != Version {
		return nil, &FormatError{Reason: fmt.Sprintf("unsupported version %d (this goreka reads version %d)", doc.Version, Version)}
	}
	views, err := decodeInstances(doc.Instances)
	if err != nil {
		return nil, &FormatError{Reason: "bad instances", Err: err}
	}
	if len(views) != doc.Count {
		return nil, &FormatError{Reason: fmt.Sprintf("count says %d instances, file holds %d", doc.Count, len(views))}
	}
	f := &File{Version: doc.Version, Written: doc.Written, Server: doc.Server}
	f.Snapshot.Instances = views
	f.Snapshot.Overrides = make(map[string]registry.Status, len(doc.Overrides))
	for id, s := range doc.Overrides {
		st, ok := registry.ParseStatus(s)
		if !ok {
			return nil, &FormatError{Reason: fmt.Sprintf("bad override %q for %q", s, id)}
		}
		f.Snapshot.Overrides[id] = st
	}
	return f, nil
}

// decodeInstances reads the instances array with compat's decoder, which
// keeps leaseInfo's timestamps only inside an applications document: the
// array is wrapped as the instances of one application. The application
// name is not used; every instance carries its own "app".
func decodeInstances(raw json.RawMessage) ([]registry.LeaseView, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("instances is not an array")
	}
	doc := make([]byte, 0, len(raw)+64)
	doc = append(doc, `{"applications":{"application":[{"name":"SNAPSHOT","instance":`...)
	doc = append(doc, raw...)
	doc = append(doc, "}]}}"...)
	apps, err := compat.DecodeApplications(doc, compat.JSON)
	if err != nil {
		return nil, err
	}
	if len(apps.Apps) == 0 {
		return nil, nil
	}
	return apps.Apps[0].Instances, nil
}
