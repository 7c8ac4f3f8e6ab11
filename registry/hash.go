package registry

import (
	"slices"
	"strconv"
	"strings"
)

// apps__hashcode is Eureka's Applications.getReconcileHashCode: the number
// of instances per status, "NAME_count_" for every status with instances, in
// byte order of the names ("DOWN_1_UP_3_"; "" for none). A client applies a
// delta and compares its copy's hash with the delta's apps__hashcode; a
// mismatch makes it fetch the full registry. Every document goreka serves
// or checks gets its hash from here: the registry's own counts (hashCode),
// a document's instances (ReconcileHashCode) and the sums of a local and a
// remote region's counts (ParseHashCode, HashCode).

// HashCode writes apps__hashcode for per-status counts; zero and negative
// counts are left out.
func HashCode(counts map[Status]int) string { return hashCode(counts) }

func hashCode(counts map[Status]int) string {
	names := make([]Status, 0, len(counts))
	for s, n := range counts {
		if n > 0 {
			names = append(names, s)
		}
	}
	slices.Sort(names)
	var b []byte
	for _, s := range names {
		b = append(b, s...)
		b = append(b, '_')
		b = strconv.AppendInt(b, int64(counts[s]), 10)
		b = append(b, '_')
	}
	return string(b)
}

// ReconcileHashCode computes apps__hashcode over every instance of the
// document, whatever its HashCode field says. A nil or empty document
// hashes to ""; a LeaseView without an Instance is not counted.
func (a *Applications) ReconcileHashCode() string {
	if a == nil {
		return ""
	}
	counts := make(map[Status]int, 5)
	for i := range a.Apps {
		for _, v := range a.Apps[i].Instances {
			if v.Instance != nil {
				counts[v.Instance.Status]++
			}
		}
	}
	return hashCode(counts)
}

// ParseHashCode reads an apps__hashcode back and adds its counts into into
// (a status name may hold underscores itself: OUT_OF_SERVICE_2_). Pieces
// that are not NAME_count_ pairs are skipped.
func ParseHashCode(code string, into map[Status]int) {
	var name []string
	for tok := range strings.SplitSeq(code, "_") {
		if tok == "" {
			continue
		}
		if n, ok := atoi(tok); ok && len(name) > 0 {
			into[Status(strings.Join(name, "_"))] += n
			name = name[:0]
			continue
		}
		name = append(name, tok)
	}
}

// atoi reads a run of decimal digits; false for anything else.
func atoi(s string) (int, bool) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
