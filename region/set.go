package region

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
)

// GlobalWhitelist is the key of the whitelist that applies to regions
// without one of their own (Spring's remote-region-app-whitelist.global).
const GlobalWhitelist = "global"

// Set is every remote region of a server and the application whitelists.
// Its methods are safe for concurrent use; a nil *Set has no regions.
type Set struct {
	remotes []*Remote // sorted by name
	byName  map[string]*Remote
	white   map[string]map[string]bool // region (or GlobalWhitelist) -> app names
}

// NewSet builds a set over remotes. whitelist maps a region name (lower
// case) or GlobalWhitelist to the application names that may come from that
// region (compared exactly, as Eureka's Set.contains); a region with no
// list of its own uses the global one, and with neither every application
// comes through.
// Regions builds one Remote per region of urls (name -> Eureka URL,
// eureka.server.remote-region-urls-with-name), each from template with its
// Name and URL, and their Set; nil for no region.
func Regions(urls map[string]string, template Config, whitelist map[string][]string) (*Set, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	var remotes []*Remote
	for name, u := range urls {
		c := template
		c.Name, c.URL = name, u
		r, err := New(c)
		if err != nil {
			return nil, err
		}
		remotes = append(remotes, r)
	}
	return NewSet(remotes, whitelist), nil
}

func NewSet(remotes []*Remote, whitelist map[string][]string) *Set {
	s := &Set{byName: map[string]*Remote{}, white: map[string]map[string]bool{}}
	for _, r := range remotes {
		s.remotes = append(s.remotes, r)
		s.byName[r.Name()] = r
	}
	slices.SortFunc(s.remotes, func(a, b *Remote) int { return cmp.Compare(a.Name(), b.Name()) })
	for k, apps := range whitelist {
		m := map[string]bool{}
		for _, a := range apps {
			m[a] = true
		}
		s.white[strings.ToLower(k)] = m
	}
	return s
}

// Len is the number of remote regions.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.remotes)
}

// Remotes returns the regions sorted by name.
func (s *Set) Remotes() []*Remote {
	if s == nil {
		return nil
	}
	return s.remotes
}

// Get returns the region of that name (lower case).
func (s *Set) Get(name string) *Remote {
	if s == nil {
		return nil
	}
	return s.byName[name]
}

// Ready reports whether every region has answered once: Eureka's
// shouldAllowAccess(true) refuses every read naming regions (403) until
// then, whichever regions it names.
func (s *Set) Ready() bool {
	for _, r := range s.Remotes() {
		if !r.Ready() {
			return false
		}
	}
	return true
}

// Allowed reports whether app may come from region
// (shouldFetchFromRemoteRegistry).
func (s *Set) Allowed(region, app string) bool {
	w, ok := s.white[region]
	if !ok {
		w, ok = s.white[GlobalWhitelist]
	}
	return !ok || w[app]
}

// Run runs every region's fetch loop until ctx is done.
func (s *Set) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, r := range s.Remotes() {
		wg.Go(func() { r.Run(ctx) })
	}
	wg.Wait()
	return nil
}

// Statuses returns every region's state, by name.
func (s *Set) Statuses() []Status {
	var out []Status
	for _, r := range s.Remotes() {
		out = append(out, r.Status())
	}
	return out
}

// ParseRegions reads a ?regions= value as Eureka does: lower-cased, split at
// commas, sorted (so that the same regions in another order share a cache
// entry). "" is no regions.
func ParseRegions(v string) []string {
	if v == "" {
		return nil
	}
	out := strings.Split(strings.ToLower(v), ",")
	slices.Sort(out)
	return out
}
