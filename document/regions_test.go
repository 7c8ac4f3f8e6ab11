package document

import (
	"bytes"
	"testing"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
)

// TestRegionsKey pins the cache key of ?regions=: configured regions only,
// lower case, sorted, once each; "-" when none of them is named; "" when no
// region is configured, so that the read shares the plain key's bytes.
func TestRegionsKey(t *testing.T) {
	reg := registry.New(registry.Options{})
	if k := New(Config{Registry: reg}).RegionsKey("west"); k != "" {
		t.Fatalf("no region configured: key %q, want the plain key", k)
	}
	var remotes []*region.Remote
	for _, n := range []string{"west", "east"} {
		r, err := region.New(region.Config{Name: n, URL: "http://127.0.0.1:1/eureka/"})
		if err != nil {
			t.Fatal(err)
		}
		remotes = append(remotes, r)
	}
	b := New(Config{Registry: reg, Regions: Regions{Set: region.NewSet(remotes, nil)}})
	for raw, want := range map[string]string{
		"west":             "west",
		"West,nowhere":     "west",
		"west,EAST,west":   "east,west",
		"nowhere":          "-",
		"nowhere,elsewhen": "-",
	} {
		if got := b.RegionsKey(raw); got != want {
			t.Errorf("RegionsKey(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestLoadWithRegionsNotAnsweredIsLocal: regions configured but never
// fetched merge nothing, so every plain document is the local registry's,
// byte for byte.
func TestLoadWithRegionsNotAnsweredIsLocal(t *testing.T) {
	reg := registry.New(registry.Options{})
	for i := range 50 {
		if _, err := reg.Register(fragInstance("APP-"+string(rune('A'+i%5)), i), false); err != nil {
			t.Fatal(err)
		}
	}
	r, err := region.New(region.Config{Name: "west", URL: "http://127.0.0.1:1/eureka/"})
	if err != nil {
		t.Fatal(err)
	}
	local := New(Config{Registry: reg})
	merged := New(Config{Registry: reg, Regions: Regions{Set: region.NewSet([]*region.Remote{r}, nil)}})
	for _, k := range []cache.Key{
		{Entity: cache.Application, Name: cache.AllApps, JSON: true},
		{Entity: cache.Application, Name: cache.AllApps, Compact: true},
		{Entity: cache.Application, Name: "APP-C", JSON: true},
		{Entity: cache.VIP, Name: "APP-B"},
	} {
		var want, got bytes.Buffer
		if _, err := local.Load(k, &want); err != nil {
			t.Fatal(err)
		}
		if _, err := merged.Load(k, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%v: a region that never answered changed the document\ngot  %.200q\nwant %.200q", k, got.Bytes(), want.Bytes())
		}
	}
	if found, err := merged.Load(cache.Key{Entity: cache.Application, Name: "NOWHERE", JSON: true}, &bytes.Buffer{}); err != nil || found {
		t.Fatalf("unknown application: found=%v err=%v, want not found", found, err)
	}
}
