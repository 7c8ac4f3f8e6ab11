package replication

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// BenchmarkDecodeRegistry decodes a 10k-instance registry document:
// "stream" is the sync's decoder (instances found by jsonStream, each
// decoded by compat.DecodeInstance, in batches); "whole" is
// compat.DecodeApplications of the whole document, the sync's before.
func BenchmarkDecodeRegistry(b *testing.B) {
	reg := registry.New(registry.Options{})
	now := time.UnixMilli(1_700_000_000_000)
	for i := range 10_000 {
		in := instance(fmt.Sprintf("APP-%03d", i%200), fmt.Sprintf("host-%05d", i), now)
		in.Metadata = map[string]string{"management.port": "8080", "zone": "z1"}
		in.HomePageURL, in.HealthCheckURL = "http://h:8080/", "http://h:8080/actuator/health"
		if _, err := reg.Register(in, false); err != nil {
			b.Fatal(err)
		}
	}
	var doc bytes.Buffer
	if err := compat.WriteApplications(&doc, compat.JSON, false, reg.Applications()); err != nil {
		b.Fatal(err)
	}
	b.Run("stream", func(b *testing.B) {
		b.SetBytes(int64(doc.Len()))
		for b.Loop() {
			n := 0
			if err := decodeAppsStream(bytes.NewReader(doc.Bytes()), syncBatch, func(ins []*registry.Instance) error { n += len(ins); return nil }); err != nil || n != 10_000 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(doc.Len()))
		for b.Loop() {
			if _, err := compat.DecodeApplications(doc.Bytes(), compat.JSON); err != nil {
				b.Fatal(err)
			}
		}
	})
}
