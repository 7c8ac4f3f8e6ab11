package document

import (
	"io"

	"github.com/goreka/goreka/compat"
)

// Local reports whether the documents are the local registry's alone
// (false for a relay, Config.Upstream): what StreamFull writes.
func (b *Builder) Local() bool { return b.upstream == nil }

// StreamFull writes the local registry's full document (no remote
// regions, full not compact) to w as it encodes it from one registry view,
// for a peer's start-up sync: exactly the registry at the revision passed
// to begin, which is called before the first byte (so that the caller can
// send its headers at once), and no wait for a cached build. It reports
// false and writes nothing for a relay (Config.Upstream), whose documents
// are the union with its upstream's.
func (b *Builder) StreamFull(w io.Writer, f compat.Format, begin func(revision int64)) (bool, error) {
	if b.upstream != nil {
		return false, nil
	}
	apps := b.reg.Applications()
	begin(apps.Revision)
	return true, b.codecs.WriteApplications(w, f, false, apps)
}
