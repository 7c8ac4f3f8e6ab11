package server

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server/api/wire"
)

// A peer's start-up sync (X-Goreka-Sync: stream) gets the registry as it
// is, from one view, with that view's revision in the trailer; a plain
// full fetch gets the cache's copy with its revision in the headers.
func TestSyncStreamServesTheRegistryAtOneRevision(t *testing.T) {
	reg := registry.New(registry.Options{})
	for _, id := range []string{"a", "b", "c"} {
		if _, err := reg.Register(&registry.Instance{InstanceID: id, HostName: id, App: "ORDERS", IPAddr: "10.0.0.1",
			Status: registry.StatusUp, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}, false); err != nil {
			t.Fatal(err)
		}
	}
	hs := httptest.NewServer(New(Config{}, Deps{Registry: reg}))
	t.Cleanup(hs.Close)
	get := func(sync bool) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/eureka/apps/", nil)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Accept-Encoding", "gzip")
		if sync {
			req.Header.Set(replication.SyncHeader, replication.SyncStream)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("status %d, encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	resp, body := get(true)
	apps, err := compat.DecodeApplications(body, compat.JSON)
	if err != nil || len(apps.Apps) != 1 || len(apps.Apps[0].Instances) != 3 {
		t.Fatalf("streamed registry: %v %s", err, body)
	}
	want := strconv.FormatInt(reg.Revision(), 10)
	if got := resp.Trailer.Get(RevisionHeader); got != want {
		t.Errorf("streamed revision %q, want %q", got, want)
	}
	resp, _ = get(false)
	if got := resp.Header.Get(RevisionHeader); got != want {
		t.Errorf("cached revision %q, want %q", got, want)
	}
	if got := resp.Header.Get(EpochHeader); got == "" || got != reg.Epoch() {
		t.Errorf("cached document's epoch %q, want the registry's %q", got, reg.Epoch())
	}
}

// The read API's watch and the registry documents name the epoch with one
// header (wire cannot import compat, so the name is written twice).
func TestEpochHeaderIsOne(t *testing.T) {
	if wire.EpochHeader != compat.EpochHeader {
		t.Fatalf("the watch's epoch header %q, the documents' %q", wire.EpochHeader, compat.EpochHeader)
	}
}
