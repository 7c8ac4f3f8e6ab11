//go:build browser

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// A minimal Chrome DevTools Protocol client over --remote-debugging-pipe:
// JSON messages separated by NUL on file descriptors 3 (to the browser)
// and 4 (from it). It needs no WebSocket and no dependency, and the
// browser is a child process that dies with the test.

type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type cdp struct {
	w       io.WriteCloser
	mu      sync.Mutex
	next    int
	pending map[int]chan cdpMsg
	events  []cdpMsg // Runtime.exceptionThrown and Log/console errors
	session string
}

// startBrowser starts headless Chromium on a pipe and opens one page.
func startBrowser(t *testing.T, bin, profile string) *cdp {
	t.Helper()
	toBrowser, browserIn, err := os.Pipe() // browser reads fd 3
	if err != nil {
		t.Fatal(err)
	}
	browserOut, fromBrowser, err := os.Pipe() // browser writes fd 4
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--hide-scrollbars", "--user-data-dir="+profile, "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	toBrowser.Close()
	fromBrowser.Close()
	c := &cdp{w: browserIn, pending: map[int]chan cdpMsg{}}
	t.Cleanup(func() {
		browserIn.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b := stderr.Bytes()
			t.Logf("chromium stderr (tail):\n%s", b[max(0, len(b)-4000):])
		}
	})
	go c.read(browserOut)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call(ctx, "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatalf("Target.createTarget: %v", err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call(ctx, "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatalf("Target.attachToTarget: %v", err)
	}
	c.session = att.SessionID
	for _, m := range []string{"Page.enable", "Runtime.enable"} {
		if err := c.call(ctx, m, nil, nil); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
	}
	return c
}

func (c *cdp) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		b, err := br.ReadBytes(0)
		if err != nil {
			c.mu.Lock()
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		var m cdpMsg
		if json.Unmarshal(b[:len(b)-1], &m) != nil {
			continue
		}
		c.mu.Lock()
		if m.ID != 0 {
			if ch, ok := c.pending[m.ID]; ok {
				ch <- m
				delete(c.pending, m.ID)
			}
		} else if m.Method == "Runtime.exceptionThrown" {
			c.events = append(c.events, m)
		}
		c.mu.Unlock()
	}
}

// call sends one command on the page's session (the browser's before
// there is one) and decodes its result into out.
func (c *cdp) call(ctx context.Context, method string, params, out any) error {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan cdpMsg, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	p, _ := json.Marshal(params)
	if params == nil {
		p = nil
	}
	b, _ := json.Marshal(cdpMsg{ID: id, Method: method, Params: p, SessionID: c.session})
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return errors.New("browser closed the pipe")
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// eval runs a JavaScript expression in the page (awaiting a promise) and
// decodes its value into out.
func (c *cdp) eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := c.call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("evaluating %q: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		return json.Unmarshal(r.Result.Value, out)
	}
	return nil
}

func (c *cdp) exceptions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.events {
		out = append(out, string(e.Params))
	}
	return out
}
