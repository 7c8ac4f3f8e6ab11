package tlsconf

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Expirer is what the collector reads: *Server and *Client.
type Expirer interface {
	Expiry() map[string]time.Time
}

var expiryDesc = prometheus.NewDesc("goreka_tls_certificate_expiry_seconds",
	"When the certificate in use runs out (NotAfter, Unix seconds), by use: server, client (goreka's own certificates), server-trust, client-trust (the earliest of the trusted CAs). Read at scrape time, so a rotated file shows at once.",
	[]string{"use"}, nil)

type collector struct{ es []Expirer }

// Collector exports goreka_tls_certificate_expiry_seconds{use} for the
// given material (nil entries are skipped).
func Collector(es ...Expirer) prometheus.Collector {
	c := &collector{}
	for _, e := range es {
		if e != nil && !isNilPtr(e) {
			c.es = append(c.es, e)
		}
	}
	return c
}

func isNilPtr(e Expirer) bool {
	switch v := e.(type) {
	case *Server:
		return v == nil
	case *Client:
		return v == nil
	}
	return false
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) { ch <- expiryDesc }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.es {
		for use, t := range e.Expiry() {
			ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, float64(t.Unix()), use)
		}
	}
}
