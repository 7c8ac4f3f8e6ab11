package compat

import (
	"strconv"

	"github.com/goreka/goreka/registry"
)

// A registry document (GET /apps, /apps/delta) is its head, then one
// fragment per application, then its tail:
//
//	AppendHead + AppendAppFragment(app 0, first) + ... + AppendTail
//
// is byte for byte what AppendApplications and WriteApplications write, for
// every format, codec and full or compact. A fragment does not depend on the
// other applications (only on whether it is the first), so a server can keep
// the encoded fragments of a large registry and re-encode only the
// applications that changed. Head and tail read only VersionDelta and
// HashCode.

// AppendHead appends the part of the document before the first application.
func (c Codecs) AppendHead(dst []byte, f Format, compact bool, apps *registry.Applications) []byte {
	jackson := !compact && c.of(f) == Jackson
	if f == JSON {
		if compact || jackson {
			return append(dst, `{"applications":{"application":[`...)
		}
		dst = append(dst, `{"applications":{`...)
		dst = appendVersionHashJSON(dst, apps)
		return append(dst, `,"application":[`...)
	}
	if compact || jackson {
		return append(dst, "<applications>"...)
	}
	w := xmlWriter{buf: dst}
	w.open("applications")
	w.intLeaf("versions__delta", apps.VersionDelta)
	w.leaf("apps__hashcode", apps.HashCode)
	return w.buf
}

// AppendAppFragment appends one application as it stands in the document;
// first says whether it is the document's first application.
func (c Codecs) AppendAppFragment(dst []byte, f Format, compact bool, app *registry.Application, first bool) []byte {
	if f == JSON && !first {
		dst = append(dst, ',')
	}
	if !compact && c.of(f) == Jackson {
		return appendApplicationJackson(dst, f, app)
	}
	if f == JSON {
		return appendApplicationJSON(dst, compact, app)
	}
	w := xmlWriter{buf: dst, depth: 1, flat: compact}
	w.application(compact, app)
	return w.buf
}

// AppendTail appends the part of the document after the last application.
func (c Codecs) AppendTail(dst []byte, f Format, compact bool, apps *registry.Applications) []byte {
	jackson := !compact && c.of(f) == Jackson
	if f == JSON {
		if compact || jackson {
			dst = append(dst, "],"...)
			dst = appendVersionHashJSON(dst, apps)
			return append(dst, "}}"...)
		}
		return append(dst, "]}}"...)
	}
	switch {
	case jackson:
		dst = append(dst, "<versions__delta>"...)
		dst = strconv.AppendInt(dst, apps.VersionDelta, 10)
		dst = append(dst, "</versions__delta>"...)
		dst = appendJacksonLeaf(dst, "apps__hashcode", apps.HashCode)
		return append(dst, "</applications>"...)
	case compact:
		w := xmlWriter{buf: dst, depth: 1, flat: true}
		w.intLeaf("versions__delta", apps.VersionDelta)
		w.leaf("apps__hashcode", apps.HashCode)
		w.close("applications")
		return w.buf
	}
	w := xmlWriter{buf: dst, depth: 1}
	w.close("applications")
	return w.buf
}
