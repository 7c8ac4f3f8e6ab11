package document

import (
	"io"

	"github.com/goreka/goreka/compat"
)

// StreamFull writes the local registry's full document (no remote
// regions, full not compact) to w as it encodes it from one registry view,
// for a peer's start-up sync: exactly the registry at the revision passed
// to begin, which is called before the first byte (so that the caller can
// send its headers at once), and no wait for a cached build. A relay
// (Config.Upstream) streams its local registry alone too: its peer keeps a
// copy of the upstream of its own, and the union would hand it this
// relay's copy as leases nobody renews there, whose eviction the peer
// would forward upstream as cancels of the upstream's own instances.
func (b *Builder) StreamFull(w io.Writer, f compat.Format, begin func(revision int64)) error {
	apps := b.reg.Applications()
	begin(apps.Revision)
	return b.codecs.WriteApplications(w, f, false, apps)
}
