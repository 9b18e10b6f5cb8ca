// Package history is a node's memory across nodecheck runs: XID events, GPU counter samples,
// InfiniBand port states and link events, boot ids, admin clears and the repair record, kept
// in one bounded, versioned file per node. It reads no hardware, runs nothing and imports
// from the module only config/files, through which it keeps its files in the state
// directory (InStateDir); every judgement is a pure function with the clock passed in
// ("now" is the snapshot's taken_at in a replay).
//
// # A run
//
//	store, err := history.InStateDir(stateDir) // a *files.StateDir, opened once by the run
//	h, err := store.Load(node, now)            // once per run; *BadFileError: a fresh history, the file set aside
//	kl := history.ScanKernelLog(dmesgOutput)   // XIDs, mlx5 link lines, driver loads, with kernel times
//	rep := h.Merge(now, history.Observation{Time: now, BootID: bootID, BootTime: now.Add(-uptime),
//		GPUs: gpus, XIDs: kl.XIDs, DriverLoads: kl.DriverLoads, KernelLinks: kl.Links, Ports: ports}, limits)
//	js := h.Judge(now, rules)                  // []Judgement: rule, status, device, summary, what clears it
//	err = store.Save(h, now)                   // atomic, under Limits.MaxBytes
//
// `nodecheck history` is h.BuildTimeline(now, rules, TimelineOptions{GPU: bus, Since: d})
// rendered with WriteText or WriteJSON; `nodecheck history clear` is h.Clear(Selector{...},
// who, now, reason) then Save; repairs are h.RecordRepair and h.RepairsSince.
//
// # The file
//
// <state dir>/history/<node>.json, mode 0600, compact JSON, oldest entries first. Times are
// Unix seconds, kernel times microseconds since their boot; events and samples name their
// boot by its number n. Format 1:
//
//	{"format":1,"node":"gpu01","updated_at":1764590400,
//	 "boots":[{"n":0,"id":"b3b5e7a4-8c1e-4a5f-9d2e-000000000001","time":1764547200,"first_seen":1764547260,
//	           "last_seen":1764590400,"xid_mark":2002000002,"driver_loads":[5123456]}],
//	 "gpus":[{"uuid":"GPU-5f3c0a4e-...","serial":"1652922000001","bus":"0000:9b:00.0","index":4,
//	          "name":"NVIDIA H100 80GB HBM3","first_seen":1764547260,"last_seen":1764590400,"last_boot":0,
//	          "xids":[{"b":0,"k":2002000002,"kl":2002000002,"t":1764549202,"tl":1764549202,"n":1,"x":79,
//	                   "m":"pid=4242, name=python3, GPU has fallen off the bus."}],
//	          "samples":[{"t":1764590400,"b":0,"g":0,"c":[101000,-1,-1,-1,0]}],
//	          "resets":[{"t":1764590000,"b":0,"src":"nvidia-smi"}]}],
//	 "ports":[{"device":"mlx5_0","port":1,"guid":"0xa088c20300f1e2d0","netdevs":["ib0"],"first_seen":1764547260,
//	           "last_seen":1764590400,"last_boot":0,"states":[{"t":1764547260,"u":1764590400,"b":0,"s":4,"p":5}],
//	           "events":[{"t":1764570001,"b":0,"up":false,"src":"syslog"}],"link_downed":[{"t":1764590400,"b":0,"v":3}]}],
//	 "clears":[{"target":"gpu","key":"GPU-5f3c0a4e-...","bus":"0000:9b:00.0","who":"root","at":1764590500,"reason":"RMA done"}],
//	 "repairs":[{"target":"gpu","key":"GPU-5f3c0a4e-...","action":"reset_gpu","fault":"xid_sticky: XID 48",
//	             "started":1764590000,"finished":1764590030,"outcome":"ok"}],
//	 "validations":[{"level":"quick","started":1764590600,"duration":312,"verdict":"passed",
//	                 "model":"NVIDIA H100 80GB HBM3","figures":[{"n":"nccl_busbw","v":476.53,"f":390,"ok":true}]}],
//	 "syslog_mark":{"t":1764570006,"n":12}}
//
// A sample's c holds, in order, the volatile correctable ECC count, NVLink CRC (flit + data),
// replay and recovery errors summed over links, and the PCIe replay counter; -1 is "not
// read". g numbers the counter series: it goes up when the counters restart (a counter went
// down, a reset or driver load came between, the boot changed), and no rate spans two.
//
// A clock that went back (a node that booted with its clock years ahead, until NTP set it)
// leaves times after the run's in the file. The next Merge (or Clear) moves them back, by the
// clock's error where the boot's start measures it, drops the counter readings it cannot
// place, and records what it did under "clock" ({"found":…,"newest":…,"shift":…,
// "measured":true,"dropped":0}), on which JudgeClock warns for a day; a judge handed such a
// file judges a copy moved back the same way. A jump forward by more than MaxAge is kept
// there too ("jump_from", "jump_to"), so that pruning ages what came before it as if the jump
// had not happened (clock.go).
//
// Load refuses, with a message naming the byte or the field, a file that is empty, truncated,
// not JSON, of another format (a newer nodecheck's included), another node's, over four
// times MaxBytes, or with a value out of its range (a time outside 2000-2100, an XID outside
// 1-999, readings out of order, a string not printable ASCII): the file is renamed
// <node>.json.bad-<UTC time> (the newest Limits.KeptAside are kept) and the run starts a
// fresh history. Keys it does not know are skipped, so a later format-1 writer may add some.
package history
