package run

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

// fakeExit records the watchdog's exit instead of ending the test process.
type fakeExit struct {
	mu    sync.Mutex
	codes []int
	at    time.Time
}

func (f *fakeExit) exit(code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes = append(f.codes, code)
	f.at = time.Now()
}

func (f *fakeExit) get() ([]int, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.codes...), f.at
}

func newTestWatchdog(start time.Time) (*Watchdog, *fakeExit, *bytes.Buffer, *bool) {
	var stderr bytes.Buffer
	f := &fakeExit{}
	cancelled := new(bool)
	return NewWatchdog(start, &stderr, f.exit, func() { *cancelled = true }), f, &stderr, cancelled
}

func TestWatchdogExpiry(t *testing.T) {
	tests := []struct {
		mode       config.Mode
		failClosed bool
		want       int
		says       string
	}{
		{config.ModeProlog, false, ExitHealthy, "exiting 0 without a verdict: a prolog must not fail its job"},
		{config.ModeProlog, true, ExitCannotRun, "exiting 2 without a verdict: fail_closed is on"},
		{config.ModeEpilog, false, ExitHealthy, "exiting 0"},
		{config.ModeHealth, false, ExitCannotRun, "exiting 2 without a verdict"},
		{config.ModeManual, false, ExitCannotRun, "exiting 2 without a verdict"},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode), func(t *testing.T) {
			// Started long enough ago that a 100 ms budget expires 50 ms from now.
			start := time.Now().Add(-watchdogMargin + 50*time.Millisecond - 100*time.Millisecond)
			w, f, stderr, _ := newTestWatchdog(start)
			w.Arm(tc.mode, 100*time.Millisecond, tc.failClosed)
			time.Sleep(300 * time.Millisecond)
			codes, _ := f.get()
			if len(codes) != 1 || codes[0] != tc.want {
				t.Fatalf("exits %v, want [%d]", codes, tc.want)
			}
			line := stderr.String()
			if strings.Count(line, "\n") != 1 || !strings.Contains(line, "nodecheck: watchdog: the "+string(tc.mode)+" run is still going") || !strings.Contains(line, tc.says) {
				t.Errorf("stderr %q, want one line saying %q", line, tc.says)
			}
			w.Finish()
		})
	}
}

func TestWatchdogRearmAndFinish(t *testing.T) {
	w, f, stderr, _ := newTestWatchdog(time.Now())
	// Armed with a short budget, then re-armed with none (a manual run): never fires.
	w.Arm(config.ModeProlog, time.Millisecond, false)
	w.Arm(config.ModeManual, 0, false)
	// A run that finishes in time disarms it.
	w2, f2, _, _ := newTestWatchdog(time.Now().Add(-watchdogMargin))
	w2.Arm(config.ModeProlog, 50*time.Millisecond, false)
	w2.Finish()
	time.Sleep(200 * time.Millisecond)
	if codes, _ := f.get(); len(codes) != 0 || stderr.Len() != 0 {
		t.Errorf("a disarmed watchdog exited %v: %q", codes, stderr)
	}
	if codes, _ := f2.get(); len(codes) != 0 {
		t.Errorf("a finished run's watchdog exited %v", codes)
	}
	// A nil watchdog (tests calling execute) does nothing.
	var nilw *Watchdog
	nilw.Arm(config.ModeProlog, time.Millisecond, false)
	nilw.signal(syscall.SIGTERM)
	nilw.Finish()
}

func TestWatchdogSignals(t *testing.T) {
	// A signal makes the run undecided: 0 in a prolog or epilog (fail_closed is about the
	// config and the watchdog, not an interruption), 3 in a health or manual run.
	for _, tc := range []struct {
		mode       config.Mode
		failClosed bool
		want       int
	}{
		{config.ModeManual, false, ExitUndecided},
		{config.ModeHealth, false, ExitUndecided},
		{config.ModeProlog, false, ExitHealthy},
		{config.ModeEpilog, true, ExitHealthy},
	} {
		t.Run("grace runs out/"+string(tc.mode), func(t *testing.T) {
			w, f, stderr, cancelled := newTestWatchdog(time.Now())
			w.Arm(tc.mode, 0, tc.failClosed)
			sent := time.Now()
			w.signal(syscall.SIGTERM)
			if !*cancelled {
				t.Error("the first signal did not cancel the run")
			}
			// The grace timer fires 50 ms on; on a loaded machine it may run later, so wait for
			// the exit (up to 5 s) rather than a fixed time, and check it came after the grace.
			codes, at := f.get()
			for deadline := time.Now().Add(5 * time.Second); len(codes) == 0 && time.Now().Before(deadline); codes, at = f.get() {
				time.Sleep(5 * time.Millisecond)
			}
			if len(codes) != 1 || codes[0] != tc.want || at.Sub(sent) < signalGrace {
				t.Errorf("exits %v %s after the signal, want [%d] after the grace", codes, at.Sub(sent), tc.want)
			}
			if !strings.Contains(stderr.String(), "nodecheck: SIGTERM: the run did not end within 50ms of it; exiting "+fmt.Sprint(tc.want)+" without a verdict") {
				t.Errorf("stderr %q", stderr)
			}
		})
	}
	t.Run("second signal", func(t *testing.T) {
		w, f, stderr, _ := newTestWatchdog(time.Now())
		w.signal(syscall.SIGINT)
		w.signal(syscall.SIGINT)
		if codes, _ := f.get(); len(codes) != 1 || codes[0] != ExitUndecided {
			t.Errorf("exits %v, want [3] at once", codes)
		}
		time.Sleep(signalGrace + 50*time.Millisecond)
		if codes, _ := f.get(); len(codes) != 1 {
			t.Errorf("exited again after the grace: %v", codes)
		}
		if !strings.Contains(stderr.String(), "SIGINT again: exiting 3 without a verdict") {
			t.Errorf("stderr %q", stderr)
		}
	})
	t.Run("run ends within the grace", func(t *testing.T) {
		w, f, stderr, _ := newTestWatchdog(time.Now())
		w.Arm(config.ModeManual, 5*time.Second, false)
		w.signal(syscall.SIGTERM)
		w.Finish()
		time.Sleep(signalGrace + 20*time.Millisecond)
		if codes, _ := f.get(); len(codes) != 0 || stderr.Len() != 0 {
			t.Errorf("the watchdog acted after the run finished: exits %v, %q", codes, stderr)
		}
	})
}

// TestWatchdogListen: signals are subscribed to once, when a run first arms the watchdog (or
// a verb asks, Listen), and a signal then reaches the watchdog; the short verbs never
// subscribe, so nodecheck version does not start the runtime's signal thread.
func TestWatchdogListen(t *testing.T) {
	w, _, _, cancelled := newTestWatchdog(time.Now())
	defer w.Finish()
	var subscribed []chan<- os.Signal
	w.notify = func(c chan<- os.Signal) { subscribed = append(subscribed, c) }
	if len(subscribed) != 0 {
		t.Fatal("subscribed before any run")
	}
	w.Arm(config.ModeProlog, time.Hour, false)
	w.Arm(config.ModeProlog, time.Hour, false)
	w.Listen()
	if len(subscribed) != 1 {
		t.Fatalf("subscribed %d times, want once", len(subscribed))
	}
	subscribed[0] <- syscall.SIGTERM
	deadline := time.Now().Add(5 * time.Second)
	for !cancelledNow(w, cancelled) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !cancelledNow(w, cancelled) {
		t.Error("a signal on the subscribed channel did not cancel the run")
	}
	var nilw *Watchdog
	nilw.Listen() // no watchdog (tests call execute without one): nothing happens
}

// cancelledNow reads the flag newTestWatchdog's cancel sets, under the watchdog's lock (the
// signal goroutine sets it while holding it).
func cancelledNow(w *Watchdog, cancelled *bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *cancelled
}
