package node

// The records of a snapshot's JSON files: what Recorder writes and Snapshot reads. A record
// embeds the fact it records (DevNode, GPU, GPUInventory) and adds only the replay's own keys
// (delays, timeouts), so that a field added to a fact is recorded and replayed with no
// change here (TestNVMLRecordRoundTrip fails for a field that is not). encoding/json names an
// embedded struct in its errors ("devices.GPU.pcie"); jsonError takes those names out, so
// that an error names the keys as a user reads the file.

// deviceRecord is one entry of devices.json: a DevNode and its delay.
type deviceRecord struct {
	DevNode
	DelayMS int `json:"delay_ms,omitempty"` // stall DevNode of this path that long
}

func (r deviceRecord) devNode() DevNode { return r.DevNode }

func newDeviceRecord(d DevNode) deviceRecord { return deviceRecord{DevNode: d} }

// commandRecord is one entry of commands.json.
type commandRecord struct {
	Argv       []string `json:"argv"`
	Stdout     string   `json:"stdout"`
	Stderr     string   `json:"stderr"`
	ExitCode   int      `json:"exit_code"`
	DurationMS int64    `json:"duration_ms"`         // informational; replayed as CmdResult.Duration
	Truncated  bool     `json:"truncated,omitempty"` // the recorded output was cut
	// CutFront says the recorded stdout is the output's end (KeepsTail); truncated without
	// it, a recording cut the end away.
	CutFront bool `json:"cut_front,omitempty"`
	// TimedOut marks a command killed at its deadline when recorded: replay hangs until ctx
	// is done, then returns the recorded partial output with ctx's error.
	TimedOut bool `json:"timed_out,omitempty"`
	DelayMS  int  `json:"delay_ms,omitempty"` // stall this long before answering
}

// nvmlRecord is nvml.json: a GPUInventory, whose devices are recorded with their delays in
// Devices (which takes the place of GPUInventory.Devices in the JSON, and leaves that one
// nil), plus the replay-only keys.
type nvmlRecord struct {
	GPUInventory             // Init is empty only where TimedOut
	Devices      []gpuRecord `json:"devices,omitempty"`
	DelayMS      int         `json:"delay_ms,omitempty"` // stall this long before answering
	// TimedOut marks an NVML reading that had not finished when the recording's deadline
	// came (a wedged GPU): replay hangs until ctx is done, then returns ctx's error.
	TimedOut bool `json:"timed_out,omitempty"`
}

// gpuRecord is one entry of nvml.json's devices: a GPU and its delay.
type gpuRecord struct {
	GPU
	DelayMS int `json:"delay_ms,omitempty"` // stall this long before this device is read
}

func (r gpuRecord) gpu() GPU { return r.GPU.Clone() }

func newGPURecord(g GPU) gpuRecord { return gpuRecord{GPU: g.Clone()} }

// nvmlInventory is the GPUInventory r records, without its delays.
func nvmlInventory(r nvmlRecord) GPUInventory {
	inv := r.GPUInventory
	inv.Devices = nil
	for _, d := range r.Devices {
		inv.Devices = append(inv.Devices, d.gpu())
	}
	return inv
}

func newNVMLRecord(inv GPUInventory) nvmlRecord {
	r := nvmlRecord{GPUInventory: inv}
	if r.Fields == LegacyGPUFields {
		r.Fields = 0 // what a file without "fields" means: the files nodecheck wrote before
	}
	r.GPUInventory.Devices = nil
	for _, g := range inv.Devices {
		r.Devices = append(r.Devices, newGPURecord(g))
	}
	return r
}
