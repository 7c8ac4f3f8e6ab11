package goreka_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// README's section "Envoy and gRPC (xDS)" shows the bootstraps in deploy/xds/ as they are, and the compat
// suite (compat/suite/xds_test.go, TestXDS) runs those files against real Envoy and grpc-java, only their
// ports changed: so the bootstraps a reader copies are the ones proven.
func TestDocsXDSBootstraps(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "\n## Envoy and gRPC (xDS)\n")
	if start < 0 {
		t.Fatal(`README.md has no section "Envoy and gRPC (xDS)"`)
	}
	section := readme[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	files, err := filepath.Glob(filepath.Join("deploy", "xds", "*"))
	if err != nil || len(files) < 3 {
		t.Fatalf("deploy/xds holds %q (%v), want the Envoy ADS and REST bootstraps and the gRPC one", files, err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(section, "\n"+string(body)+"```\n") {
			t.Errorf("README's xDS section does not show %s as it is (a fenced block holding the whole file)", f)
		}
		if !strings.Contains(section, "`"+filepath.ToSlash(f)+"`") {
			t.Errorf("README's xDS section does not name %s", f)
		}
	}
	suite, err := os.ReadFile(filepath.Join("compat", "suite", "xds_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := filepath.Base(f); !strings.Contains(string(suite), `"`+name+`"`) {
			t.Errorf("compat/suite/xds_test.go does not run %s", f)
		}
	}
}
