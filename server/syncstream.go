package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	kgzip "github.com/klauspost/compress/gzip"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/replication"
)

// RevisionHeader names the registry revision a streamed document is
// exactly (GET apps/ with replication.SyncHeader).
const RevisionHeader = "X-Goreka-Revision"

// syncWriteStall is the longest a write of the streamed registry may wait
// for the peer to read.
const syncWriteStall = time.Minute

// syncStreamAsked reports whether a full fetch is a goreka peer's start-up
// sync asking for the streamed registry (replication.SyncHeader).
func syncStreamAsked(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get(replication.SyncHeader) == replication.SyncStream
}

// serveSyncStream answers a peer's start-up sync: the full registry
// encoded from one view as it is sent, the headers first (a flush), so the
// peer's read timeout never waits for a build and what it copies is exactly
// one revision, never an older cached copy (whose cancelled instances would
// be ghosts on the joiner). gzip at the fastest level when asked: the
// stream is compressed once, for one reader. It reports false when the
// documents are not the local registry's (a relay) and the cache serves.
func (s *Server) serveSyncStream(c *gin.Context) bool {
	r := c.Request
	f := compat.FormatFromAccept(r.Header.Get("Accept"))
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))
	w := c.Writer
	// The server's write timeout bounds a whole answer; a registry that
	// keeps streaming (1.1 GB of JSON at 1M instances) is instead bounded
	// by its progress: each write must leave within syncWriteStall.
	rc := http.NewResponseController(w)
	var zw *kgzip.Writer
	ok, err := s.docs.StreamFull(writerFunc(func(p []byte) (int, error) {
		// A socket deadline is wall-clock time, not the injected clock.
		rc.SetWriteDeadline(time.Now().Add(syncWriteStall)) // ErrNotSupported under httptest.ResponseRecorder
		if zw != nil {
			return zw.Write(p)
		}
		return w.Write(p)
	}), f, func(rev int64) {
		h := w.Header()
		h["Content-Type"] = []string{f.ContentType()}
		h[RevisionHeader] = []string{strconv.FormatInt(rev, 10)}
		if gz {
			h["Content-Encoding"] = []string{"gzip"}
			zw, _ = kgzip.NewWriterLevel(w, kgzip.BestSpeed)
		}
		w.WriteHeader(http.StatusOK)
		w.Flush()
	})
	if !ok {
		return false
	}
	if err == nil && zw != nil {
		err = zw.Close()
	}
	if err != nil {
		s.log.Warn("streaming the registry to a peer", "err", err)
	}
	return true
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
