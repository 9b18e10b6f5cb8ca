package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/config"
)

// The process-level limits (docs/slurm.md). Every check, command and file read already
// ends at the run's budget; these end the process when something still blocks where no
// deadline reaches (a read stuck in the kernel on a hung NFS mount, a wedged NVML call, a
// stdout pipe nobody reads), and when Slurm or a person asks it to stop.
const (
	// watchdogMargin is how long past its budget, counted from the process's creation
	// (processStart, as Slurm counts a hook's timeout), a run may go before the watchdog ends
	// the process: a quarter of the second a run may overstay is left for the exit.
	watchdogMargin = 750 * time.Millisecond
	// signalGrace is how long after SIGTERM or SIGINT the run has to end on its own (its
	// context is cancelled at once, so checks, reads and commands give up); then the process
	// exits. Slurm sends a hook SIGTERM and, soon after, SIGKILL.
	signalGrace = 50 * time.Millisecond
)

// Watchdog ends the process when a run overstays its budget, or does not end promptly after
// a signal. The run arms it once its mode and budget are known (Arm, which starts its
// listening for signals: Listen, through the notify main gives it); main tells it when the
// run is over (finish), after which it never acts. All methods are safe on a nil *Watchdog,
// which does nothing: tests call execute without one.
//
// When it ends the process it writes one line to stderr and exits; it writes nothing else.
// Files nodecheck writes are replaced atomically (files.WriteAtomic), so an exit at any point
// leaves the old file or the new one, never part of one; a report being written to stdout
// at that moment may be cut, as by SIGKILL.
//
// Exit codes, from docs/output.md's exit code table (a hook must not take the
// cluster down for a nodecheck failure): an expiry is nodecheck not finishing, as an unusable
// config is nodecheck not starting, so it exits as ConfigErrorExitCode says: 0 in a
// prolog or epilog (the job goes on; the line is in slurmd's log) unless the config says
// fail_closed = true, then 2; 2 in a health or manual run. A signal interrupts the run, which
// makes it undecided (ExitCode): 0 in a prolog or epilog, 3 in a health or manual
// run, whether the run ends on its own within signalGrace (then it exits with its own code,
// which says the same) or not.
type Watchdog struct {
	start  time.Time
	stderr io.Writer
	exit   func(int)
	cancel context.CancelFunc // cancels the run's context

	// notify subscribes a channel to SIGTERM and SIGINT (signal.Notify in main); nil in tests,
	// where Listen does nothing.
	notify     func(chan<- os.Signal)
	listenOnce sync.Once

	mu         sync.Mutex
	timer      *time.Timer
	done       bool
	mode       config.Mode
	budget     time.Duration
	failClosed bool
	signals    int
}

// WithSignals makes Listen subscribe to SIGTERM and SIGINT through notify (signal.Notify in
// main); without it (tests) Listen does nothing. It returns w.
func (w *Watchdog) WithSignals(notify func(chan<- os.Signal)) *Watchdog {
	w.notify = notify
	return w
}

// NewWatchdog returns a disarmed watchdog for a process created at start; cancel
// cancels the run's context, exit ends the process (os.Exit).
func NewWatchdog(start time.Time, stderr io.Writer, exit func(int), cancel context.CancelFunc) *Watchdog {
	return &Watchdog{start: start, stderr: stderr, exit: exit, cancel: cancel, mode: config.ModeManual}
}

// Listen hands SIGTERM and SIGINT to the watchdog from now on (signal): the first cancels
// the run's context, the second ends the process. Arm calls it, and so do verbs that work
// under the context for long (a recording); the short verbs never do, and a signal ends them
// as it ends any program. It may be called more than once.
func (w *Watchdog) Listen() {
	if w == nil || w.notify == nil {
		return
	}
	w.listenOnce.Do(func() {
		sigs := make(chan os.Signal, 2)
		w.notify(sigs)
		go func() {
			for s := range sigs {
				w.signal(s)
			}
		}()
	})
}

// Start is the process's creation, which the watchdog counts from and the run's budget too
// (checks.EnvOptions.Start); the zero time on a nil watchdog (tests), where the run counts
// from its own start.
func (w *Watchdog) Start() time.Time {
	if w == nil {
		return time.Time{}
	}
	return w.start
}

// Arm sets the watchdog for a run in mode with the mode's budget (0: none, and the watchdog
// is disarmed) and the config's fail_closed; it fires at start + budget + watchdogMargin. A
// later call replaces the earlier one: the run arms it first with the default budget, then
// with the config's once that is read.
func (w *Watchdog) Arm(mode config.Mode, budget time.Duration, failClosed bool) {
	if w == nil {
		return
	}
	w.Listen()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.mode, w.budget, w.failClosed = mode, budget, failClosed
	if w.signals > 0 {
		return // the signal's grace timer is running; it decides now
	}
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if budget > 0 {
		w.timer = time.AfterFunc(time.Until(w.start.Add(budget+watchdogMargin)), w.expire)
	}
}

// expire ends the process: the run is past its budget and the margin.
func (w *Watchdog) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.signals > 0 {
		return
	}
	code := ConfigErrorExitCode(w.mode, w.failClosed)
	fmt.Fprintf(w.stderr, "nodecheck: watchdog: the %s run is still going %s after its budget of %s (blocked where no deadline reaches: a hung file system, a wedged GPU driver, a full stdout pipe?); %s\n",
		w.mode, watchdogMargin, w.budget, w.exitText(code))
	w.done = true
	w.exit(code)
}

// signal handles SIGTERM or SIGINT: the first cancels the run and gives it signalGrace to end
// on its own, the second ends the process at once.
func (w *Watchdog) signal(sig os.Signal) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.signals++
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.signals > 1 {
		code := w.signalCode(sig)
		fmt.Fprintf(w.stderr, "nodecheck: %s again: %s\n", signalName(sig), w.exitText(code))
		w.done = true
		w.exit(code)
		return
	}
	w.cancel()
	w.timer = time.AfterFunc(signalGrace, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.done {
			return
		}
		code := w.signalCode(sig)
		fmt.Fprintf(w.stderr, "nodecheck: %s: the run did not end within %s of it; %s\n", signalName(sig), signalGrace, w.exitText(code))
		w.done = true
		w.exit(code)
	})
}

// finish marks the run as over: from now on the watchdog never writes or exits, so that it
// and main never both act.
func (w *Watchdog) Finish() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// hook reports whether the run is a prolog or epilog, whose exit code Slurm acts on.
func (w *Watchdog) hook() bool { return w.mode.JobHook() }

// signalCode is the exit code when a signal ends the run: that of an undecided run.
func (w *Watchdog) signalCode(os.Signal) int {
	return ExitCode(checks.VerdictUndecided, w.mode)
}

// exitText says what the process does, and why a hook exits 0.
func (w *Watchdog) exitText(code int) string {
	switch {
	case code == ExitHealthy:
		return fmt.Sprintf("exiting 0 without a verdict: a %s must not fail its job for a nodecheck failure", w.mode)
	case w.hook():
		return fmt.Sprintf("exiting %d without a verdict: fail_closed is on", code)
	}
	return fmt.Sprintf("exiting %d without a verdict", code)
}

func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case os.Interrupt:
		return "SIGINT"
	}
	return sig.String()
}
