package history

import (
	"slices"
	"time"
)

// Rules are the thresholds the judges use. DefaultRules gives each its source; a site
// overrides any of them (the integration maps nodecheck.toml onto this struct).
type Rules struct {
	// ResetXIDs stay a failure of their GPU until the GPU is reset (a reset seen, a driver
	// reload in the kernel log, or the GPU's volatile counters restarting), the node reboots
	// (a new boot id), or an admin clears them.
	ResetXIDs []int
	// RebootXIDs stay a failure until the node reboots or an admin clears them: a reset
	// does not reach a GPU that fell off the bus.
	RebootXIDs []int
	// AppXIDs are what an application usually causes: they only warn, and fail through
	// Repeats when they come back on one GPU.
	AppXIDs []int
	// IgnoreXIDs are never judged (still kept and shown in the timeline).
	IgnoreXIDs []int
	// Decode classes an XID in none of the four lists by its record: NVIDIA's catalog
	// resolves the NVLink5 XIDs (144-150) and XID 154 by what their message says, so one
	// number may need a reset or nothing. nil: such an XID warns.
	Decode func(xid int, msg, loc string) XIDClass
	// Repeats fail a GPU on which an XID comes back too often.
	Repeats []RepeatRule
	// RecentXIDs is how long any XID not otherwise failing warns after it was seen.
	RecentXIDs time.Duration

	// Rates holds the warn and fail rate per hour of each sampled counter.
	Rates [NumCounters]RateRule
	// MinSpan is the least time between the two readings of a rate: readings seconds apart
	// make a noisy rate out of a handful of errors.
	MinSpan time.Duration
	// RateWindow is how far back the worst rate is looked for: a fault that shows under load
	// (NVSentinel #1748: 0/s idle, thousands/s under load) still fails an idle node for a day.
	RateWindow time.Duration

	// FlapWindow, FlapWarn and FlapFail: a port whose link went down FlapFail times within
	// FlapWindow fails, once warns.
	FlapWindow time.Duration
	FlapWarn   int
	FlapFail   int
	// FlapSticky keeps a port that failed for flapping failed until reboot or clear.
	FlapSticky bool
}

// XIDClass is what an XID record is to the judges.
type XIDClass int

// The classes of XID records.
const (
	XIDWarn   XIDClass = iota // warns while recent, fails only on repeats
	XIDReset                  // fails until a GPU reset, a driver reload, a reboot or a clear
	XIDReboot                 // fails until a reboot or a clear
	XIDIgnore                 // never judged
)

// Class is x's class: by the lists (ignore first), then by Decode.
func (r Rules) Class(x XID) XIDClass {
	switch {
	case slices.Contains(r.IgnoreXIDs, x.XID):
		return XIDIgnore
	case slices.Contains(r.RebootXIDs, x.XID):
		return XIDReboot
	case slices.Contains(r.ResetXIDs, x.XID):
		return XIDReset
	case slices.Contains(r.AppXIDs, x.XID) || r.Decode == nil:
		return XIDWarn
	}
	return r.Decode(x.XID, x.Msg, x.Loc)
}

// RepeatRule fails a GPU on which an XID came back Count times within Window. Lines closer
// than Gap are one burst and count once; XIDs in LongGapXIDs count once per LongGap.
type RepeatRule struct {
	Name string
	// XIDs are the XIDs counted; empty means every XID not in Except.
	XIDs   []int
	Except []int
	// Count bursts within Window fail; 0 never fails (the rule only names the XID).
	Count  int
	Window time.Duration
	Gap    time.Duration
	// SameLoc counts per GPC/TPC (XID 13 lines name them): the same unit failing again
	// points at the GPU, different units at the application.
	SameLoc     bool
	LongGapXIDs []int
	LongGap     time.Duration
	Source      string
}

// RateRule is a warn and a fail rate per hour; 0 turns a level off.
type RateRule struct {
	Warn, Fail float64
	Source     string
}

// DefaultRules are nodecheck's defaults, each with its source.
func DefaultRules() Rules {
	const day = 24 * time.Hour
	return Rules{
		// The XID lists here are the package's own small defaults, which its tests
		// judge by. nodecheck never judges by them: the xid_errors check replaces all four
		// and sets Decode, from NVIDIA's XID catalog (checks/xid_catalog.go) and the
		// site's [checks.xid_errors] lists (HistoryRules).
		ResetXIDs:  []int{48, 61, 62, 63, 64, 74, 92, 94, 95, 119, 120, 140, 154},
		RebootXIDs: []int{79},
		AppXIDs:    []int{13, 31, 43, 45},
		// NVSentinel's health-events-analyzer repeat rules
		// (distros/kubernetes/nvsentinel/charts/health-events-analyzer/values.yaml at
		// 09dfc8f9060a99ad1881887154a9440270de8fd3).
		Repeats: []RepeatRule{
			{Name: "XID 13 on one GPC/TPC", XIDs: []int{13}, Count: 2, Window: day, Gap: 15 * time.Second, SameLoc: true,
				Source: "NVSentinel RepeatedXID13OnSameGPCAndTPC: 2 in 24 h, bursts 15 s apart"},
			{Name: "XID 31 on one GPU", XIDs: []int{31}, Count: 2, Window: day, Gap: 3 * time.Minute,
				Source: "NVSentinel RepeatedXID31OnSameGPU: 2 in 24 h, bursts 3 min apart"},
			// NVSentinel leaves out 45 ("not solo: IGNORE (follow other Xid)"): it is the
			// cleanup after another XID or a killed job, and scancel on a busy node would
			// reach 5 in a day. It stays an application XID here, warning only.
			{Name: "XID on one GPU", Except: []int{31, 45}, Count: 5, Window: day, Gap: 3 * time.Minute,
				LongGapXIDs: []int{74, 79, 95, 109, 119}, LongGap: 3 * time.Hour,
				Source: "NVSentinel RepeatedXIDErrorOnSameGPU: any XID but 31 and 45, 5 in 24 h, bursts 3 min apart, sticky XIDs 3 h apart"},
		},
		RecentXIDs: day,
		Rates: [NumCounters]RateRule{
			ECCCorrected: {Warn: 6000, Fail: 3_600_000,
				Source: "warn: Azure cyclecloud-healthagent's DCGM_FI_DEV_ECC_SBE_AGG_TOTAL delta_gt 100/min (defaults.yaml at 594c042); " +
					"fail: 1000/s, a quarter of NVSentinel #1748's degraded GPU (4,647/s, then 17,657/s under load; its healthy peers 0/s)"},
			NVLinkCRC: {Warn: 60, Fail: 360_000,
				Source: "warn: DCGM's NVLink health watch warns at 1 CRC error a minute (DCGM_LIMIT_MAX_NVLINK_ERROR); " +
					"fail: 100/s, DCGM_LIMIT_MAX_NVLINK_CRC_ERROR (\"CRC errors only matter at rates of 100+ per second\")"},
			NVLinkReplay: {Warn: 1, Fail: 60,
				Source: "DCGM's NVLink health watch fails on 1 replay error a minute (DCGM_LIMIT_MAX_NVLINK_ERROR, DCGM_FR_NVLINK_ERROR_CRITICAL); any replay warns"},
			NVLinkRecovery: {Warn: 1, Fail: 60,
				Source: "DCGM's NVLink health watch fails on 1 recovery error a minute (as replays); any recovery warns"},
			PCIeReplay: {Warn: 480, Fail: 12_000,
				Source: "warn: DCGM_LIMIT_MAX_PCIREPLAY_RATE, 8 a minute (\"the maximum recommended by RM\"); " +
					"fail: Azure cyclecloud-healthagent's DCGM_FI_DEV_PCIE_REPLAY_COUNTER delta_gt error 200/min"},
		},
		MinSpan:    5 * time.Minute,
		RateWindow: day,
		// Azure cyclecloud-healthagent (healthagent/defaults.yaml at b8c76db): link_downed
		// window_gt 10800 s, error 3, strikes 1: "IB link flapped 3+ times within a 3-hour
		// window", and one strike degrades the node until reboot.
		FlapWindow: 3 * time.Hour,
		FlapWarn:   1,
		FlapFail:   3,
		FlapSticky: true,
	}
}
