package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/registry"
)

// TestLargeDocumentServedAsItsPieces: a full registry and a delta large
// enough that the cache keeps their gzip member as the loader's segments
// (pieces, not one slice) are served over real HTTP byte for byte as the
// joined member, with the Content-Length of it (net/http fails a response
// whose body is not its declared length), without gzip,
// as the plain bytes, which are the registry encoded whole without the
// cache's segments; the ETag is the cache's.
func TestLargeDocumentServedAsItsPieces(t *testing.T) {
	reg := registry.New(registry.Options{})
	for i := range 8000 {
		app := fmt.Sprintf("APP-%03d", i%160)
		_, err := reg.Register(&registry.Instance{
			InstanceID: fmt.Sprintf("host-%05d:%s:8080", i, app), HostName: fmt.Sprintf("host-%05d", i), App: app,
			IPAddr: fmt.Sprintf("10.0.%d.%d", i/256, i%256), Status: registry.StatusUp,
			Port: registry.Port{Number: 8080, Enabled: true}, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
			Metadata:    map[string]string{"management.port": "8080", "zone": "z" + strconv.Itoa(i%3)},
			HomePageURL: fmt.Sprintf("http://host-%05d:8080/", i), VIPAddress: app, SecureVIPAddress: app,
		}, false)
		if err != nil {
			t.Fatal(err)
		}
	}
	s := New(Config{}, Deps{Registry: reg})
	ts := httptest.NewServer(s)
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, tc := range []struct{ path, name string }{{"/eureka/apps/", cache.AllApps}, {"/eureka/apps/delta", cache.AllAppsDelta}} {
		t.Run(tc.name, func(t *testing.T) {
			fetch := func(method string, gz bool) (*http.Response, []byte) {
				t.Helper()
				req, _ := http.NewRequest(method, ts.URL+tc.path, nil)
				req.Header.Set("Accept", "application/json")
				if gz {
					req.Header.Set("Accept-Encoding", "gzip")
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatalf("%s %s: reading the body: %v", method, tc.path, err)
				}
				if resp.StatusCode != 200 {
					t.Fatalf("%s %s: %d", method, tc.path, resp.StatusCode)
				}
				return resp, body
			}
			resp, body := fetch("GET", true)
			v, err := s.cache.Get(cache.Key{Entity: cache.Application, Name: tc.name, JSON: true})
			if err != nil {
				t.Fatal(err)
			}
			if v.GzipLen() < 64<<10 {
				t.Fatalf("the member is %d bytes: the test needs one the cache keeps in pieces", v.GzipLen())
			}
			joined := v.Gzip()
			if !bytes.Equal(body, joined) {
				t.Fatalf("served %d gzip bytes, not the joined member's %d", len(body), len(joined))
			}
			if resp.ContentLength != int64(len(joined)) || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("ETag") != v.ETag {
				t.Fatalf("Content-Length %d (want %d), Content-Encoding %q, ETag %q (want %q)", resp.ContentLength, len(joined), resp.Header.Get("Content-Encoding"), resp.Header.Get("ETag"), v.ETag)
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			inflated, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			presp, plain := fetch("GET", false)
			if !bytes.Equal(plain, inflated) || presp.ContentLength != int64(len(plain)) || presp.Header.Get("Content-Encoding") != "" {
				t.Fatalf("plain: %d bytes (Content-Length %d), equal to the inflated gzip: %v", len(plain), presp.ContentLength, bytes.Equal(plain, inflated))
			}
			var whole bytes.Buffer // the document encoded in one piece, not from the cache's segments
			if _, err := s.docs.Load(cache.Key{Entity: cache.Application, Name: tc.name, JSON: true}, &whole); err != nil {
				t.Fatal(err)
			}
			// A delta's every build takes the next versions__delta: compare from after it.
			from := func(b []byte) []byte { return b[bytes.Index(b, []byte(`"apps__hashcode"`))+1:] }
			if !bytes.Equal(from(plain), from(whole.Bytes())) {
				i := 0
				for i < len(plain) && i < whole.Len() && plain[i] == whole.Bytes()[i] {
					i++
				}
				t.Fatalf("served %d plain bytes, the document encoded whole is %d; first difference at %d: %.80q against %.80q", len(plain), whole.Len(), i, plain[max(i-20, 0):], whole.Bytes()[max(i-20, 0):])
			}
		})
	}
}
