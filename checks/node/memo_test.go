package node

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingFacts counts whole-node listings; PCIDevices blocks until release is closed.
type countingFacts struct {
	Facts
	pciCalls atomic.Int32
	release  chan struct{}
}

func (c *countingFacts) PCIDevices(ctx context.Context) ([]PCIDevice, error) {
	c.pciCalls.Add(1)
	<-c.release
	return []PCIDevice{{Address: "0000:19:00.0"}}, nil
}

func TestMemoReadsOncePerRun(t *testing.T) {
	inner := &countingFacts{release: make(chan struct{})}
	m := NewMemo(inner)

	// The first caller gives up at its deadline; the reading goes on for the next callers.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := m.PCIDevices(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first call: err = %v, want the caller's deadline", err)
	}
	close(inner.release)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			devs, err := m.PCIDevices(context.Background())
			if err != nil || len(devs) != 1 {
				t.Errorf("later call: %v, %v", devs, err)
			}
		}()
	}
	wg.Wait()
	if n := inner.pciCalls.Load(); n != 1 {
		t.Errorf("PCIDevices read %d times, want once", n)
	}
}
