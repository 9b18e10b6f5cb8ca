package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLockIn(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	held, err := LockIn(ctx, d, "lock", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file: a second open of the same file waits on the first.
	if _, err := LockIn(ctx, d, "lock", 50*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Errorf("second lock: %v, want ErrLocked", err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := LockIn(short, d, "lock", time.Hour); !errors.Is(err, ErrLocked) {
		t.Errorf("lock under a deadline: %v, want ErrLocked", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("waited %s past a 30 ms deadline", waited)
	}
	Unlock(held)
	again, err := LockIn(ctx, d, "lock", time.Second)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	Unlock(again)
	Unlock(nil)

	target := filepath.Join(dir, "target")
	if err := os.Symlink(target, filepath.Join(dir, "planted")); err != nil {
		t.Fatal(err)
	}
	if _, err := LockIn(ctx, d, "planted", time.Second); !errors.Is(err, ErrSymlink) {
		t.Errorf("lock through a symlink: %v, want ErrSymlink", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the symlink's target was created: %v", err)
	}
}
