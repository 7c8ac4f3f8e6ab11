package cache

import (
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A read while a registry document is rebuilt (a slow build: 5 s of the
// bubble's clock) gets the previous payload at once, and that payload is
// exactly one revision: its bytes and its Revision are the same
// revision's, never a mix; after the build the next read is the new
// revision.
func TestReadDuringSlowBuildGetsPreviousRevision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rev atomic.Int64
		rev.Store(1)
		var slow atomic.Bool
		load := func(k Key, w io.Writer) (bool, error) {
			r := rev.Load()
			if rw, ok := w.(RevisionWriter); ok {
				rw.SetRevision(r)
			}
			fmt.Fprintf(w, "head r%d|", r)
			if slow.Load() {
				time.Sleep(5 * time.Second) // the encode of a large registry
			}
			fmt.Fprintf(w, "tail r%d", r)
			return true, nil
		}
		c := NewStreaming(DefaultConfig(), load)
		full := Key{Entity: Application, Name: AllApps, JSON: true}
		v := mustGet(t, c, full)
		if v.Revision != 1 || string(v.Plain) != "head r1|tail r1" || v.RevisionHeader()[0] != "1" {
			t.Fatalf("first build: revision %d, %q", v.Revision, v.Plain)
		}
		startRun(t, c)
		slow.Store(true)
		rev.Store(2)
		c.Invalidate("APP", "", "")
		synctest.Wait() // the rebuild is under way, asleep in the loader
		start := time.Now()
		v = mustGet(t, c, full)
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("the read waited %v for the build", waited)
		}
		if v.Revision != 1 || string(v.Plain) != "head r1|tail r1" {
			t.Fatalf("read during the build: revision %d, %q; want revision 1's payload", v.Revision, v.Plain)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		v = mustGet(t, c, full)
		if v.Revision != 2 || string(v.Plain) != "head r2|tail r2" {
			t.Fatalf("after the build: revision %d, %q", v.Revision, v.Plain)
		}
	})
}

// The same for a registry document nobody read since its last change (the
// case a peer's sync and a client's first read hit): its last copy is
// served at once while the pass its read woke rebuilds it.
func TestReadOfUnreadDocumentDuringSlowBuild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rev atomic.Int64
		rev.Store(1)
		var slow atomic.Bool
		load := func(k Key, w io.Writer) (bool, error) {
			r := rev.Load()
			w.(RevisionWriter).SetRevision(r)
			if slow.Load() {
				time.Sleep(5 * time.Second)
			}
			fmt.Fprintf(w, "r%d", r)
			return true, nil
		}
		c := NewStreaming(DefaultConfig(), load)
		full := Key{Entity: Application, Name: AllApps}
		mustGet(t, c, full)
		startRun(t, c)
		// Rebuilt once (it was read), then unread: kept, dirty.
		rev.Store(2)
		c.Invalidate("APP", "", "")
		time.Sleep(DefaultMinRefreshGap)
		synctest.Wait()
		rev.Store(3)
		c.Invalidate("APP", "", "")
		time.Sleep(DefaultMinRefreshGap)
		synctest.Wait()
		slow.Store(true)
		start := time.Now()
		v := mustGet(t, c, full)
		if time.Since(start) != 0 || v.Revision != 2 || string(v.Plain) != "r2" {
			t.Fatalf("read of the unread document: revision %d %q after %v", v.Revision, v.Plain, time.Since(start))
		}
		time.Sleep(DefaultMinRefreshGap + 5*time.Second)
		synctest.Wait()
		if v = mustGet(t, c, full); v.Revision != 3 || string(v.Plain) != "r3" {
			t.Fatalf("after the pass its read woke: revision %d %q", v.Revision, v.Plain)
		}
	})
}
