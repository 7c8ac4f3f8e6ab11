package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// WriteFile replaces path with data atomically: it writes path.tmp in the
// same directory, fsyncs it, renames it over path and fsyncs the directory,
// so that after a crash at any point path holds either its old content or
// data, never a mix. The directory is created if missing. A leftover
// path.tmp from an earlier crash is overwritten. On error path is
// unchanged and path.tmp removed.
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// ReadFile reads and decodes the snapshot at path. A missing file yields
// an error matching fs.ErrNotExist, an unreadable one a *FormatError.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Unmarshal(data)
}

// moveAside renames an unreadable snapshot to path.corrupt-<time>, so that
// it is kept for a post-mortem but never loaded again, and returns the new
// name.
func moveAside(path string, now time.Time) (string, error) {
	to := path + ".corrupt-" + now.UTC().Format("20060102T150405.000Z")
	if err := os.Rename(path, to); err != nil {
		return "", err
	}
	return to, nil
}
