package namespace

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Default is the name of the registry served at /eureka/...: the value of
// the namespace label of its metrics and of goreka ctl's -namespace.
// /ns/default/eureka/... is the same registry.
const Default = "default"

// Validate checks a namespace name: a DNS label (RFC 1123) in lower case,
// 1 to 63 letters, digits and '-', neither first nor last. The error, which
// wraps ErrInvalidName, says what is wrong.
func Validate(name string) error {
	switch {
	case name == "":
		return invalid(name, "namespace name is empty")
	case len(name) > 63:
		return invalid(name, "namespace name "+quote(name)+" is longer than 63 characters")
	case name[0] == '-' || name[len(name)-1] == '-':
		return invalid(name, "namespace name "+quote(name)+" starts or ends with '-'")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return invalid(name, "namespace name "+quote(name)+
				" may only hold lower-case letters, digits and '-' (a DNS label)")
		}
	}
	return nil
}

// quote quotes a name for a message; a name from a request may be long or
// not UTF-8.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}

// snapshotSuffix separates a namespace's snapshot file name from
// goreka.snapshot.path; start-up finds the auto-created namespaces by it.
const snapshotSuffix = ".ns-"

// SnapshotPath is the snapshot file of namespace name: path
// (goreka.snapshot.path) itself for the default one, path + ".ns-" + name
// for the others; "" when path is "" (snapshots off).
func SnapshotPath(path, name string) string {
	if path == "" || name == Default {
		return path
	}
	return path + snapshotSuffix + name
}

// SnapshotNames lists, by name, the namespaces other than the default one
// that have a snapshot file (a regular file at SnapshotPath(path, name)
// with a valid name).
func SnapshotNames(path string) []string {
	if path == "" {
		return nil
	}
	matches, _ := filepath.Glob(path + snapshotSuffix + "*")
	var out []string
	for _, m := range matches {
		name := strings.TrimPrefix(m, path+snapshotSuffix)
		if Validate(name) == nil && name != Default {
			if st, err := os.Stat(m); err == nil && st.Mode().IsRegular() {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}
