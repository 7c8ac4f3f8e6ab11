package namespace

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, ok := range []string{"dev", "a", "team-1", "0a", strings.Repeat("x", 63)} {
		if err := Validate(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for name, want := range map[string]string{
		"":                      "empty",
		"Dev":                   "lower-case",
		"-dev":                  "starts or ends",
		"dev-":                  "starts or ends",
		"d.v":                   "lower-case",
		"dév":                   "lower-case",
		strings.Repeat("x", 64): "longer than 63",
	} {
		err := Validate(name)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalidName) {
			t.Errorf("%q: %v, want an ErrInvalidName saying %q", name, err, want)
		}
	}
	// The message README quotes.
	if err := Validate("Dev"); err.Error() != `namespace name "Dev" may only hold lower-case letters, digits and '-' (a DNS label)` {
		t.Errorf("Dev: %q", err)
	}
	// A name from a request is quoted short and as UTF-8.
	if err := Validate(strings.Repeat("X", 100) + "\xff"); !strings.Contains(err.Error(), strings.Repeat("X", 80)+`..."`) {
		t.Errorf("long name: %q", err)
	}
}

func TestSnapshotFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "registry.snapshot")
	if got := SnapshotPath(path, Default); got != path {
		t.Errorf("default: %q", got)
	}
	if got := SnapshotPath(path, "dev"); got != path+".ns-dev" {
		t.Errorf("dev: %q", got)
	}
	if got := SnapshotPath("", "dev"); got != "" {
		t.Errorf("snapshots off: %q", got)
	}
	for _, f := range []string{"registry.snapshot", "registry.snapshot.ns-qa", "registry.snapshot.ns-dev",
		"registry.snapshot.ns-Bad", "registry.snapshot.ns-default"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "registry.snapshot.ns-dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := SnapshotNames(path); !slices.Equal(got, []string{"dev", "qa"}) {
		t.Errorf("SnapshotNames = %v, want [dev qa]", got)
	}
	if got := SnapshotNames(""); got != nil {
		t.Errorf("SnapshotNames(\"\") = %v", got)
	}
}
