package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/jaypipes/ghw"
)

// Inventory implements Facts through ghw, which reads /proc/cpuinfo, /proc/meminfo and
// /sys/devices/system/cpu under the live roots (/sys under Paths.Sys, everything else under
// Paths.FS). ghw takes no context, so it runs in a goroutine that ctx's end abandons (a
// wedged sysfs read then blocks only that goroutine, until the process exits).
func (l *Live) Inventory(ctx context.Context) (Inventory, error) {
	if err := ctx.Err(); err != nil {
		return Inventory{}, fmt.Errorf("read CPU and memory inventory: %w", err)
	}
	type answer struct {
		inv Inventory
		err error
	}
	ch := make(chan answer, 1) // buffered: an abandoned reading must not block on send
	go func() {
		inv, err := readInventory(ghwArgs(l.paths)...)
		ch <- answer{inv, err}
	}()
	select {
	case a := <-ch:
		return a.inv, a.err
	case <-ctx.Done():
		return Inventory{}, fmt.Errorf("read CPU and memory inventory: %w", ctx.Err())
	}
}

// ghwArgs are the options that point ghw at p: a chroot at Paths.FS, with /sys and /dev
// overridden where Paths puts them elsewhere. Warnings are off (ghw logs to stderr, which a
// Slurm hook must keep quiet), and so are external tools: only files are read.
func ghwArgs(p Paths) []any {
	args := []any{ghw.WithDisableWarnings(), ghw.WithDisableTools()}
	overrides := map[string]string{}
	chroot := p.FS
	for _, r := range []struct{ mount, root string }{{"/sys", p.Sys}, {"/dev", p.Dev}} {
		rel, err := filepath.Rel(p.FS, r.root)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			chroot = "" // a root outside FS: give every path absolute, from "/"
			break
		}
		if "/"+rel != r.mount {
			overrides[r.mount] = "/" + rel
		}
	}
	if chroot == "" {
		chroot = "/"
		overrides = map[string]string{"/sys": p.Sys, "/dev": p.Dev}
		for _, m := range []string{"/proc", "/etc", "/run", "/var"} {
			overrides[m] = filepath.Join(p.FS, m)
		}
	}
	args = append(args, ghw.WithChroot(chroot))
	if len(overrides) > 0 {
		args = append(args, ghw.WithPathOverrides(overrides))
	}
	return args
}

// readInventory asks ghw for the CPU topology and memory.
func readInventory(args ...any) (Inventory, error) {
	cpu, err := ghw.CPU(args...)
	if err != nil {
		return Inventory{}, fmt.Errorf("read CPU inventory: %w", err)
	}
	var inv Inventory
	inv.Sockets = len(cpu.Processors)
	inv.CPUs = int(cpu.TotalHardwareThreads)
	cores := int(cpu.TotalCores)
	if inv.Sockets > 0 {
		inv.CoresPerSocket = cores / inv.Sockets
	}
	if cores > 0 {
		inv.ThreadsPerCore = inv.CPUs / cores
	}
	if inv.CPUs == 0 {
		return Inventory{}, errors.New("read CPU inventory: no online CPU found in /proc/cpuinfo and /sys/devices/system/cpu")
	}
	mem, err := ghw.Memory(args...)
	if err != nil {
		return Inventory{}, fmt.Errorf("read memory inventory: %w", err)
	}
	if mem.TotalUsableBytes > 0 {
		inv.MemoryUsableMiB = uint64(mem.TotalUsableBytes) >> 20 //nolint:gosec // positive, checked above
	}
	return inv, nil
}

// Inventory implements Facts from inventory.json. A snapshot without it has no inventory
// recorded: an error wrapping fs.ErrNotExist.
func (s *Snapshot) Inventory(ctx context.Context) (Inventory, error) {
	if err := ctx.Err(); err != nil {
		return Inventory{}, fmt.Errorf("read CPU and memory inventory: %w", err)
	}
	if s.inv == nil {
		return Inventory{}, fmt.Errorf("read CPU and memory inventory: not recorded (the snapshot has no %s): %w", inventoryFile, fs.ErrNotExist)
	}
	return *s.inv, nil
}

// parseInventory reads inventory.json, refusing unknown keys and negative counts.
func parseInventory(b []byte) (Inventory, error) {
	var inv Inventory
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&inv); err != nil {
		return Inventory{}, jsonError(inventoryFile, b, err, inv)
	}
	for _, f := range []struct {
		key string
		v   int
	}{{"sockets", inv.Sockets}, {"cores_per_socket", inv.CoresPerSocket}, {"threads_per_core", inv.ThreadsPerCore}, {"cpus", inv.CPUs}} {
		if f.v < 0 {
			return Inventory{}, fmt.Errorf("%s: %s %d is negative", inventoryFile, f.key, f.v)
		}
	}
	return inv, nil
}

// Inventory implements Facts and records the answer as inventory.json. One that failed is
// not recorded, so it replays as "not recorded".
func (r *Recorder) Inventory(ctx context.Context) (Inventory, error) {
	r.noteListed("inventory")
	inv, err := r.inner.Inventory(ctx)
	if err == nil {
		r.mu.Lock()
		r.inv = &inv
		r.mu.Unlock()
	}
	return inv, err
}
