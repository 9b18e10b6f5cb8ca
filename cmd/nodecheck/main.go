// Command nodecheck checks that a Slurm GPU node is fit to run jobs. See README.md and docs/.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nodecheck/nodecheck/cmd/nodecheck/run"
)

// main wires the process to the run: SIGTERM and SIGINT cancel the run's context, and the
// watchdog (run.Watchdog) ends the process when the run does not end promptly after a signal
// or overstays its mode's budget, whatever blocks.
func main() {
	// The budget counts from the process's creation, as Slurm counts a hook's timeout.
	start := run.ProcessStart(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	// SIGTERM and SIGINT reach the watchdog once a run arms it or a recording starts
	// (run.Watchdog.Listen): the runtime starts a thread of its own for signals, about 0.2 ms
	// that nodecheck version, lint and the other short verbs need not pay (docs/speed.md).
	wd := run.NewWatchdog(start, os.Stderr, os.Exit, cancel).
		WithSignals(func(c chan<- os.Signal) { signal.Notify(c, os.Interrupt, syscall.SIGTERM) })
	code := executeWith(ctx, wd, os.Args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	wd.Finish()
	os.Exit(code)
}
