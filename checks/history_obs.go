package checks

// What one run tells the node's history (history.Observation), gathered from node.Facts
// only, so that a live run and a snapshot replay observe the same way: the boot id and the
// uptime (/proc), the kernel log (dmesg, as xid_errors reads it), NVML's GPUs with their
// identity and error counters, and the InfiniBand ports' states.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/text"
)

// The /proc files a run reads to tell boots apart and to put kernel times on the clock. A
// snapshot records them under fs/proc/...
const (
	// bootIDPath holds a random UUID the kernel makes at each boot (random(4)).
	bootIDPath = "/proc/sys/kernel/random/boot_id"
	// uptimePath holds the seconds since boot and the idle seconds ("350735.47 234388.90",
	// proc(5)): the boot began at the run's time less the first.
	uptimePath = "/proc/uptime"
)

// BootFiles are the files a snapshot records for the history (nodecheck snapshot reads them
// through its recorder).
func BootFiles() []string { return []string{bootIDPath, uptimePath} }

// bootFileTimeout bounds each read of the boot id and the uptime: two small /proc files.
const bootFileTimeout = time.Second

// gatherObservation reads what this run tells the history, each fact under the timeout of
// the check that judges it (so that a hung sysfs or a wedged GPU costs the history step no
// more than it costs that check), and notes in r what it saw. Missing facts leave their part
// out, with a note: no boot id means nothing can be merged (the caller says so), no uptime
// puts the kernel log's events at the run's time.
func gatherObservation(ctx context.Context, env *Env, r *runHistory, need observed) history.Observation {
	now := r.now
	obs := history.Observation{Time: now}
	note := func(format string, args ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, args...)) }
	within := func(d time.Duration) (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, d) }
	kl := r.kernel

	bctx, cancel := within(bootFileTimeout)
	defer cancel()
	if b, err := env.Facts.ReadFile(bctx, bootIDPath); err != nil {
		note("boot id not read: %s", text.OneLine(err.Error(), 160))
	} else if id, err := parseBootID(string(b)); err != nil {
		note("%s: %v", bootIDPath, err)
	} else {
		obs.BootID = id
	}
	if b, err := env.Facts.ReadFile(bctx, uptimePath); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			note("uptime not read: %s", text.OneLine(err.Error(), 160))
		}
	} else if up, err := parseUptime(string(b)); err != nil {
		note("%s: %v", uptimePath, err)
	} else {
		obs.BootTime = now.Add(-up).Truncate(time.Second)
	}
	if kl != nil && kl.ok {
		scan := history.ScanKernelLog(kl.out.Stdout)
		obs.XIDs, obs.KernelLinks, obs.DriverLoads = scan.XIDs, scan.Links, scan.DriverLoads
	}
	if need.gpus {
		// NVML names the GPUs of the XIDs and reads their counters, under gpu_error_rates'
		// timeout.
		gctx, cancel := within(Settings(env.Config, gpuErrorRates{}).Timeout)
		if inv, err := env.Facts.GPUs(gctx); err != nil {
			note("GPUs not read: %s", text.OneLine(err.Error(), 160))
		} else if inv.Init == node.InitSuccess {
			obs.GPUs = gpuObservations(inv)
		}
		cancel()
	}
	if need.ports {
		// The ports are read under ib_flaps' settings (its timeout, link_downed_counter).
		flaps := settings[*ibFlapsConfig](env.Config, idIBFlaps)
		pctx, cancel := within(flaps.Timeout)
		ports, err := env.Facts.IBPorts(pctx)
		r.portsErr = err
		if err != nil {
			// A port read that failed says nothing about its state: no state is recorded,
			// rather than a down that did not happen.
			note("InfiniBand ports not read: %s", text.OneLine(err.Error(), 160))
		} else {
			r.ports = len(ports)
			obs.Ports = portObservations(pctx, env.Facts, ports, flaps.LinkDownedCounter)
		}
		cancel()
	}
	return obs
}

// parseBootID reads boot_id: a UUID and a newline.
func parseBootID(s string) (string, error) {
	id := strings.TrimSpace(s)
	if len(id) != 36 || strings.Count(id, "-") != 4 || strings.Trim(strings.ToLower(id), "0123456789abcdef-") != "" {
		return "", fmt.Errorf("%q is not a boot id (a UUID such as 3f9c1e2a-5b7d-4c8e-9f10-0123456789ab)", text.OneLine(id, 60))
	}
	return strings.ToLower(id), nil
}

// parseUptime reads the first field of /proc/uptime, the seconds since boot.
func parseUptime(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, errors.New("empty")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v > 100*365*24*3600 {
		return 0, fmt.Errorf("%q is not a number of seconds since boot", text.OneLine(f[0], 40))
	}
	return time.Duration(v * float64(time.Second)), nil
}

// The GPU facts gpuObservations records: a run whose checks keep history asks NVML for them
// (xid_errors and gpu_error_rates name them in GPUFields). Every such run reads the identity,
// so that a GPU's record is found by UUID and serial in every mode; the counters are read
// where gpu_error_rates runs.
const (
	historyGPUIdentity = node.GPUUUID | node.GPUSerial | node.GPUPCIBusID | node.GPUName
	historyGPUCounters = node.GPUECCCorrected | node.GPUNVLinkErrors | node.GPUPCIeReplays
)

// gpuObservations are NVML's GPUs with their identity and the counters the rate rules read.
// A GPU NVML lost still names its UUID and bus, so its record goes on; counters it did not
// read are left unread, and so is an NVLink counter some active link would not give
// (NVLinkErrors.Unread: its sum is 0, not a reading).
func gpuObservations(inv node.GPUInventory) []history.GPUObs {
	var out []history.GPUObs
	for _, g := range inv.Devices {
		o := history.GPUObs{UUID: g.UUID, Serial: g.Serial, Bus: g.PCIBusID, Index: g.Index, Name: g.Name}
		if g.ECC != nil && g.ECC.VolatileCorrected != nil {
			o.Counters[history.ECCCorrected] = history.Read(*g.ECC.VolatileCorrected)
		}
		if e := g.NVLinkErrors; e != nil {
			read := func(names ...string) bool {
				return !slices.ContainsFunc(names, func(n string) bool { return slices.Contains(e.Unread, n) })
			}
			if read("crc_flit", "crc_data") {
				o.Counters[history.NVLinkCRC] = history.Read(e.CRCFlit + e.CRCData)
			}
			if read("replay") {
				o.Counters[history.NVLinkReplay] = history.Read(e.Replay)
			}
			if read("recovery") {
				o.Counters[history.NVLinkRecovery] = history.Read(e.Recovery)
			}
		}
		if g.PCIeReplays != nil {
			o.Counters[history.PCIeReplay] = history.Read(*g.PCIeReplays)
		}
		out = append(out, o)
	}
	return out
}

// portObservations are the ports' states; with downed, also each port's counters/link_downed
// (opt-in: on some ConnectX-7 cards reading port counters floods the kernel log).
func portObservations(ctx context.Context, facts node.Facts, ports []node.IBPort, downed bool) []history.PortObs {
	var out []history.PortObs
	for _, p := range ports {
		if p.StateID == 0 {
			continue // a state that could not be read is not a state
		}
		o := history.PortObs{Device: p.Device, Port: int(p.Port), State: int(p.StateID), PhysState: int(p.PhysStateID)}
		if downed {
			path := fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/counters/link_downed", p.Device, p.Port)
			if b, err := facts.ReadFile(ctx, path); err == nil {
				if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
					o.LinkDowned = history.Read(v)
				}
			}
		}
		out = append(out, o)
	}
	return out
}
