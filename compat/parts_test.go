package compat

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/goreka/goreka/registry"
)

// TestPartsMakeTheDocument checks head + fragments + tail against
// AppendApplications for every format, codec and full or compact, on the
// golden fixture, an empty registry, one application and a 10k registry.
func TestPartsMakeTheDocument(t *testing.T) {
	one := fixtureApps()
	one.Apps = one.Apps[1:]
	regs := map[string]*registry.Applications{
		"fixture": fixtureApps(), "empty": {VersionDelta: 7, HashCode: ""}, "one": one, "10k": registry10k(),
	}
	for name, apps := range regs {
		for _, codecs := range []Codecs{{}, {JSON: Jackson, XML: Jackson}} {
			for _, f := range []Format{JSON, XML} {
				for _, compact := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%v/%v/%v", name, codecs, f, compact), func(t *testing.T) {
						want := codecs.AppendApplications(nil, f, compact, apps)
						got := codecs.AppendHead(nil, f, compact, apps)
						for i := range apps.Apps {
							got = codecs.AppendAppFragment(got, f, compact, &apps.Apps[i], i == 0)
						}
						got = codecs.AppendTail(got, f, compact, apps)
						if !bytes.Equal(got, want) {
							t.Fatalf("parts differ from the document\ngot:  %.300q\nwant: %.300q", got, want)
						}
					})
				}
			}
		}
	}
}
