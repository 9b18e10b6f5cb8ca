package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLocked is wrapped by LockIn's error when another process holds the lock past the wait.
var ErrLocked = errors.New("another nodecheck run holds the lock")

// lockPoll is how often a waiting LockIn tries the lock again.
const lockPoll = 20 * time.Millisecond

// LockIn takes an exclusive flock(2) on name in the open directory dir (created 0600 through
// OpenIn: never through a symlink, which is refused and its target never created), waiting
// at most wait and never past ctx's deadline. It returns the open lock file, which holds the
// lock until Unlock is called on it or the process exits (a run killed at its timeout never
// leaves a stale lock). When the wait runs out the error wraps ErrLocked and says how long
// it waited; any other error means the lock file cannot be opened or locked (a read-only or
// full file system, a planted symlink).
func LockIn(ctx context.Context, dir *os.File, name string, wait time.Duration) (*os.File, error) {
	f, err := OpenIn(dir, name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	start := time.Now()
	deadline := start.Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			f.Close()
			// The wait as it was, not as configured: a prolog's budget cuts it short.
			return nil, fmt.Errorf("%w %s (waited %s)", ErrLocked, f.Name(), time.Since(start).Round(100*time.Millisecond))
		}
		select {
		case <-time.After(min(lockPoll, left)):
		case <-ctx.Done():
		}
	}
}

// Unlock releases a lock LockIn took and closes its file; nil does nothing.
func Unlock(f *os.File) {
	if f == nil {
		return
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	f.Close()
}
