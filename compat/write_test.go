package compat

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/goreka/goreka/registry"
)

func manyApps(n int) *registry.Applications {
	apps := &registry.Applications{VersionDelta: 7, HashCode: fmt.Sprintf("UP_%d_", n)}
	for a := range n / 10 {
		app := registry.Application{Name: fmt.Sprintf("APP-%03d", a)}
		for i := range 10 {
			id := fmt.Sprintf("h%d-%d", a, i)
			app.Instances = append(app.Instances, registry.LeaseView{Instance: &registry.Instance{
				InstanceID: id, HostName: id, App: app.Name, IPAddr: "10.0.0.1", Status: registry.StatusUp,
				OverriddenStatus: registry.StatusUnknown, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
				Metadata: map[string]string{"zone": "z1"}, VIPAddress: app.Name,
			}})
		}
		apps.Apps = append(apps.Apps, app)
	}
	return apps
}

// chunks records every write, to prove the document arrives in pieces.
type chunks struct {
	bytes.Buffer
	writes int
}

func (c *chunks) Write(p []byte) (int, error) { c.writes++; return c.Buffer.Write(p) }

func TestWriteApplicationsEqualsAppend(t *testing.T) {
	for _, n := range []int{0, 10, 2000} {
		apps := manyApps(n)
		for _, f := range []Format{JSON, XML} {
			for _, compact := range []bool{false, true} {
				name := fmt.Sprintf("%d-%v-compact=%v", n, f, compact)
				t.Run(name, func(t *testing.T) {
					for _, c := range []Codecs{{}, {JSON: Jackson, XML: Jackson}} {
						want := c.AppendApplications(nil, f, compact, apps)
						var got chunks
						if err := c.WriteApplications(&got, f, compact, apps); err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(got.Bytes(), want) {
							t.Fatalf("%+v: streamed document differs from the appended one", c)
						}
						if len(want) > 64<<10 && got.writes < 2 {
							t.Fatalf("%+v: %d bytes written in %d piece(s)", c, len(want), got.writes)
						}
					}
				})
			}
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestWriteApplicationsStopsOnError(t *testing.T) {
	fw := &failWriter{}
	if err := WriteApplications(fw, JSON, false, manyApps(2000)); err == nil || fw.n != 1 {
		t.Fatalf("err = %v after %d writes; want the first error, one write", err, fw.n)
	}
}
