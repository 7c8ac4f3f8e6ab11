package replication

import (
	"encoding/base64"
	"slices"
	"testing"
)

func urlsOf(ps []Peer) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.URL)
	}
	return out
}

func TestPeersSelfExclusion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		urls []string
		self SelfInfo
		want []string
	}{
		{
			name: "same host other port is a peer (Eureka would drop it)",
			urls: []string{"http://node1:8761/eureka/", "http://node1:8762/eureka/"},
			self: SelfInfo{HostName: "node1", Port: 8761},
			want: []string{"http://node1:8762/eureka/"},
		},
		{
			name: "host only when the port is unknown",
			urls: []string{"http://node1:8761/eureka/", "http://node1:8762/eureka/", "http://node2:8761/eureka/"},
			self: SelfInfo{HostName: "node1"},
			want: []string{"http://node2:8761/eureka/"},
		},
		{
			name: "ip address and host case",
			urls: []string{"http://10.0.0.1:8761/eureka/", "http://NODE1:8761/eureka/", "http://node2:8761/eureka/"},
			self: SelfInfo{HostName: "node1", IPAddr: "10.0.0.1", Port: 8761},
			want: []string{"http://node2:8761/eureka/"},
		},
		{
			name: "loopback aliases on our port are us",
			urls: []string{"http://localhost:8761/eureka/", "http://127.0.0.1:8761/eureka/", "http://[::1]:8761/eureka/", "http://127.0.0.1:8762/eureka/"},
			self: SelfInfo{HostName: "node1", Port: 8761},
			want: []string{"http://127.0.0.1:8762/eureka/"},
		},
		{
			name: "other loopback addresses on our port are peers when we bind one address",
			urls: []string{"http://127.0.0.2:8761/eureka/", "http://127.0.0.3:8761/eureka/", "http://localhost:8761/eureka/", "http://127.0.0.4:8761/eureka/"},
			self: SelfInfo{HostName: "127.0.0.2", IPAddr: "127.0.0.1", Port: 8761, BindAddress: "127.0.0.2"},
			want: []string{"http://127.0.0.3:8761/eureka/", "http://localhost:8761/eureka/", "http://127.0.0.4:8761/eureka/"},
		},
		{
			name: "loopback aliases are us when we bind all interfaces or 127.0.0.1",
			urls: []string{"http://127.0.0.3:8761/eureka/", "http://localhost:8761/eureka/", "http://127.0.0.1:8761/eureka/", "http://node2:8761/eureka/"},
			self: SelfInfo{HostName: "node1", Port: 8761, BindAddress: "0.0.0.0"},
			want: []string{"http://node2:8761/eureka/"},
		},
		{
			name: "bound to 127.0.0.1",
			urls: []string{"http://127.0.0.3:8761/eureka/", "http://localhost:8761/eureka/", "http://127.0.0.1:8761/eureka/"},
			self: SelfInfo{HostName: "node1", Port: 8761, BindAddress: "127.0.0.1"},
			want: []string{"http://127.0.0.3:8761/eureka/"},
		},
		{
			name: "loopback URLs are peers when we bind a non-loopback address",
			urls: []string{"http://127.0.0.1:8761/eureka/", "http://10.0.0.1:8761/eureka/"},
			self: SelfInfo{HostName: "node1", IPAddr: "10.0.0.1", Port: 8761, BindAddress: "10.0.0.1"},
			want: []string{"http://127.0.0.1:8761/eureka/"},
		},
		{
			name: "my-url wins over host and port, normalised",
			urls: []string{"http://Node1:80/eureka", "http://node1:8761/eureka/", "http://localhost:8761/eureka/"},
			self: SelfInfo{MyURL: "http://node1/eureka/", HostName: "node1", Port: 8761},
			want: []string{"http://node1:8761/eureka/", "http://localhost:8761/eureka/"},
		},
		{
			name: "my-url ignores credentials",
			urls: []string{"http://u:p@node1:8761/eureka/", "http://u:p@node2:8761/eureka/"},
			self: SelfInfo{MyURL: "http://node1:8761/eureka/"},
			want: []string{"http://node2:8761/eureka/"},
		},
		{
			name: "duplicates and trailing slash",
			urls: []string{"http://node2:8761/eureka", "http://node2:8761/eureka/", " http://node3:8761/eureka/ "},
			self: SelfInfo{HostName: "node1", Port: 8761},
			want: []string{"http://node2:8761/eureka/", "http://node3:8761/eureka/"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Peers(tc.urls, tc.self)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(urlsOf(got), tc.want) {
				t.Errorf("peers = %q, want %q", urlsOf(got), tc.want)
			}
		})
	}
}

func TestPeersCredentials(t *testing.T) {
	t.Parallel()
	ps, err := Peers([]string{"http://admin:s%3Acret@node2:8761/eureka/", "http://user@node3:8761/eureka/", "ftp://x/", "http://"}, SelfInfo{HostName: "node1", Port: 8761})
	if err == nil {
		t.Error("bad URLs gave no error")
	}
	if len(ps) != 2 {
		t.Fatalf("got %d peers, want 2", len(ps))
	}
	p := ps[0]
	if p.URL != "http://node2:8761/eureka/" || p.BaseURL != p.URL || p.Host != "node2" || p.Port != 8761 {
		t.Errorf("peer = %+v", p)
	}
	if want := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:s:cret")); p.auth != want {
		t.Errorf("auth = %q, want %q", p.auth, want)
	}
	if ps[1].auth != "" {
		t.Errorf("user without password gave auth %q", ps[1].auth)
	}
	if got := scrub("http://a:b@h:1/eureka/"); got != "http://h:1/eureka/" {
		t.Errorf("scrub = %q", got)
	}
}

// TestPeerInNamespace: a peer's namespaced URL is one the goreka server
// routes to the namespace (/ns/{name}/ before the Eureka root, which it
// then normalises as at the root: /eureka/, /eureka/v2/, /v2/), wherever
// the peer's context path puts that root; credentials are kept.
func TestPeerInNamespace(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"http://h:8761/eureka/":           "http://h:8761/ns/dev/eureka/",
		"http://h:8761/eureka":            "http://h:8761/ns/dev/eureka/",
		"http://h:8761/eureka/v2/":        "http://h:8761/ns/dev/eureka/v2/",
		"http://h:8761/eureka/v2":         "http://h:8761/ns/dev/eureka/v2/",
		"http://h:8761/v2/":               "http://h:8761/ns/dev/v2/",
		"http://h:8761/registry/eureka/":  "http://h:8761/registry/ns/dev/eureka/",
		"http://h:8761/reg/eureka/v2/":    "http://h:8761/reg/ns/dev/eureka/v2/",
		"http://eureka/v2/":               "http://eureka/ns/dev/v2/", // a host named eureka is no path
		"https://u:p%2Fw@h/eureka/v2/":    "https://h/ns/dev/eureka/v2/",
		"http://admin:s3cret@h:1/eureka/": "http://h:1/ns/dev/eureka/",
	} {
		p, err := ParsePeer(raw)
		if err != nil {
			t.Fatal(err)
		}
		q, ok := p.InNamespace("dev")
		if !ok || q.URL != want || q.BaseURL != want {
			t.Errorf("%s: %q %q %v, want %q", raw, q.URL, q.BaseURL, ok, want)
		}
		if q.auth != p.auth || q.Host != p.Host || q.Port != p.Port {
			t.Errorf("%s: %+v lost the credentials or address of %+v", raw, q, p)
		}
	}
	p, _ := ParsePeer("http://admin:s3cret@h:1/eureka/")
	if q, _ := p.InNamespace("dev"); q.auth != "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:s3cret")) {
		t.Errorf("credentials: %q", q.auth)
	}
	for _, raw := range []string{"http://h:8761/", "http://h:8761"} {
		p, _ := ParsePeer(raw)
		if q, ok := p.InNamespace("dev"); ok {
			t.Errorf("%s: %+v, want no namespaced URL", raw, q)
		}
	}
}
