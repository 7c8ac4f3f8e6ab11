package xds

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// Versions. A client is sent version_info = the registry revision of the
// change that produced the response (the revision the namespace's
// resources were at when the cache was last updated; "REV.N" for the Nth
// expiry sweep that changed health at that revision, since a lease that
// stops renewing makes no registry change), so that an operator
// can compare an Envoy's config_dump or a dashboard's "last ACKed" with the
// registry's revision. Each cache (typed.go) numbers its own updates
// (prefix + counter), with a prefix of its own, and records the revision of each of its updates, so that a response's cache
// version is rewritten to the revision just before it is sent (the
// server's response callbacks), and the revision a client sends back is
// turned into a version of the cache's prefix again (router.CreateWatch).

// revisionRing is how many updates of a cache are remembered: a response
// is built at an update and sent straight away, so only the last few are
// ever looked up.
const revisionRing = 64

// update is what a cache update stands for: its version (the revision)
// and when the feeder received the change that made it.
type update struct {
	version string
	at      time.Time
}

// cacheVersion turns the version a client sent (a revision, as it was
// sent) into one the cache takes for its own: a revision it has
// reached. Anything else (empty, another server's, a revision ahead of
// this process: a client of a previous goreka) is left as it is, and the
// cache answers even when nothing is due, as it does a new client.
func (t *typed) cacheVersion(v string) string {
	r, ok := leadingRevision(v)
	if l, _ := leadingRevision(t.latest()); !ok || r > l {
		return v
	}
	return t.prefix + "r" + v
}

// leadingRevision is the revision of version v ("1234", or "1234.2" after
// expiry sweeps at that revision).
func leadingRevision(v string) (int64, bool) {
	head, _, _ := strings.Cut(v, ".")
	r, err := strconv.ParseInt(head, 10, 64)
	return r, err == nil && r >= 0
}

// versions finds the cache of a cache version by its prefix, for the
// response callbacks (which know the version, not the group).
type versions struct{ m sync.Map } // prefix -> *typed

func (vs *versions) add(t *typed) { vs.m.Store(t.prefix, t) }

// revision rewrites cache version v to the revision it stands for, with
// when its change was received; v itself and a zero time when it is not
// known.
func (vs *versions) revision(v string) (string, time.Time) {
	i := strings.LastIndexByte(v, '-')
	if i < 0 {
		return v, time.Time{}
	}
	x, ok := vs.m.Load(v[:i+1])
	if !ok {
		return v, time.Time{}
	}
	if u, ok := x.(*typed).revisionOf(v); ok {
		return u.version, u.at
	}
	return v, time.Time{}
}
