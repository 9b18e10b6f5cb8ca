package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
	"github.com/rs/zerolog"
	"github.com/rs/zerolog/journald"
)

// newLogger logs JSON lines to w (stderr) and, as [log] says, to a file and the systemd
// journal. A destination that cannot be opened is reported on w and left out: logging must
// never stop a prolog. log.file is opened without following a symlink and must be a regular
// file (files.OpenAppend). The returned func closes what was opened.
func newLogger(w io.Writer, lc config.LogConfig) (zerolog.Logger, func()) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(lc.Level))
	if err != nil || lc.Level == "" {
		lvl = zerolog.InfoLevel
	}
	writers := []io.Writer{w}
	closeAll := func() {}
	if lc.File != "" {
		// Never through a symlink: root would append to whatever file the link names.
		f, err := files.OpenAppend(lc.File, 0o640)
		if err != nil {
			fmt.Fprintf(w, "nodecheck: log.file: %v; logging to stderr only\n", err)
		} else {
			writers = append(writers, f)
			closeAll = func() { f.Close() }
		}
	}
	if lc.Journald {
		// The journal's native socket; without systemd the writes fail and are dropped.
		writers = append(writers, journald.NewJournalDWriter())
	}
	out := w
	if len(writers) > 1 {
		out = zerolog.MultiLevelWriter(writers...)
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Str("prog", "nodecheck").Logger(), closeAll
}
