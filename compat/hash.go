package compat

import (
	"slices"
	"strconv"

	"github.com/goreka/goreka/registry"
)

// HashCode computes apps__hashcode over every instance of apps, as
// Applications.getReconcileHashCode does: the count of instances per status,
// in byte order of the status name, each written as NAME_count_. An empty
// document (or nil) hashes to "". Instances with a nil Instance are not
// counted.
func HashCode(apps *registry.Applications) string {
	if apps == nil {
		return ""
	}
	// The five known statuses in byte order; anything else goes to other.
	known := [...]registry.Status{
		registry.StatusDown, registry.StatusOutOfService, registry.StatusStarting,
		registry.StatusUnknown, registry.StatusUp,
	}
	var counts [len(known)]int
	var other map[registry.Status]int
	for i := range apps.Apps {
		for j := range apps.Apps[i].Instances {
			in := apps.Apps[i].Instances[j].Instance
			if in == nil {
				continue
			}
			if k := slices.Index(known[:], in.Status); k >= 0 {
				counts[k]++
				continue
			}
			if other == nil {
				other = make(map[registry.Status]int)
			}
			other[in.Status]++
		}
	}
	type entry struct {
		status registry.Status
		n      int
	}
	entries := make([]entry, 0, len(known)+len(other))
	for k, s := range known {
		if counts[k] > 0 {
			entries = append(entries, entry{s, counts[k]})
		}
	}
	for s, n := range other {
		entries = append(entries, entry{s, n})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.status < b.status:
			return -1
		case a.status > b.status:
			return 1
		}
		return 0
	})
	var b []byte
	for _, e := range entries {
		b = append(b, e.status...)
		b = append(b, '_')
		b = strconv.AppendInt(b, int64(e.n), 10)
		b = append(b, '_')
	}
	return string(b)
}
