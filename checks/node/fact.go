package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"sync"

	"github.com/nodecheck/nodecheck/config/files"
)

// Fact declares one fact of the node that Live, Snapshot, Recorder and Memo all serve
// through Facts.Fact, so that a new fact is its reader and this declaration, listed in
// DeclaredFacts, and nothing else of this package changes. Checks read it with Read.
//
// Its snapshot record is <Name>.json: T as encoding/json writes it (T must encode as a JSON
// object, so that the file can gain keys), plus two keys of the replay's own: "delay_ms"
// (replay stalls that long first) and "timed_out" (the recording's reading never answered:
// replay hangs until ctx is done). meta.json's delay_ms stalls it too, under the key
// FactPath(Name). Unknown keys are ignored, as in every snapshot file: an older nodecheck
// must replay a newer snapshot.
type Fact[T any] struct {
	// Name is the fact's file name without ".json", and its key in Memo, in Recorder and in
	// test fakes: lowercase letters, digits and '_' ("inventory").
	Name string
	// What names the fact in errors: "read <What>: ..." ("CPU and memory inventory").
	What string
	// Live reads the fact from the live node. It runs under files.Await, so that a read
	// which blocks where ctx cannot reach (a wedged sysfs attribute, a hung NFS mount) is
	// abandoned at ctx's end; it should still return when ctx is done where it can, and read
	// files through Live's bounded readers (l.ReadFile, files.Read). Absence on the node is
	// an error wrapping fs.ErrNotExist, or a value that says so (GPUInventory.Init).
	Live func(ctx context.Context, l *Live) (T, error)
	// Check validates a value read from a snapshot (nil: any value that decodes). Its error
	// names the key and the value (`cpus -2 is negative`); the file's name is prefixed.
	Check func(T) error
}

// FactDecl is a declared fact with its value type erased: what Facts.Fact takes. Only
// *Fact[T] implements it.
type FactDecl interface {
	// FactName is the declaration's Name.
	FactName() string
	what() string
	readLive(ctx context.Context, l *Live) (any, error)
	// decode reads a snapshot record: the value, its replay keys, or an error naming the
	// file and the place.
	decode(b []byte) (any, replayKeys, error)
	valueType() reflect.Type
}

// FactName implements FactDecl.
func (f *Fact[T]) FactName() string { return f.Name }

func (f *Fact[T]) what() string { return f.What }

func (f *Fact[T]) file() string { return f.Name + ".json" }

func (f *Fact[T]) valueType() reflect.Type { return reflect.TypeFor[T]() }

func (f *Fact[T]) readLive(ctx context.Context, l *Live) (any, error) { return f.Live(ctx, l) }

// replayKeys are the keys a snapshot record of a declared fact may carry besides the value's.
type replayKeys struct {
	DelayMS  int  `json:"delay_ms,omitempty"`
	TimedOut bool `json:"timed_out,omitempty"`
}

func (f *Fact[T]) decode(b []byte) (any, replayKeys, error) {
	name := f.file()
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, replayKeys{}, fmt.Errorf("%s: want a JSON object", name)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, replayKeys{}, jsonError(name, b, err, v)
	}
	var k replayKeys
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, replayKeys{}, jsonError(name, b, err, k)
	}
	if k.DelayMS < 0 {
		return nil, replayKeys{}, fmt.Errorf("%s: delay_ms %d is negative", name, k.DelayMS)
	}
	if !k.TimedOut && f.Check != nil {
		if err := f.Check(v); err != nil {
			return nil, replayKeys{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	return v, k, nil
}

// Read reads the fact d declares from f. It is how checks read a declared fact:
// node.Read(ctx, env.Facts, node.InventoryFact).
func Read[T any](ctx context.Context, f Facts, d *Fact[T]) (T, error) {
	var zero T
	v, err := f.Fact(ctx, d)
	if v == nil {
		if err == nil {
			err = fmt.Errorf("read %s: the facts answered nothing", d.What)
		}
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		// A wrapper's or a fake's mistake, never the node's.
		return zero, fmt.Errorf("read %s: the facts answered a %T, want a %T", d.What, v, zero)
	}
	return t, err
}

// FactPath is the key of meta.json's delay_ms that stalls the replay of the declared fact
// name: /nodecheck/facts/<name>. No check reads a file there, so the key means only that.
func FactPath(name string) string { return "/nodecheck/facts/" + name }

// Fact implements Facts: it runs d's reader under files.Await, so that a reader blocked
// where ctx cannot reach is abandoned at ctx's end.
func (l *Live) Fact(ctx context.Context, d FactDecl) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", d.what(), err)
	}
	v, err := files.Await(ctx, func() (any, error) { return d.readLive(ctx, l) })
	if ae := (*files.AbandonedError)(nil); errors.As(err, &ae) {
		return nil, fmt.Errorf("read %s: %w", d.what(), err)
	}
	return v, err
}

// factFile is a declared fact's record as a snapshot holds it.
type factFile struct {
	raw  []byte // the file, checked when the snapshot was opened
	keys replayKeys
}

// openFacts reads the record of each of decls through read (openSnapshot's: bounded, regular
// files only, inside the snapshot), checking each as it goes: a broken record fails the
// opening of the snapshot in dir with the file and the place named, as its other files do,
// whichever checks the run would have read. So a replay says at once that a record is bad,
// in every mode, rather than only in the runs whose checks read it. The map holds every
// declared name, with nil where the snapshot has no record.
func openFacts(dir string, read func(name string) ([]byte, error), decls []FactDecl) (map[string]*factFile, error) {
	out := make(map[string]*factFile, len(decls))
	for _, d := range decls {
		name := d.FactName()
		b, err := read(name + ".json")
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out[name] = nil
			continue
		case err != nil:
			return nil, err
		}
		_, k, err := d.decode(b)
		if err != nil {
			return nil, fmt.Errorf("open snapshot %s: %w", dir, err)
		}
		out[name] = &factFile{raw: b, keys: k}
	}
	return out, nil
}

// Fact implements Facts from <Name>.json, checked when the snapshot was opened and decoded
// again on each call, so that no two callers share a value. It stalls for meta.json's delay
// at FactPath(Name) (even where the snapshot has no record), then for the record's own
// delay_ms, and hangs until ctx is done where the record says timed_out. A snapshot without
// the file has no such fact recorded: an error wrapping fs.ErrNotExist.
func (s *Snapshot) Fact(ctx context.Context, d FactDecl) (any, error) {
	name, what := d.FactName(), d.what()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	rec, declared := s.facts[name]
	if !declared {
		return nil, fmt.Errorf("read %s: fact %q is not in node.DeclaredFacts, so no snapshot holds it", what, name)
	}
	if err := stall(ctx, s.delayFor(FactPath(name))); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if rec == nil {
		return nil, fmt.Errorf("read %s: not recorded (the snapshot has no %s.json): %w", what, name, fs.ErrNotExist)
	}
	if err := stall(ctx, rec.keys.DelayMS); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if rec.keys.TimedOut {
		if ctx.Done() == nil {
			return nil, fmt.Errorf("read %s: recorded as timed out: %w", what, context.DeadlineExceeded)
		}
		<-ctx.Done()
		return nil, fmt.Errorf("read %s: recorded as timed out: %w", what, ctx.Err())
	}
	v, _, err := d.decode(rec.raw)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return v, nil
}

// factKey stands for a declared fact in Recorder.pending and Recorder.listed; it is not a
// path, so settle never saves it as a meta.json delay.
func factKey(name string) string { return "fact:" + name }

// Fact implements Facts and records the answer as <Name>.json, encoded when it is read (a
// caller changing the value later does not change the record): a reading cut off by ctx as
// timed out (replayed as a hang), one that failed otherwise not at all (replayed as not
// recorded). A reading still under way when Save runs is saved as timed out too.
func (r *Recorder) Fact(ctx context.Context, d FactDecl) (any, error) {
	name := d.FactName()
	r.noteListed(factKey(name))
	defer r.track(factKey(name))()
	v, err := r.inner.Fact(ctx, d)
	var b []byte
	switch {
	case err == nil:
		var eerr error
		if b, eerr = encodeJSON(v); eerr != nil {
			return v, err // nothing sensible to record
		}
	case isDeadline(err):
		b = timedOutRecord()
	default:
		return v, err
	}
	r.mu.Lock()
	r.facts[name] = b
	r.mu.Unlock()
	return v, err
}

// timedOutRecord is a declared fact's record of a reading that never answered.
func timedOutRecord() []byte {
	b, _ := encodeJSON(replayKeys{TimedOut: true})
	return b
}

// settleFacts is the declared facts' records Save writes, by name: a timed-out one where a
// reading never returned. r.mu is held.
func (r *Recorder) settleFacts() map[string][]byte {
	out := make(map[string][]byte, len(r.facts))
	for name, b := range r.facts {
		out[name] = b
	}
	for key, n := range r.pending {
		if name, ok := cutFactKey(key); ok && n > 0 && out[name] == nil {
			out[name] = timedOutRecord()
		}
	}
	return out
}

// cutFactKey is the fact name of a factKey.
func cutFactKey(key string) (string, bool) { return strings.CutPrefix(key, "fact:") }

// Fact is f's Fact, read once per run for each declared name. Callers share the value and
// must not modify it.
func (m *Memo) Fact(ctx context.Context, d FactDecl) (any, error) {
	m.factsMu.Lock()
	if m.facts == nil {
		m.facts = map[string]*OnceValue[any]{}
	}
	o := m.facts[d.FactName()]
	if o == nil {
		o = &OnceValue[any]{}
		m.facts[d.FactName()] = o
	}
	m.factsMu.Unlock()
	return o.Get(ctx, func(ctx context.Context) (any, error) { return m.Facts.Fact(ctx, d) })
}

// factsMemo is Memo's state for declared facts.
type factsMemo struct {
	factsMu sync.Mutex
	facts   map[string]*OnceValue[any]
}
