package main

import (
	"testing"

	"github.com/goreka/goreka/cmd/goreka/config"
)

func TestPeerURLsStandaloneByDefault(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no service-url: standalone", []string{"--server.port=8762"}, 0},
		{"explicit defaultZone", []string{"--server.port=8762", "--eureka.client.service-url.defaultZone=http://peer:8761/eureka/"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load(tc.args, nil, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.ReplicationURLs(); len(got) != tc.want {
				t.Fatalf("ReplicationURLs = %v, want %d", got, tc.want)
			}
		})
	}
}
