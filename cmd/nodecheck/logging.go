package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nodecheck/nodecheck/config"
	"github.com/rs/zerolog"
	"github.com/rs/zerolog/journald"
)

// newLogger logs JSON lines to w (stderr) and, as [log] says, to a file and the systemd
// journal. A destination that cannot be opened is reported on w and left out: logging must
// never stop a prolog. The returned func closes what was opened.
func newLogger(w io.Writer, lc config.LogConfig) (zerolog.Logger, func()) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(lc.Level))
	if err != nil || lc.Level == "" {
		lvl = zerolog.InfoLevel
	}
	writers := []io.Writer{w}
	closeAll := func() {}
	if lc.File != "" {
		f, err := os.OpenFile(lc.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
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
