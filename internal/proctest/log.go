package proctest

import (
	"bytes"
	"strings"
	"sync"
)

// Log is a process's output kept in memory, safe for concurrent use. Past
// logCap it drops its older half, so that a long run at debug level cannot
// exhaust memory.
type Log struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cursor int // end of the line the last Next returned
}

const logCap = 8 << 20

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len()+len(p) > logCap {
		b := l.buf.Bytes()
		cut := len(b) / 2
		if i := bytes.IndexByte(b[cut:], '\n'); i >= 0 {
			cut += i + 1
		}
		rest := append([]byte("[earlier logs dropped]\n"), b[cut:]...)
		l.buf.Reset()
		l.buf.Write(rest)
		l.cursor = 0
	}
	return l.buf.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Grep returns the lines containing s.
func (l *Log) Grep(s string) []string {
	var out []string
	for line := range strings.Lines(l.String()) {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// Next returns the first complete line after the cursor that contains s,
// and moves the cursor past it: reading the log as it is written.
func (l *Log) Next(s string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buf.Bytes()
	for pos := l.cursor; pos < len(b); {
		i := bytes.IndexByte(b[pos:], '\n')
		if i < 0 {
			return "", false // an incomplete line: not yet
		}
		line := string(b[pos : pos+i])
		pos += i + 1
		if strings.Contains(line, s) {
			l.cursor = pos
			return line, true
		}
	}
	return "", false
}
