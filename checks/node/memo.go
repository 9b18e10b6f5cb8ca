package node

import (
	"context"
	"sync"
)

// Memo is a Facts that reads each whole-node listing (PCI devices, InfiniBand ports, the NVML
// inventory, every declared fact) once per run and answers every later call from that reading: gpu_count,
// pcie_link and fabric_manager all look at the PCI bus, and a prolog must not walk sysfs
// three times. Single files, device nodes and commands pass through, unmemoized.
type Memo struct {
	Facts
	gpuFields GPUFields // 0: every fact
	pci       OnceValue[[]PCIDevice]
	ib        OnceValue[[]IBPort]
	gpus      OnceValue[GPUInventory]
	factsMemo // declared facts, by name (fact.go)
}

var _ Facts = (*Memo)(nil)

// MemoOption changes one of Memo's defaults.
type MemoOption func(*Memo)

// WithGPUFields makes the one NVML reading of the run take only the facts in want, where f
// can limit its reading (GPUFieldsReader: the live node); a snapshot answers with what it
// recorded. 0, the default, reads every fact.
func WithGPUFields(want GPUFields) MemoOption { return func(m *Memo) { m.gpuFields = want } }

// NewMemo wraps f for one run.
func NewMemo(f Facts, opts ...MemoOption) *Memo {
	m := &Memo{Facts: f}
	for _, o := range opts {
		o(m)
	}
	return m
}

// PCIDevices is f.PCIDevices, read once. Callers share the slice and must not modify it.
func (m *Memo) PCIDevices(ctx context.Context) ([]PCIDevice, error) {
	return m.pci.Get(ctx, m.Facts.PCIDevices)
}

// IBPorts is f.IBPorts, read once. Callers share the slice and must not modify it.
func (m *Memo) IBPorts(ctx context.Context) ([]IBPort, error) {
	return m.ib.Get(ctx, m.Facts.IBPorts)
}

// GPUs is f.GPUs, read once, of the facts WithGPUFields named. Callers share the devices and
// must not modify them.
func (m *Memo) GPUs(ctx context.Context) (GPUInventory, error) {
	r, ok := m.Facts.(GPUFieldsReader)
	if !ok || m.gpuFields == 0 || m.gpuFields == AllGPUFields {
		return m.gpus.Get(ctx, m.Facts.GPUs)
	}
	return m.gpus.Get(ctx, func(ctx context.Context) (GPUInventory, error) { return r.GPUsFields(ctx, m.gpuFields) })
}

// OnceValue computes a value once; each caller waits for it only as long as its own ctx
// allows. The load runs detached from the first caller's deadline, so a check that times
// out does not leave a cancelled result behind for the next one; a load that truly hangs (a
// stale mount, a wedged driver) is abandoned with the process.
type OnceValue[T any] struct {
	once sync.Once
	done chan struct{}
	val  T
	err  error
}

// Get returns the value, loading it on the first call.
func (o *OnceValue[T]) Get(ctx context.Context, load func(context.Context) (T, error)) (T, error) {
	o.once.Do(func() {
		o.done = make(chan struct{})
		go func(ctx context.Context) {
			defer close(o.done)
			o.val, o.err = load(ctx)
		}(context.WithoutCancel(ctx))
	})
	select {
	case <-o.done:
		return o.val, o.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
