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

// RevisionHeader names the registry revision a document is exactly: a
// header of the cached documents, a trailer of the streamed one (GET apps/
// with replication.SyncHeader), whose revision is known only once its
// headers are sent.
const RevisionHeader = compat.RevisionHeader

// EpochHeader names the registry's sequence of revisions (registry.Epoch):
// sent with RevisionHeader and on the read API's watch, so that a reader
// behind one address in front of several servers, or of a restarted one,
// compares revisions only within one sequence.
const EpochHeader = compat.EpochHeader

// syncWriteStall is the longest a write of the streamed registry may wait
// for the peer to read.
const syncWriteStall = time.Minute

// syncStreamAsked reports whether a full fetch is a goreka peer's start-up
// sync asking for the streamed registry (replication.SyncHeader).
func syncStreamAsked(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get(replication.SyncHeader) == replication.SyncStream
}

// serveSyncStream answers a peer's start-up sync: the headers first (a
// flush), then the full registry encoded from one view as it is sent, so
// the peer's read timeout never waits for a build and what it copies is
// exactly one revision, never an older cached copy (whose cancelled
// instances would be ghosts on the joiner). gzip at the fastest level when
// asked: the stream is compressed once, for one reader. A relay streams its
// local registry, not the union its clients read (document.StreamFull).
func (s *Server) serveSyncStream(c *gin.Context) {
	r := c.Request
	f := compat.FormatFromAccept(r.Header.Get("Accept"))
	w := c.Writer
	h := w.Header()
	h["Content-Type"] = []string{f.ContentType()}
	h["Trailer"] = []string{RevisionHeader}
	var zw *kgzip.Writer
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h["Content-Encoding"] = []string{"gzip"}
		zw, _ = kgzip.NewWriterLevel(w, kgzip.BestSpeed)
	}
	w.WriteHeader(http.StatusOK)
	w.Flush()
	// The server's write timeout bounds a whole answer; a registry that
	// keeps streaming (1.1 GB of JSON at 1M instances) is instead bounded
	// by its progress: each write must leave within syncWriteStall. A
	// socket deadline is wall-clock time, not the injected clock.
	rc := http.NewResponseController(w)
	write := func(p []byte) (int, error) {
		rc.SetWriteDeadline(time.Now().Add(syncWriteStall)) // ErrNotSupported under a recorder
		if zw != nil {
			return zw.Write(p)
		}
		return w.Write(p)
	}
	flush := func() {
		if zw != nil {
			zw.Flush()
		}
		w.Flush()
	}
	// Until the view is taken (begin), the keep-alive alone writes.
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		// White space (valid before a JSON document) while the registry view
		// is taken, so that the peer's read timeout, which bounds every wait
		// for bytes, does not run out on a large registry's view (it did at 1M
		// instances: 5 s); as often as that timeout needs (SyncKeepAlive).
		t := time.NewTicker(replication.SyncKeepAlive(r.Header.Get(replication.SyncReadTimeoutHeader)))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				write([]byte{' '})
				flush()
			}
		}
	}()
	stopped := false
	stopKeepAlive := func() {
		if !stopped {
			stopped = true
			close(stop)
			<-done
		}
	}
	var rev int64
	err := s.docs.StreamFull(writerFunc(write), f, func(revision int64) {
		rev = revision
		stopKeepAlive()
	})
	stopKeepAlive()
	if err == nil && zw != nil {
		err = zw.Close()
	}
	h[RevisionHeader] = []string{strconv.FormatInt(rev, 10)}
	if err != nil {
		s.log.Warn("streaming the registry to a peer", "err", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
