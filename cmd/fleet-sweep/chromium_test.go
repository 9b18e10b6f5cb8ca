package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// chromiumBin is Debian's chromium (a wrapper script that execs /usr/lib/chromium/chromium).
const chromiumBin = "/usr/bin/chromium"

// chromium is a headless Chromium driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: commands in on fd 3, answers and events out on fd 4, each message
// JSON ended by a NUL byte), attached to one page. It records what the page logs to the
// console, the exceptions it throws and every network request it makes.
type chromium struct {
	cmd     *exec.Cmd
	in      *os.File // our end of fd 3
	out     *os.File // our end of fd 4
	session string
	stderr  bytes.Buffer

	mu       sync.Mutex
	nextID   int
	waiting  map[int]chan cdpMessage
	events   map[string][]json.RawMessage // method -> params
	eventsCh chan string
	done     chan struct{}
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    any             `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
	RawParams json.RawMessage `json:"-"`
}

// startChromium starts Chromium as root may run it (--no-sandbox), with nothing of its own
// going to the network (no background networking, component updates, sync or first-run
// pages) and a fresh profile in a temporary directory; it is stopped, and its files removed,
// when t ends. Without Chromium the test skips, except under CI=true, where it fails.
func startChromium(t *testing.T) *chromium {
	t.Helper()
	if _, err := os.Stat(chromiumBin); err != nil {
		msg := fmt.Sprintf("%s is not installed (apt-get install --no-install-recommends chromium): %v", chromiumBin, err)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	profile := t.TempDir()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &chromium{in: inW, out: outR, waiting: map[int]chan cdpMessage{}, events: map[string][]json.RawMessage{},
		eventsCh: make(chan string, 1024), done: make(chan struct{})}
	c.cmd = exec.Command(chromiumBin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir="+profile, "--remote-debugging-pipe", "about:blank")
	c.cmd.ExtraFiles = []*os.File{inR, outW} // fd 3 and fd 4
	c.cmd.Stderr = &c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	inR.Close()
	outW.Close()
	exited := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = c.call(ctx, "", "Browser.close", nil)
		cancel()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		// The wrapper execs Chromium, which leaves zygote and utility processes in its group.
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		c.in.Close()
		c.out.Close()
		if t.Failed() {
			t.Logf("chromium's stderr:\n%s", tailLines(c.stderr.String(), 20))
		}
	})
	go c.read()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var target struct {
		TargetID string `json:"targetId"`
	}
	c.mustCall(t, ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	c.mustCall(t, ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	c.session = attached.SessionID
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable", "Network.enable"} {
		c.mustCall(t, ctx, c.session, m, nil, nil)
	}
	return c
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// read reads messages until the pipe closes: answers go to their callers, events are kept.
func (c *chromium) read() {
	defer close(c.done)
	r := bufio.NewReaderSize(c.out, 1<<20)
	for {
		raw, err := r.ReadBytes(0)
		if err != nil {
			return
		}
		var m struct {
			cdpMessage
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		c.mu.Lock()
		if m.ID != 0 {
			if ch, ok := c.waiting[m.ID]; ok {
				delete(c.waiting, m.ID)
				ch <- m.cdpMessage
			}
		} else if m.Method != "" {
			c.events[m.Method] = append(c.events[m.Method], m.Params)
			select {
			case c.eventsCh <- m.Method:
			default:
			}
		}
		c.mu.Unlock()
	}
}

// call sends a command (to the page's session, or the browser for "") and waits for its answer.
func (c *chromium) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan cdpMessage, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	b, err := json.Marshal(cdpMessage{ID: id, Method: method, SessionID: session, Params: params})
	if err != nil {
		return nil, err
	}
	if _, err := c.in.Write(append(b, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		return m.Result, nil
	case <-c.done:
		return nil, fmt.Errorf("%s: chromium closed the pipe", method)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *chromium) mustCall(t *testing.T, ctx context.Context, session, method string, params, result any) {
	t.Helper()
	raw, err := c.call(ctx, session, method, params)
	if err != nil {
		t.Fatal(err)
	}
	if result != nil {
		if err := json.Unmarshal(raw, result); err != nil {
			t.Fatalf("%s: %v: %s", method, err, raw)
		}
	}
}

// waitEvent waits until method has been seen, since the events were last cleared.
func (c *chromium) waitEvent(ctx context.Context, method string) error {
	for {
		c.mu.Lock()
		n := len(c.events[method])
		c.mu.Unlock()
		if n > 0 {
			return nil
		}
		select {
		case <-c.eventsCh:
		case <-c.done:
			return fmt.Errorf("waiting for %s: chromium closed the pipe", method)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", method, ctx.Err())
		}
	}
}

// eventsOf returns the params of every event method seen.
func (c *chromium) eventsOf(method string) []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]json.RawMessage(nil), c.events[method]...)
}

// eval evaluates a JavaScript expression in the page and decodes its value into v.
func (c *chromium) eval(t *testing.T, ctx context.Context, expr string, v any) {
	t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	c.mustCall(t, ctx, c.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if res.ExceptionDetails != nil {
		t.Fatalf("evaluate %s: %v", expr, res.ExceptionDetails)
	}
	if err := json.Unmarshal(res.Result.Value, v); err != nil {
		t.Fatalf("evaluate %s: %v: %s", expr, err, res.Result.Value)
	}
}

// consoleProblems are the page's console errors and warnings, uncaught exceptions and
// errors Chromium logged for it (a failed load, say).
func (c *chromium) consoleProblems() []string {
	var out []string
	for _, p := range c.eventsOf("Runtime.consoleAPICalled") {
		var e struct {
			Type string `json:"type"`
			Args []struct {
				Value any `json:"value"`
			} `json:"args"`
		}
		if json.Unmarshal(p, &e) == nil && (e.Type == "error" || e.Type == "warning" || e.Type == "assert") {
			out = append(out, fmt.Sprintf("console.%s: %v", e.Type, e.Args))
		}
	}
	for _, p := range c.eventsOf("Runtime.exceptionThrown") {
		out = append(out, "exception: "+string(p))
	}
	for _, p := range c.eventsOf("Log.entryAdded") {
		var e struct {
			Entry struct {
				Level, Text, URL string
			} `json:"entry"`
		}
		if json.Unmarshal(p, &e) == nil && e.Entry.Level == "error" {
			out = append(out, fmt.Sprintf("log: %s %s", e.Entry.Text, e.Entry.URL))
		}
	}
	return out
}

// requests lists the URLs of every request the page made.
func (c *chromium) requests() []string {
	var out []string
	for _, p := range c.eventsOf("Network.requestWillBeSent") {
		var e struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		if json.Unmarshal(p, &e) == nil {
			out = append(out, e.Request.URL)
		}
	}
	return out
}

// screenshot captures the whole page, width px wide, as PNG.
func (c *chromium) screenshot(t *testing.T, ctx context.Context, width int) []byte {
	t.Helper()
	// Lay the page out at width first: its height depends on it.
	c.mustCall(t, ctx, c.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": false}, nil)
	var height int
	c.eval(t, ctx, "document.documentElement.scrollHeight", &height)
	c.mustCall(t, ctx, c.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	var shot struct {
		Data []byte `json:"data"` // base64 in JSON: encoding/json decodes it
	}
	c.mustCall(t, ctx, c.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot)
	return shot.Data
}

// saveArtifact writes data as name in the test's artifact directory (kept with go test
// -artifacts -outputdir DIR) and logs the path.
func saveArtifact(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("artifact: %s (%d bytes)", p, len(data))
	return p
}
