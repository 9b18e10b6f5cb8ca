//go:build cgo

package nvml

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/nodecheck/nodecheck/checks/node"
)

// Source reads the node's GPUs through NVML; it implements node.GPUSource.
//
// A Source reads NVML once, at the first call to GPUs, for the facts that call asks for, and
// answers every call from that reading: the checks of one run see one consistent inventory,
// nvmlInit (which can take seconds on a node without persistence mode) runs once, and a
// wedged NVML holds one goroutine rather than one per check. Make a new Source for a fresh
// reading.
//
// The reading (nvmlInit, the reads, nvmlShutdown) runs in a goroutine of its own. When a
// caller's ctx ends first, GPUs returns ctx's error and the goroutine is abandoned, still
// blocked in NVML: nvmlShutdown then never runs, and the process exit releases the library
// and the driver's handles. nodecheck is a one-shot process, so nothing is lost.
//
// A Source is safe for concurrent use.
type Source struct {
	open func() api // the library; a seam for tests

	once sync.Once
	done chan struct{} // closed when the reading is over
	inv  node.GPUInventory
	err  error

	// session serialises NVML sessions (Init to Shutdown): the inventory and the NVLink
	// topology (nvlinks.go) are read in sessions of their own, and go-nvml's Init rewrites
	// package-level function pointers, so two at once would race.
	session sync.Mutex
	links   onceReading[node.NVLinkTopology]
}

var _ node.GPUSource = (*Source)(nil)

// Option changes one of Source's defaults.
type Option func(*Source)

// WithLibraryPath makes Source load NVML from path instead of libnvidia-ml.so.1 as the
// dynamic linker finds it.
func WithLibraryPath(path string) Option {
	return func(s *Source) { s.open = func() api { return openLibrary(path) } }
}

// withAPI makes Source read from a (fake) library: for tests with go-nvml's mocks.
func withAPI(a api) Option { return func(s *Source) { s.open = func() api { return a } } }

// New returns a Source; nothing is loaded until the first call to GPUs.
func New(opts ...Option) *Source {
	s := &Source{open: func() api { return openLibrary("") }}
	for _, o := range opts {
		o(s)
	}
	return s
}

// GPUs implements node.GPUSource. NVML failing to initialise is an answer, Init holding
// its error name (ERROR_LIBRARY_NOT_FOUND where the driver is not installed,
// ERROR_DRIVER_NOT_LOADED where its kernel module is not loaded). The error return is
// for ctx ending before NVML answered, and for a device count NVML would not give.
//
// Only the calls the facts in want need are made (see fieldCalls); the first call's want is
// the reading's, and GPUInventory.Fields says what it was.
func (s *Source) GPUs(ctx context.Context, want node.GPUFields) (node.GPUInventory, error) {
	if err := ctx.Err(); err != nil {
		return node.GPUInventory{}, fmt.Errorf("read NVML: %w", err)
	}
	s.once.Do(func() {
		s.done = make(chan struct{})
		go func() {
			defer close(s.done)
			defer func() {
				// A panic in an abandoned goroutine would kill the process: report it instead.
				if p := recover(); p != nil {
					s.inv, s.err = node.GPUInventory{}, fmt.Errorf("read NVML: panic: %v", p)
				}
			}()
			s.session.Lock()
			defer s.session.Unlock()
			s.inv, s.err = read(s.open(), want)
		}()
	})
	select {
	case <-s.done:
		return s.inv.Clone(), s.err
	case <-ctx.Done():
		return node.GPUInventory{}, fmt.Errorf("read NVML: no answer before the deadline (a wedged GPU can block NVML for minutes; check dmesg for Xid errors): %w", ctx.Err())
	}
}

// api is the part of NVML Source uses. go-nvml's nvml.Interface, and its mocks, provide
// every method but fabric, which goes through go-nvml's GpuFabricInfoHandler: a mock
// cannot fake that (its zero handler calls into the real library), so the adapter owns it;
// and hasSymbol, which a mock answers for the driver it plays.
type api interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	SystemGetDriverVersion() (string, nvml.Return)
	SystemGetCudaDriverVersion() (int, nvml.Return)
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(index int) (nvml.Device, nvml.Return)
	// fabric returns the device's fabric information in the v3 struct's terms (go-nvml's
	// GpuFabricInfo_v3): a driver that only knows an older struct leaves the fields it lacks
	// at zero, which nvml.h defines as NOT_SUPPORTED (HealthSummary with v2; HealthMask too
	// with v1). It is called only after a successful Init, and returns
	// ERROR_FUNCTION_NOT_FOUND where the library has no fabric call at all.
	fabric(d nvml.Device) (nvml.GpuFabricInfo_v3, nvml.Return)
	// hasSymbol says whether the loaded library exports the C function name. It is called
	// only after a successful Init, before any call to a function that older drivers lack:
	// calling a function the library does not have kills the process.
	hasSymbol(name string) bool
}

// library is api over the real libnvidia-ml.
type library struct {
	nvml.Interface

	symbolsOnce sync.Once
	hasFabricV  bool // nvmlDeviceGetGpuFabricInfoV: newer drivers
	hasFabricV1 bool // nvmlDeviceGetGpuFabricInfo: older drivers; nvml.h deprecates it (13.0)
}

// openLibrary returns the library at path ("" for libnvidia-ml.so.1). Nothing is loaded
// before Init.
func openLibrary(path string) api {
	var opts []nvml.LibraryOption
	if path != "" {
		opts = append(opts, nvml.WithLibraryPath(path))
	}
	return &library{Interface: nvml.New(opts...)}
}

// fabric implements api with the versioned call where the driver has it: v3 first, v2
// where the driver says the v3 struct is too new (ERROR_ARGUMENT_VERSION_MISMATCH); with
// the deprecated unversioned call on drivers before the versioned one. A function the
// library lacks is never called: the dynamic linker would kill the process.
func (l *library) fabric(d nvml.Device) (nvml.GpuFabricInfo_v3, nvml.Return) {
	l.symbolsOnce.Do(func() {
		// LookupSymbol needs the library loaded, which a successful Init guarantees.
		ext := l.Extensions()
		l.hasFabricV = ext.LookupSymbol("nvmlDeviceGetGpuFabricInfoV") == nil
		l.hasFabricV1 = ext.LookupSymbol("nvmlDeviceGetGpuFabricInfo") == nil
	})
	switch {
	case l.hasFabricV:
		info, ret := d.GetGpuFabricInfoV().V3()
		if ret != nvml.ERROR_ARGUMENT_VERSION_MISMATCH {
			return info, ret
		}
		v2, ret := d.GetGpuFabricInfoV().V2()
		return nvml.GpuFabricInfo_v3{State: v2.State, Status: v2.Status, HealthMask: v2.HealthMask}, ret
	case l.hasFabricV1:
		v1, ret := d.GetGpuFabricInfo()
		return nvml.GpuFabricInfo_v3{State: v1.State, Status: v1.Status}, ret
	}
	return nvml.GpuFabricInfo_v3{}, nvml.ERROR_FUNCTION_NOT_FOUND
}

// hasSymbol implements api. LookupSymbol needs the library loaded, which a successful Init
// guarantees; it is one dlsym, cheap enough not to cache.
func (l *library) hasSymbol(name string) bool {
	return l.Extensions().LookupSymbol(name) == nil
}

// read takes the inventory of the facts in want: Init, the reads, Shutdown. Nothing but Init
// is called unless Init succeeded.
func read(lib api, want node.GPUFields) (node.GPUInventory, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		// After a failed Init every other call (Shutdown included) jumps into a library that
		// is not loaded, which kills the process: stop here.
		return node.GPUInventory{Init: returnName(ret)}, nil
	}
	defer lib.Shutdown() // its result changes nothing that was read
	inv := node.GPUInventory{Init: node.InitSuccess, Fields: want}
	if want.Has(node.GPUDriverVersion) {
		if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
			inv.DriverVersion = v
		}
	}
	if want.Has(node.GPUCUDAVersion) {
		if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
			inv.CUDADriverVersion = v
		}
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return inv, fmt.Errorf("read NVML: count GPUs: nvmlDeviceGetCount: %s", returnName(ret))
	}
	inv.DeviceCount = n
	for i := range n {
		inv.Devices = append(inv.Devices, readDevice(lib, i, want))
	}
	return inv, nil
}

// readDevice reads the facts in want of GPU i. A handle NVML will not give, or a read saying
// the GPU is gone (ERROR_GPU_IS_LOST, ERROR_RESET_REQUIRED), sets Error and ends the reading
// of this GPU: every further call would fail the same way, each perhaps slowly. Any other
// failed read (ERROR_NOT_SUPPORTED included) leaves its field at its zero (MinorNumber -1) or
// nil, as node.GPU documents; so does a fact not in want, which costs no call.
func readDevice(lib api, i int, want node.GPUFields) node.GPU {
	g := node.GPU{Index: i, MinorNumber: -1}
	d, ret := lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		g.Error = returnName(ret)
		return g
	}
	var pcie node.PCIe
	pcieRead := false
	link := func(get func() (int, nvml.Return), dst *int) func() nvml.Return {
		return func() nvml.Return {
			v, ret := get()
			if ret == nvml.SUCCESS {
				*dst, pcieRead = v, true
			}
			return ret
		}
	}
	reads := []deviceRead{
		{node.GPUPCIe, link(d.GetCurrPcieLinkWidth, &pcie.CurLinkWidth)},
		{node.GPUPCIe, link(d.GetMaxPcieLinkWidth, &pcie.MaxLinkWidth)},
		{node.GPUPCIe, link(d.GetCurrPcieLinkGeneration, &pcie.CurLinkGen)},
		{node.GPUPCIe, link(d.GetMaxPcieLinkGeneration, &pcie.MaxLinkGen)},
		{node.GPUFabric, func() nvml.Return {
			info, ret := lib.fabric(d)
			g.Fabric = fabricOf(info, ret)
			return ret
		}},
		{node.GPUECC | node.GPUECCCorrected, func() nvml.Return { return readECC(d, &g, want) }},
		{node.GPURemappedRows, func() nvml.Return { return readRemappedRows(lib, d, &g) }},
		{node.GPURetiredPages, func() nvml.Return { return readRetiredPages(d, &g) }},
		{node.GPUNVLinks | node.GPUNVLinkErrors, func() nvml.Return { return readNVLinks(lib, d, &g, want) }},
		{node.GPUMemory, func() nvml.Return { return readMemory(lib, d, &g) }},
		{node.GPUCompute, func() nvml.Return { return readCompute(lib, d, &g) }},
	}
	reads = append(identityReads(d, &g), reads...)
	reads = append(reads, signalReads(lib, d, &g, want)...)
	for _, r := range reads {
		if want&r.fields == 0 {
			continue
		}
		if ret := r.read(); gone(ret) {
			g.Error = returnName(ret)
			break
		}
	}
	if pcieRead {
		g.PCIe = &pcie
	}
	return g
}

// identityReads are the reads that say which GPU d is: its minor number, UUID, name, bus id
// and serial, each made only when wanted (readDevice).
func identityReads(d nvml.Device, g *node.GPU) []deviceRead {
	return []deviceRead{
		{node.GPUMinorNumber, func() nvml.Return {
			v, ret := d.GetMinorNumber()
			if ret == nvml.SUCCESS {
				g.MinorNumber = v
			}
			return ret
		}},
		{node.GPUUUID, func() nvml.Return {
			v, ret := d.GetUUID()
			if ret == nvml.SUCCESS {
				g.UUID = v
			}
			return ret
		}},
		{node.GPUName, func() nvml.Return {
			v, ret := d.GetName()
			if ret == nvml.SUCCESS {
				g.Name = v
			}
			return ret
		}},
		{node.GPUPCIBusID, func() nvml.Return {
			v, ret := d.GetPciInfo()
			if ret == nvml.SUCCESS {
				g.PCIBusID = busID(v.BusId)
			}
			return ret
		}},
		{node.GPUSerial, func() nvml.Return {
			v, ret := d.GetSerial()
			if ret == nvml.SUCCESS {
				g.Serial = v
			}
			return ret
		}},
	}
}

// deviceRead is one read of readDevice: made when want has any of fields.
type deviceRead struct {
	fields node.GPUFields
	read   func() nvml.Return
}

// gone says whether ret means the GPU can no longer be read: it fell off the bus, or it
// needs a reset before NVML can talk to it again.
func gone(ret nvml.Return) bool {
	return ret == nvml.ERROR_GPU_IS_LOST || ret == nvml.ERROR_RESET_REQUIRED
}

// The reads below each fill one field of g and return the NVML result that decides
// whether the GPU is gone: the first such result of their calls, after which they call
// nothing more. Every other failure leaves the field nil.
//
// Which calls could meet a driver whose library lacks the function (go-nvml v0.13.4-1,
// pkg/nvml: its cgo wrappers call the C symbol directly and the linker binds it lazily at
// the first call, so a missing one ends the process with "symbol lookup error", exit 127):
//   - nvmlDeviceGetEccMode, nvmlDeviceGetTotalEccErrors, nvmlDeviceGetMemoryInfo,
//     nvmlDeviceGetRetiredPages, nvmlDeviceGetRetiredPagesPendingStatus and
//     nvmlDeviceGetNvLinkState date from the Kepler and Pascal drivers, older than any
//     driver a Slurm GPU node still runs: called as they are.
//   - nvmlDeviceGetRemappedRows came with Ampere (R450); Volta and older nodes can run
//     drivers without it: looked up first.
//   - nvmlDeviceGetMemoryInfo_v2 came with the R510 drivers, and go-nvml calls it by that
//     name with no fallback: looked up first, nvmlDeviceGetMemoryInfo otherwise.
//   - GetComputeRunningProcesses is safe wherever one of its three symbols is: at load
//     (updateVersionedSymbols, lib.go) go-nvml switches to
//     nvmlDeviceGetComputeRunningProcesses_v3, else _v2, where the library has them, and
//     otherwise calls the unversioned nvmlDeviceGetComputeRunningProcesses (nvml.go builds
//     with NVML_NO_UNVERSIONED_FUNC_DEFS, so that name is not renamed to _v3). It is looked
//     up too, so that a library with none of the three (a stub) cannot end the process.

// readECC fills g.ECC from nvmlDeviceGetEccMode; nil where the GPU has no ECC
// (ERROR_NOT_SUPPORTED) or the mode cannot be read. The counters are read only with ECC
// on: nvml.h says nvmlDeviceGetTotalEccErrors "requires ECC Mode to be enabled", and only
// those of want: the uncorrectable ones with GPUECC, the correctable one with
// GPUECCCorrected. A counter that cannot be read stays nil, so that 0 always means a read
// zero.
func readECC(d nvml.Device, g *node.GPU, want node.GPUFields) nvml.Return {
	current, pending, ret := d.GetEccMode()
	if ret != nvml.SUCCESS {
		return ret
	}
	e := &node.ECC{Enabled: current == nvml.FEATURE_ENABLED, PendingEnabled: pending == nvml.FEATURE_ENABLED}
	g.ECC = e
	if !e.Enabled {
		return ret
	}
	for _, c := range []struct {
		fact    node.GPUFields
		dst     **uint64
		errType nvml.MemoryErrorType
		counter nvml.EccCounterType
	}{
		{node.GPUECC, &e.VolatileUncorrected, nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC},
		{node.GPUECCCorrected, &e.VolatileCorrected, nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC},
		{node.GPUECC, &e.AggregateUncorrected, nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC},
	} {
		if !want.Has(c.fact) {
			continue
		}
		n, ret := d.GetTotalEccErrors(c.errType, c.counter)
		if gone(ret) {
			return ret
		}
		if ret == nvml.SUCCESS {
			*c.dst = &n
		}
	}
	return nvml.SUCCESS
}

// readRemappedRows fills g.RemappedRows; nil before Ampere and on a MIG-enabled GPU with
// active instances (ERROR_NOT_SUPPORTED), and where the library has no such function.
func readRemappedRows(lib api, d nvml.Device, g *node.GPU) nvml.Return {
	if !lib.hasSymbol("nvmlDeviceGetRemappedRows") {
		return nvml.ERROR_FUNCTION_NOT_FOUND
	}
	corr, unc, pending, failed, ret := d.GetRemappedRows()
	if ret == nvml.SUCCESS {
		g.RemappedRows = &node.RemappedRows{Correctable: corr, Uncorrectable: unc, Pending: pending, Failed: failed}
	}
	return ret
}

// readRetiredPages fills g.RetiredPages; nil on Ampere and later (ERROR_NOT_SUPPORTED: they
// remap rows instead). It is all or nothing: a count NVML would not give is not a zero.
func readRetiredPages(d nvml.Device, g *node.GPU) nvml.Return {
	single, ret := d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
	if ret != nvml.SUCCESS {
		return ret
	}
	double, ret := d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
	if ret != nvml.SUCCESS {
		return ret
	}
	pending, ret := d.GetRetiredPagesPendingStatus()
	if ret != nvml.SUCCESS {
		return ret
	}
	g.RetiredPages = &node.RetiredPages{
		SingleBit: len(single), DoubleBit: len(double), Pending: pending == nvml.FEATURE_ENABLED,
	}
	return ret
}

// readNVLinks walks the link states (nvmlDeviceGetNvLinkState) and fills g.NVLinks where
// want has them, and g.NVLinkErrors over the active links where want has those. NVML has
// no call for a GPU's link count that a mock can fake (nvmlDeviceGetNvLinkInfo goes through
// a handler, see api), so every index up to NVML_NVLINK_MAX_LINKS is asked:
// ERROR_INVALID_ARGUMENT means the index is past the GPU's links and ends the walk (every
// later index is invalid too); ERROR_NOT_SUPPORTED (a GPU without NVLink, or a link the
// board does not wire) and other failures leave that one link out. A GPU gone halfway
// leaves NVLinks nil rather than a list a check would take for missing links.
func readNVLinks(lib api, d nvml.Device, g *node.GPU, want node.GPUFields) nvml.Return {
	var links []node.NVLink
	for link := range nvml.NVLINK_MAX_LINKS {
		state, ret := d.GetNvLinkState(link)
		if gone(ret) {
			return ret
		}
		if ret == nvml.ERROR_INVALID_ARGUMENT {
			break
		}
		if ret == nvml.SUCCESS {
			links = append(links, node.NVLink{Link: link, Active: state == nvml.FEATURE_ENABLED})
		}
	}
	if want.Has(node.GPUNVLinks) {
		g.NVLinks = links
	}
	if want.Has(node.GPUNVLinkErrors) {
		return readNVLinkErrors(lib, d, g, links)
	}
	return nvml.SUCCESS
}

// readMemory fills g.Memory, from nvmlDeviceGetMemoryInfo_v2 where the library has it (its
// Used leaves out what the driver reserves, as nvidia-smi shows it; go-nvml sets the
// struct's version), else from nvmlDeviceGetMemoryInfo. A v2 call that fails for a reason
// other than a lost GPU falls back to v1: a library can export v2 and still fail it (WSL
// answers ERROR_UNKNOWN: https://github.com/XuehaiPan/nvitop/pull/30).
func readMemory(lib api, d nvml.Device, g *node.GPU) nvml.Return {
	if lib.hasSymbol("nvmlDeviceGetMemoryInfo_v2") {
		m, ret := d.GetMemoryInfo_v2()
		if ret == nvml.SUCCESS {
			g.Memory = &node.Memory{TotalMiB: mib(m.Total), UsedMiB: mib(m.Used), ReservedMiB: mib(m.Reserved)}
		}
		if ret == nvml.SUCCESS || gone(ret) {
			return ret
		}
	}
	m, ret := d.GetMemoryInfo()
	if ret == nvml.SUCCESS {
		g.Memory = &node.Memory{TotalMiB: mib(m.Total), UsedMiB: mib(m.Used)}
	}
	return ret
}

// computeSymbols are the functions go-nvml's GetComputeRunningProcesses may call, one of
// which it picks at load; see the note above readECC.
var computeSymbols = []string{
	"nvmlDeviceGetComputeRunningProcesses_v3",
	"nvmlDeviceGetComputeRunningProcesses_v2",
	"nvmlDeviceGetComputeRunningProcesses",
}

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE ((-1) in nvml.h) as an unsigned long long
// field holds it: nvmlProcessInfo_t.usedGpuMemory under MIG without privileges.
const valueNotAvailable = ^uint64(0)

// readCompute fills g.Compute with the GPU's compute processes: PID and memory only, UID -1;
// the live node layer adds owner and command from /proc. None running is an empty,
// non-nil list; nil is "could not list" (ERROR_NO_PERMISSION, ERROR_NOT_SUPPORTED, ...).
func readCompute(lib api, d nvml.Device, g *node.GPU) nvml.Return {
	if !slices.ContainsFunc(computeSymbols, lib.hasSymbol) {
		return nvml.ERROR_FUNCTION_NOT_FOUND
	}
	procs, ret := d.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return ret
	}
	c := &node.Compute{Processes: make([]node.Process, 0, len(procs))}
	for _, p := range procs {
		used := p.UsedGpuMemory
		if used == valueNotAvailable {
			used = 0
		}
		c.Processes = append(c.Processes, node.Process{PID: p.Pid, UsedMiB: mib(used), UID: -1})
	}
	g.Compute = c
	return ret
}

// mib turns NVML's bytes into MiB, rounded down.
func mib(b uint64) uint64 { return b / (1 << 20) }

// fabricOf turns a fabric query into node.Fabric: nil where NVML has no fabric information
// (the call is not supported, the library lacks it, or the state says NOT_SUPPORTED: GPUs
// before Hopper, or without NVSwitch); state UNKNOWN with the query's error as status where
// the query failed otherwise.
func fabricOf(info nvml.GpuFabricInfo_v3, ret nvml.Return) *node.Fabric {
	switch {
	case ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND:
		return nil
	case gone(ret):
		return nil // the device is gone: GPU.Error says so
	case ret != nvml.SUCCESS:
		return &node.Fabric{State: "UNKNOWN", Status: returnName(ret)}
	case info.State == nvml.GPU_FABRIC_STATE_NOT_SUPPORTED:
		return nil
	}
	return &node.Fabric{State: fabricStateName(info.State), Status: returnName(nvml.Return(info.Status)),
		Health: fabricHealthOf(info.HealthMask, info.HealthSummary)}
}

// busID reads nvmlPciInfo_t.busId, a NUL-terminated C string in a fixed array:
// "00000000:19:00.0" (NVML_DEVICE_PCI_BUS_ID_FMT, 8-digit domain, upper-case hex).
func busID(b [32]int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
