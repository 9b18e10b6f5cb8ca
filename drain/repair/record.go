package repair

import (
	"encoding/json"
	"fmt"
	"time"
)

// RecordFile is the repair record's file in the state directory: one Record per node this
// host runs as (one on a real node; several on a test bed), kept in the state directory
// (files.StateDir) under the runs' lock (drain.LockFile).
const RecordFile = "repair.json"

// maxRecordSize bounds the record file: 100 entries of a few hundred bytes per node.
const maxRecordSize = 1 << 20

// recordFormat is the file's format number; another number is refused.
const recordFormat = 1

// maxEntries bounds one node's record: far more than any escalation window counts.
const maxEntries = 100

type recordFile struct {
	Format int               `json:"format"`
	Nodes  map[string]Record `json:"nodes"`
}

// decodeRecords reads the file's bytes; nil bytes (no file yet) are an empty record.
func decodeRecords(data []byte) (map[string]Record, error) {
	if data == nil {
		return map[string]Record{}, nil
	}
	var f recordFile
	if err := json.Unmarshal(data, &f); err != nil {
		return map[string]Record{}, fmt.Errorf("%s: %w", RecordFile, err)
	}
	if f.Format != recordFormat {
		return map[string]Record{}, fmt.Errorf("%s: format %d, want %d", RecordFile, f.Format, recordFormat)
	}
	if f.Nodes == nil {
		f.Nodes = map[string]Record{}
	}
	return f.Nodes, nil
}

func encodeRecords(nodes map[string]Record) ([]byte, error) {
	data, err := json.MarshalIndent(recordFile{Format: recordFormat, Nodes: nodes}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", RecordFile, err)
	}
	return append(data, '\n'), nil
}

// prune drops the entries that started before keep, except the last (it may be under way),
// and keeps at most maxEntries.
func prune(r Record, keep time.Time) Record {
	var out []Entry
	for i, e := range r.Entries {
		if i == len(r.Entries)-1 || !e.Started.Before(keep) {
			out = append(out, e)
		}
	}
	if len(out) > maxEntries {
		out = out[len(out)-maxEntries:]
	}
	return Record{Entries: out}
}
