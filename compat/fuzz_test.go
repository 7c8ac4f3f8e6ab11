package compat

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/goreka/goreka/registry"
)

// seedFiles returns the bodies under testdata/wire and the golden files
// whose names end in suffix.
func seedFiles(f *testing.F, suffix string) [][]byte {
	f.Helper()
	var out [][]byte
	for _, dir := range []string{filepath.Join("..", "testdata", "wire"), filepath.Join("testdata", "golden")} {
		paths, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// instanceView wraps a decoded instance the way the server would publish it.
func instanceView(in *registry.Instance) *registry.LeaseView {
	return &registry.LeaseView{Instance: in, RenewalInterval: in.LeaseInfo.RenewalInterval, Duration: in.LeaseInfo.Duration}
}

func fuzzInstance(t *testing.T, data []byte, f Format) {
	in, err := DecodeInstance(data, f)
	if err != nil {
		return
	}
	enc := AppendInstance(nil, f, instanceView(in))
	again, err := DecodeInstance(enc, f)
	if err != nil {
		t.Fatalf("re-encoded instance does not decode: %v\n%s", err, enc)
	}
	if !reflect.DeepEqual(in, again) {
		t.Fatalf("round trip differs:\nfirst  %+v\nsecond %+v\nbody %s", in, again, enc)
	}
}

func FuzzDecodeInstanceJSON(f *testing.F) {
	for _, b := range seedFiles(f, ".json") {
		if strings.HasPrefix(string(b), `{"instance"`) {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"instance":{"hostName":"h","metadata":{"instanceId":"x"},"port":{"$":"1e3"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzInstance(t, data, JSON) })
}

func FuzzDecodeInstanceXML(f *testing.F) {
	for _, b := range seedFiles(f, ".xml") {
		if strings.HasPrefix(string(b), "<instance>") || strings.HasPrefix(string(b), "<?xml") {
			f.Add(b)
		}
	}
	f.Add([]byte(`<instance><metadata><a__b>1</a__b><_.0031x>2</_.0031x></metadata><port enabled="false"> 80 </port></instance>`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzInstance(t, data, XML) })
}

func FuzzDecodeApplications(f *testing.F) {
	for _, b := range seedFiles(f, ".json") {
		if strings.Contains(string(b), `"applications"`) {
			f.Add(b, false)
		}
	}
	for _, b := range seedFiles(f, ".xml") {
		if strings.HasPrefix(string(b), "<applications>") {
			f.Add(b, true)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, isXML bool) {
		format := JSON
		if isXML {
			format = XML
		}
		apps, err := DecodeApplications(data, format)
		if err != nil {
			return
		}
		enc := AppendApplications(nil, format, false, apps)
		again, err := DecodeApplications(enc, format)
		if err != nil {
			t.Fatalf("re-encoded document does not decode: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(apps, again) {
			t.Fatalf("round trip differs\nbody %s", enc)
		}
	})
}

func FuzzDecodeReplicationList(f *testing.F) {
	for _, b := range seedFiles(f, ".json") {
		if strings.HasPrefix(string(b), `{"replicationList"`) {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"replicationList":[{"appName":"A","id":"i","lastDirtyTimestamp":"12","action":"Heartbeat"},{},7]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := DecodeReplicationList(data)
		if err != nil {
			return
		}
		enc := AppendReplicationList(nil, items)
		again, err := DecodeReplicationList(enc)
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(items, again) {
			t.Fatalf("round trip differs\nbody %s", enc)
		}
	})
}
