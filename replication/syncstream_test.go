package replication

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/registry"
)

// The streamed decode gives the instances compat's whole-document decoder
// gives, for every golden registry document, in batches, also when the
// bytes arrive one at a time.
func TestDecodeAppsStreamAgreesWithDecodeApplications(t *testing.T) {
	files, _ := filepath.Glob("../compat/testdata/golden/apps*.json")
	if len(files) == 0 {
		t.Fatal("no golden documents")
	}
	total := 0
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := compat.DecodeApplications(body, compat.JSON)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var wantIDs []string
		for _, app := range want.Apps {
			for _, v := range app.Instances {
				wantIDs = append(wantIDs, v.Instance.App+"/"+v.Instance.ID()+"/"+string(v.Instance.Status)+"/"+v.Duration.String())
			}
		}
		total += len(wantIDs)
		for _, r := range []io.Reader{strings.NewReader(string(body)), iotest.OneByteReader(strings.NewReader(string(body)))} {
			var got []string
			batches := 0
			err := decodeAppsStream(r, 1, func(ins []*registry.Instance) error {
				batches++
				for _, in := range ins {
					got = append(got, in.App+"/"+in.ID()+"/"+string(in.Status)+"/"+in.LeaseInfo.Duration.String())
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if strings.Join(got, " ") != strings.Join(wantIDs, " ") || batches != len(wantIDs) {
				t.Errorf("%s: streamed %v in %d batches, want %v", f, got, batches, wantIDs)
			}
		}
	}
	if total == 0 {
		t.Error("the golden documents hold no instance")
	}
}

// Single objects where arrays belong, members in any order, nulls.
func TestDecodeAppsStreamLenientShapes(t *testing.T) {
	doc := `{"applications":{"apps__hashcode":"UP_2_","application":{"instance":{"hostName":"h","app":"A","status":"UP","instanceId":"a1","ipAddr":"10.0.0.1","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}},"name":"A"},"versions__delta":"1","x":[1,{"y":null}]},"other":true}`
	var got []string
	err := decodeAppsStream(strings.NewReader(doc), 10, func(ins []*registry.Instance) error {
		for _, in := range ins {
			got = append(got, in.App+"/"+in.ID())
		}
		return nil
	})
	if err != nil || len(got) != 1 || got[0] != "A/a1" {
		t.Fatalf("got %v, %v", got, err)
	}
	if err := decodeAppsStream(strings.NewReader(`{"applications":{"application":null}}`), 10, func([]*registry.Instance) error { return nil }); err != nil {
		t.Errorf("null application: %v", err)
	}
}

// A broken document is a bad response; emit's error comes back as it is.
func TestDecodeAppsStreamErrors(t *testing.T) {
	for _, doc := range []string{`{"applications":{"application":[{"instance":[{"app":`, `[1]`, `{"applications":{"application":7}}`} {
		err := decodeAppsStream(strings.NewReader(doc), 10, func([]*registry.Instance) error { return nil })
		if !errors.Is(err, eurekahttp.ErrBadResponse) {
			t.Errorf("%q: %v, want a bad response", doc, err)
		}
	}
	stop := errors.New("stop")
	body, _ := os.ReadFile("../compat/testdata/golden/apps.full.json")
	if err := decodeAppsStream(strings.NewReader(string(body)), 1, func([]*registry.Instance) error { return stop }); err != stop {
		t.Errorf("emit's error: %v", err)
	}
}
