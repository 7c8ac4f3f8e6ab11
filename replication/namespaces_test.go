package replication

import (
	"log/slog"
	"testing"
)

// A stock Java peer (goreka.namespaces.stock-peers) gets no namespace;
// goreka peers get each at /ns/{name}/eureka/, credentials kept.
func TestNamespacePeers(t *testing.T) {
	peers, err := Peers([]string{"http://u:p@10.0.0.1:8761/eureka/", "http://10.0.0.2:8761/eureka/", "http://10.0.0.3/"},
		SelfInfo{HostName: "10.0.0.9", Port: 8761})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	got := NamespacePeers("dev", peers, []string{"http://10.0.0.2:8761/eureka/"}, log)
	if len(got) != 1 || got[0].URL != "http://10.0.0.1:8761/ns/dev/eureka/" || got[0].auth != peers[0].auth {
		t.Fatalf("dev peers: %+v", got)
	}
	if got := NamespacePeers("dev", peers, []string{"10.0.0.1:8761"}, log); len(got) != 1 || got[0].Host != "10.0.0.2" {
		t.Fatalf("dev peers with host:port stock peer: %+v", got)
	}
}

func TestPeerIsAt(t *testing.T) {
	p, err := ParsePeer("https://Eureka-1.example:443/eureka/")
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"https://eureka-1.example/eureka/":     true, // the scheme's default port
		"https://eureka-1.example:443/":        true,
		"http://eureka-1.example/eureka/":      false, // port 80
		"eureka-1.example:443":                 true,
		"EUREKA-1.EXAMPLE:443":                 true,
		"eureka-1.example:8761":                false,
		"eureka-1.example":                     false,
		"https://eureka-2.example:443/eureka/": false,
	} {
		if got := p.IsAt(addr); got != want {
			t.Errorf("IsAt(%q) = %v, want %v", addr, got, want)
		}
	}
}
