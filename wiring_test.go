package goreka_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cmd/goreka only wires (issue 25): its non-test files stay within this
// many lines. Logic that grows there belongs in the package it configures.
const wiringCeiling = 1000

func TestMainIsOnlyWiring(t *testing.T) {
	files, err := filepath.Glob("cmd/goreka/*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += bytes.Count(b, []byte("\n"))
	}
	if total > wiringCeiling {
		t.Errorf("cmd/goreka has %d non-test lines, more than its ceiling of %d: move logic into the package it wires", total, wiringCeiling)
	}
}
