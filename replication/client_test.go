package replication

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/internal/proctest"
)

// TestLargeBatchToADeafPeerFailsAfterAReadTimeout: what the doc says of a
// batch to a hung peer holds for one too large for the socket buffers
// (25 MB) sent to a peer that accepts and never reads: it fails after about
// one read timeout, as congestion, not when the sender's context ends.
func TestLargeBatchToADeafPeerFailsAfterAReadTimeout(t *testing.T) {
	t.Parallel()
	addr := proctest.Deaf(t)
	const read = 200 * time.Millisecond
	h := newHTTPClient(&Config{PeerNodeConnectTimeout: time.Second, PeerNodeReadTimeout: read, UserAgent: "test"})
	items := make([]compat.ReplicationItem, 0, 20000)
	pad := strings.Repeat("x", 1<<10)
	for i := range cap(items) {
		items = append(items, compat.ReplicationItem{AppName: "A", ID: fmt.Sprint(pad, i), Action: compat.ActionHeartbeat})
	}
	p := mustPeer(t, "http://"+addr+"/eureka/")
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	start := time.Now()
	_, err := h.sendBatch(ctx, &p, items)
	took := time.Since(start)
	if err == nil || classify(err) != failCongestion || ctx.Err() != nil {
		t.Fatalf("batch to a deaf peer: %v (%v) after %v, want a read timeout", err, classify(err), took)
	}
	if took > 10*time.Second {
		t.Errorf("gave up after %v with a read timeout of %v", took, read)
	}
}
