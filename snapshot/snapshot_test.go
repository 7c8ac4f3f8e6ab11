package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func instance(app, id string, s registry.Status) *registry.Instance {
	return &registry.Instance{
		InstanceID: id, HostName: id + ".local", App: app, IPAddr: "10.0.0.7", Status: s,
		Port: registry.Port{Number: 8080, Enabled: true}, SecurePort: registry.Port{Number: 8443},
		CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		VIPAddress: strings.ToLower(app), SecureVIPAddress: strings.ToLower(app),
		HomePageURL: "http://" + id + ":8080/", Metadata: map[string]string{"zone": "a", "quote": `"x"<&>`},
	}
}

// filled returns a registry on clock c with instances in several states,
// an override, REST metadata and an Amazon instance.
func filled(t *testing.T, c *clocktest.Clock) *registry.Registry {
	t.Helper()
	r := registry.New(registry.Options{Now: c.Now, SelfID: "eureka-1"})
	must := func(_ *registry.Instance, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	a := instance("ORDERS", "orders-1", registry.StatusUp)
	a.LeaseInfo = registry.LeaseInfo{RenewalInterval: 10 * time.Second, Duration: 30 * time.Second}
	must(r.Register(a, false))
	must(r.Register(instance("ORDERS", "orders-2", registry.StatusStarting), false))
	aws := instance("BILLING", "", registry.StatusUp)
	aws.HostName = "ip-10-0-0-9"
	aws.DataCenterInfo = registry.DataCenterInfo{Name: registry.DataCenterAmazon, Metadata: map[string]string{"instance-id": "i-123", "availability-zone": "eu-1a"}}
	must(r.Register(aws, true))
	must(r.Register(instance("EUREKA", "eureka-1", registry.StatusUp), false))
	c.Advance(time.Second)
	if err := r.StatusUpdate("ORDERS", "orders-1", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	must(r.UpdateMetadata("ORDERS", "orders-2", map[string]string{"weight": "5"}))
	return r
}

// wireOf is what GET /apps shows of v, minus the renewal time, which a
// restore resets.
func wireOf(v registry.LeaseView) string {
	v.LastRenewalTimestamp = time.Time{}
	return string(compat.AppendInstanceBody(nil, &v))
}

func TestMarshalRestoreRoundTrip(t *testing.T) {
	c := clocktest.New(t0)
	src := filled(t, c)
	snap := src.Export()
	data := Marshal(snap, c.Now(), "eureka-1")

	f, err := Unmarshal(data)
	if err != nil {
		t.Fatalf("Unmarshal: %v\n%s", err, data)
	}
	if f.Version != Version || !f.Written.Equal(c.Now()) || f.Server != "eureka-1" {
		t.Errorf("header %+v", f)
	}
	c.Advance(10 * time.Minute)
	dst := registry.New(registry.Options{Now: c.Now, SelfID: "eureka-1"})
	if n := dst.Restore(f.Snapshot); n != len(snap.Instances) {
		t.Fatalf("restored %d of %d", n, len(snap.Instances))
	}
	after := dst.Export()
	if len(after.Instances) != len(snap.Instances) {
		t.Fatalf("%d instances after restore, want %d", len(after.Instances), len(snap.Instances))
	}
	for i := range snap.Instances {
		if got, want := wireOf(after.Instances[i]), wireOf(snap.Instances[i]); got != want {
			t.Errorf("instance %d:\n got %s\nwant %s", i, got, want)
		}
		if !after.Instances[i].LastRenewalTimestamp.Equal(c.Now()) {
			t.Errorf("instance %d: lease not fresh", i)
		}
	}
	if !reflect.DeepEqual(after.Overrides, snap.Overrides) || dst.HashCode() != src.HashCode() {
		t.Errorf("overrides %v hash %s, want %v %s", after.Overrides, dst.HashCode(), snap.Overrides, src.HashCode())
	}
}

func TestMarshalShape(t *testing.T) {
	c := clocktest.New(t0)
	data := Marshal(filled(t, c).Export(), c.Now(), "eureka-1")
	if !bytes.HasPrefix(data, []byte(`{"format":"goreka-registry-snapshot","version":1,"written":"2026-03-01T12:00:01Z","server":"eureka-1","count":4,`)) {
		t.Errorf("header: %.160s", data)
	}
	// One instance per line, so that a snapshot reads and diffs well.
	if got := bytes.Count(data, []byte("\n{\"instanceId\"")) + bytes.Count(data, []byte("\n{\"hostName\"")); got != 4 {
		t.Errorf("%d instance lines, want 4", got)
	}
	body, trailer := data[:len(data)-trailerLen-1], data[len(data)-trailerLen-1:]
	want := fmt.Sprintf(`,"checksum":"crc32c:%08x"}`+"\n", crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	if string(trailer) != want {
		t.Errorf("trailer %q, want %q", trailer, want)
	}
	if !bytes.Contains(data, []byte(`"overrides":{"orders-1":"OUT_OF_SERVICE"}`)) {
		t.Errorf("overrides missing:\n%s", data)
	}
}

func TestEmptyRegistry(t *testing.T) {
	f, err := Unmarshal(Marshal(registry.Snapshot{}, t0, ""))
	if err != nil || len(f.Snapshot.Instances) != 0 || len(f.Snapshot.Overrides) != 0 {
		t.Fatalf("empty snapshot: %+v, %v", f, err)
	}
}

// withChecksum closes a hand-made body with a valid trailer.
func withChecksum(body string) []byte {
	return fmt.Appendf([]byte(body), `,"checksum":"crc32c:%08x"}`+"\n", crc32.Checksum([]byte(body), castagnoli))
}

func TestUnmarshalRejects(t *testing.T) {
	good := Marshal(filled(t, clocktest.New(t0)).Export(), t0, "s")
	header := `{"format":"goreka-registry-snapshot","version":`
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty file"},
		{"yaml", []byte("eureka:\n  server:\n    x: 1\n"), "not a goreka-registry-snapshot file"},
		{"other json", []byte(`{"applications":{}}`), "not a goreka-registry-snapshot file"},
		{"cut in header", good[:20], "truncated: ends inside the header"},
		{"cut in body", good[:len(good)/2], "truncated: no checksum trailer"},
		{"no newline is fine", bytes.TrimSuffix(good, []byte("\n")), ""},
		{"two newlines", append(bytes.Clone(good), '\n'), "truncated: no checksum trailer"},
		{"bad hex", append(bytes.Clone(good[:len(good)-11]), `zzzzzzzz"}`...), "damaged checksum trailer"},
		{"upper-case hex", append(bytes.Clone(good[:len(good)-11]), `ABCDEF01"}`...), "damaged checksum trailer"},
		{"future version", withChecksum(header + `2,"written":"2026-03-01T12:00:00Z","instances":[],"overrides":{}`), "unsupported version 2"},
		{"malformed", withChecksum(header + `1,"written":"2026-03-01T12:00:00Z","instances":[,],"overrides":{}`), "malformed JSON"},
		{"instances not array", withChecksum(header + `1,"written":"2026-03-01T12:00:00Z","instances":{},"overrides":{}`), "instances is not an array"},
		{"count", withChecksum(header + `1,"written":"2026-03-01T12:00:00Z","count":1,"instances":[],"overrides":{}`), "count says 1 instances, file holds 0"},
		{"bad override", withChecksum(header + `1,"written":"2026-03-01T12:00:00Z","count":0,"instances":[],"overrides":{"a":"SIDEWAYS"}`), `bad override "SIDEWAYS"`},
		{"bad instance", withChecksum(header + `1,"written":"2026-03-01T12:00:00Z","count":1,"instances":[{"port":{"$":"x"}}],"overrides":{}`), "bad instances"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Unmarshal(tc.data)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a FormatError containing %q", err, tc.want)
			}
		})
	}
}

// Every prefix of a snapshot (what a torn, non-atomic write would leave)
// and every single-byte change is refused.
func TestEveryTruncationAndByteFlipRefused(t *testing.T) {
	good := Marshal(filled(t, clocktest.New(t0)).Export(), t0, "s")
	for n := range len(good) - 1 { // the last byte is the optional newline
		if _, err := Unmarshal(good[:n]); err == nil {
			t.Fatalf("prefix of %d/%d bytes accepted", n, len(good))
		}
	}
	bad := bytes.Clone(good)
	for i := range len(good) - 1 {
		for _, x := range []byte{0x01, 0x20, 0x80} {
			bad[i] ^= x
			if _, err := Unmarshal(bad); err == nil {
				t.Fatalf("byte %d xor %#x accepted", i, x)
			}
			bad[i] ^= x
		}
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "registry.json")
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{"first", "second, longer than the first"} {
		if err := WriteFile(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(p); string(got) != content {
			t.Fatalf("file holds %q, want %q", got, content)
		}
	}
	if _, err := os.Stat(p + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temp file left behind: %v", err)
	}
	// A crash between writing the temp file and the rename leaves junk in
	// path.tmp: the snapshot is unaffected and the next write goes through.
	if err := os.WriteFile(p+".tmp", []byte("half a snap"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "second, longer than the first" {
		t.Fatalf("file holds %q", got)
	}
	if err := WriteFile(p, []byte("third")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "third" {
		t.Fatalf("file holds %q", got)
	}
	// A failed write keeps the old file: here the target is a directory.
	d := filepath.Join(dir, "isdir")
	if err := os.MkdirAll(filepath.Join(d, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(d, []byte("x")); err == nil {
		t.Fatal("rename over a non-empty directory succeeded")
	}
	if _, err := os.Stat(d + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temp file left behind after a failed write: %v", err)
	}
}

// logs collects log lines as text.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.buf.String()), "\n")
}

func newStore(t *testing.T, reg Registry, c *clocktest.Clock, p string, maxAge time.Duration) (*Store, *logs) {
	t.Helper()
	l := &logs{}
	return New(reg, Config{Path: p, MaxAge: maxAge, Server: "eureka-1", Now: c.Now,
		Logger: slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo}))}), l
}

func TestStoreRestore(t *testing.T) {
	c := clocktest.New(t0)
	src := filled(t, c)
	good := Marshal(src.Export(), c.Now(), "eureka-0")

	t.Run("missing file starts empty quietly", func(t *testing.T) {
		reg := registry.New(registry.Options{})
		s, l := newStore(t, reg, c, filepath.Join(t.TempDir(), "none.json"), time.Hour)
		if n := s.Restore(); n != 0 || reg.Size() != 0 {
			t.Fatalf("restored %d", n)
		}
		if got := l.lines(); len(got) != 1 || got[0] != "" {
			t.Errorf("logged %q, want nothing at info", got)
		}
	})
	t.Run("fresh snapshot loads", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "snap.json")
		if err := WriteFile(p, good); err != nil {
			t.Fatal(err)
		}
		reg := registry.New(registry.Options{Now: c.Now})
		s, l := newStore(t, reg, clocktest.New(t0.Add(59*time.Minute)), p, time.Hour)
		if n := s.Restore(); n != 4 || reg.Size() != 4 {
			t.Fatalf("restored %d, size %d, want 4", n, reg.Size())
		}
		if got := l.lines(); len(got) != 1 || !strings.Contains(got[0], "registry restored from snapshot") || !strings.Contains(got[0], "count=4") {
			t.Errorf("log %q", got)
		}
	})
	t.Run("stale snapshot ignored and kept", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "snap.json")
		if err := WriteFile(p, good); err != nil {
			t.Fatal(err)
		}
		reg := registry.New(registry.Options{})
		s, l := newStore(t, reg, clocktest.New(t0.Add(time.Hour+2*time.Second)), p, time.Hour)
		if n := s.Restore(); n != 0 || reg.Size() != 0 {
			t.Fatalf("restored %d from a stale snapshot", n)
		}
		if got := l.lines(); len(got) != 1 || !strings.Contains(got[0], "too old, ignored") || !strings.Contains(got[0], "age=1h0m1s") {
			t.Errorf("log %q", got)
		}
		if data, _ := os.ReadFile(p); !bytes.Equal(data, good) {
			t.Errorf("stale snapshot not kept in place")
		}
	})
	t.Run("max-age 0 restores any age", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "snap.json")
		if err := WriteFile(p, good); err != nil {
			t.Fatal(err)
		}
		reg := registry.New(registry.Options{})
		s, _ := newStore(t, reg, clocktest.New(t0.Add(1000*time.Hour)), p, 0)
		if n := s.Restore(); n != 4 {
			t.Fatalf("restored %d", n)
		}
	})
	for name, data := range map[string][]byte{
		"truncated": good[:len(good)*2/3],
		"foreign":   []byte("server:\n  port: 8761\n"),
		"bit rot":   bytes.Replace(good, []byte("orders-2"), []byte("orders-3"), 1),
	} {
		t.Run(name+" file moved aside", func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "snap.json")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			reg := registry.New(registry.Options{})
			s, l := newStore(t, reg, c, p, time.Hour)
			if n := s.Restore(); n != 0 || reg.Size() != 0 {
				t.Fatalf("restored %d from a bad file", n)
			}
			want := p + ".corrupt-20260301T120001.000Z"
			if moved, err := os.ReadFile(want); err != nil || !bytes.Equal(moved, data) {
				t.Fatalf("not moved aside to %s: %v", want, err)
			}
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("bad file still at %s", p)
			}
			got := l.lines()
			if len(got) != 1 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], "unreadable, moved aside; starting empty") ||
				!strings.Contains(got[0], "moved_to="+want) {
				t.Errorf("log %q, want one clear line", got)
			}
		})
	}
}

func readBack(t *testing.T, p string) *File {
	t.Helper()
	f, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestStoreWritesOnlyWhenChanged(t *testing.T) {
	c := clocktest.New(t0)
	reg := filled(t, c)
	p := filepath.Join(t.TempDir(), "snap.json")
	s, _ := newStore(t, reg, c, p, time.Hour) // refresh every 6 minutes

	written := func() time.Time { return readBack(t, p).Written }
	s.save(false)
	first := written()
	if !first.Equal(c.Now()) || len(readBack(t, p).Snapshot.Instances) != 4 {
		t.Fatalf("first tick did not write: %v", first)
	}
	c.Advance(5 * time.Second)
	reg.Renew(registry.RenewRequest{App: "ORDERS", ID: "orders-2"})
	s.save(false)
	if !written().Equal(first) {
		t.Fatal("a renewal caused a write")
	}
	c.Advance(5 * time.Second)
	if err := reg.Cancel("ORDERS", "orders-2", false); err != nil {
		t.Fatal(err)
	}
	s.save(false)
	if f := readBack(t, p); !f.Written.Equal(c.Now()) || len(f.Snapshot.Instances) != 3 {
		t.Fatalf("cancel not written: %v, %d instances", f.Written, len(f.Snapshot.Instances))
	}
	last := c.Now()
	c.Advance(6*time.Minute - time.Nanosecond)
	s.save(false)
	if !written().Equal(last) {
		t.Fatal("rewritten before the refresh period")
	}
	c.Advance(time.Nanosecond)
	s.save(false)
	if !written().Equal(c.Now()) {
		t.Fatal("unchanged registry not rewritten after MaxAge/10: a crash would leave a snapshot that ages out")
	}
	c.Advance(time.Second)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if !written().Equal(c.Now()) {
		t.Fatal("Flush did not write an unchanged registry")
	}
}

func TestStoreWriteErrorLoggedOnce(t *testing.T) {
	c := clocktest.New(t0)
	reg := filled(t, c)
	dir := t.TempDir()
	p := filepath.Join(dir, "snap.json")
	if err := os.MkdirAll(filepath.Join(p, "blocker"), 0o755); err != nil { // rename over it fails
		t.Fatal(err)
	}
	s, l := newStore(t, reg, c, p, 0)
	for range 3 {
		if err := s.Flush(); err == nil {
			t.Fatal("Flush over a directory succeeded")
		}
	}
	if got := l.lines(); len(got) != 1 || !strings.Contains(got[0], "cannot write registry snapshot") {
		t.Fatalf("log %q, want one line", got)
	}
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := l.lines(); len(got) != 2 || !strings.Contains(got[1], "written again") {
		t.Fatalf("log %q", got)
	}
}

func TestStoreRun(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		reg := registry.New(registry.Options{})
		p := filepath.Join(dir, "snap.json")
		s := New(reg, Config{Path: p, Interval: 5 * time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()

		time.Sleep(5*time.Second - time.Millisecond)
		synctest.Wait()
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("written before the first tick: %v", err)
		}
		if _, err := reg.Register(instance("APP", "app-1", registry.StatusUp), false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if f := readBack(t, p); len(f.Snapshot.Instances) != 1 || !f.Written.Equal(time.Now()) {
			t.Fatalf("first tick wrote %d instances at %v", len(f.Snapshot.Instances), f.Written)
		}
		if _, err := reg.Register(instance("APP", "app-2", registry.StatusUp), false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if f := readBack(t, p); len(f.Snapshot.Instances) != 2 {
			t.Fatalf("second tick wrote %d instances", len(f.Snapshot.Instances))
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}
