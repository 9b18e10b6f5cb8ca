// Package node owns every fact nodecheck reads from a node (files, device nodes, sysfs, NVML
// facts, command output) behind one interface with a live and a snapshot implementation.
// It never judges what it reads: checks do that.
//
// # The implementations of Facts
//
// Live reads the node it runs on; Snapshot replays a recorded one (snapshot.go: meta.json,
// fs/, devices.json, commands.json, nvml.json and one file per declared fact); Recorder
// answers from an inner Facts and writes what it answered as a snapshot (record.go); Memo
// reads each whole-node listing once per run (memo.go). Test fakes implement Facts too.
//
// # Declared facts
//
// A fact that is one value of the whole node (the CPU and memory inventory, the NVLink
// topology, and the facts to come: mounts, services, DCGM incidents...) is declared once,
// as a Fact, and every implementation serves it through the one method Facts.Fact (fact.go):
// Live calls the declaration's reader under files.Await; Snapshot checks <Name>.json when it
// is opened and decodes it on each reading, stalling for meta.json's delay at FactPath(Name)
// and the record's own delay_ms, hanging where the record says timed_out; Recorder writes
// what was read as <Name>.json; Memo reads it once per run; `nodecheck snapshot` records
// every declared fact that no check read (Recorder.RecordInventory). A check reads one with
// Read: node.Read(ctx, env.Facts, node.InventoryFact).
//
// # Adding a fact
//
// Add a fact in two places:
//
//  1. A file of its own, e.g. loadavg.go: the value type, a struct whose JSON form is the
//     snapshot record (field comments name the source file or call; no "delay_ms" or
//     "timed_out" key), its pure parser with a table test beside it, and the declaration
//     (below).
//  2. One line in DeclaredFacts (declared.go).
//
// The declaration:
//
//	var LoadAvgFact = &Fact[LoadAvg]{
//		Name: "loadavg",      // the record is loadavg.json
//		What: "load average", // errors say "read load average: ..."
//		Live: func(ctx context.Context, l *Live) (LoadAvg, error) {
//			b, err := l.ReadFile(ctx, "/proc/loadavg")
//			if err != nil {
//				return LoadAvg{}, err
//			}
//			return parseLoadAvg(b)
//		},
//		Check: checkLoadAvg, // what a replayed record must hold; nil for anything
//	}
//
// Nothing else in this package changes: Live, Snapshot, Recorder and Memo serve it, the
// snapshot tests refuse a record that is not a JSON object, FuzzSnapshotJSON fuzzes its
// decoding, and TestDeclaredFacts holds its name and type to the rules. Test fakes outside
// this package answer Fact from a map by name (checks/fake_facts_test.go). The reader keeps
// Live's contracts: it reads files through l.ReadFile or config/files (bounded, regular
// files only), returns when ctx is done where it can (files.Await abandons it where it
// cannot), and reports absence with an error wrapping fs.ErrNotExist or in the value.
//
// Facts that take an argument (ReadFile's path, Exec's argv, DevNode's and FileStat's path)
// or whose record is a tree of files rather than a value (IBPorts and PCIDevices record the
// sysfs files themselves) stay methods of Facts.
package node
