package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"syscall"

	"github.com/nodecheck/nodecheck/checks"
	"github.com/nodecheck/nodecheck/cmd/nodecheck/nhcdrop"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/config/nhc"
	"github.com/spf13/cobra"
)

// importNHCOpts are the flags of `nodecheck import-nhc`.
type importNHCOpts struct {
	out  string // nodecheck.toml sections to write; "" is stdout
	rest string // nhc.conf of the lines not translated; "" for none
}

func newImportNHCCmd(g *globals) *cobra.Command {
	var o importNHCOpts
	cmd := &cobra.Command{
		Use:   "import-nhc FILE [--out nodecheck-nhc.toml] [--rest nhc-rest.conf]",
		Short: "Translate an LBNL NHC nhc.conf into nodecheck.toml sections",
		Long: `Read LBNL NHC's nhc.conf and write the nodecheck.toml sections of the checks with a
native equivalent (fs_mounts, fs_usage, memory, services), each value followed by the
nhc.conf line it came from. Every other line is listed, with FILE:LINE and why, on stderr
and at the end of the output: a line is translated whole, with NHC's meaning, or not at all.
Lines for some nodes only (a target other than *) are not translated.

With --rest FILE, the lines not translated are written to FILE as an nhc.conf of their own,
and the output gains a [[site_check]] that runs NHC on it, so that a site keeps them while
moving the rest. /usr/share/doc/nodecheck/docs/nhc.md describes each translation.
Exit codes: 0 written (lines not translated are not an error), 2 unreadable input.`,
		Example: `  nodecheck import-nhc /etc/nhc/nhc.conf --rest /etc/nhc/nhc-rest.conf --out /tmp/nhc.toml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := importNHC(cmd.Context(), g, args[0], o); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "file to write the nodecheck.toml sections to (default: stdout)")
	f.StringVar(&o.rest, "rest", "", "nhc.conf to write the lines not translated to, with a [[site_check]] running NHC on it")
	return cmd
}

// importNHC is `nodecheck import-nhc` without the flag parsing.
func importNHC(ctx context.Context, g *globals, path string, o importNHCOpts) int {
	fail := func(err error) int {
		fmt.Fprintf(g.stderr, "nodecheck: import-nhc: %v\n", err)
		return exitCannotRun
	}
	if ctx == nil {
		ctx = context.Background()
	}
	data, err := files.Read(ctx, path, files.Limits{MaxBytes: nhcdrop.ConfMax, FollowSymlinks: true})
	if err != nil {
		return fail(fmt.Errorf("read %s: %w", path, err))
	}
	name := filepath.Base(path)
	lines, err := nhc.Parse(bytes.NewReader(data), name)
	if err != nil {
		return fail(err)
	}
	t := nhc.Translate(lines)
	for _, s := range t.Skipped {
		fmt.Fprintf(g.stderr, "%s: not translated: %s\n", s.Line.Where(), s.Why)
	}
	var out bytes.Buffer
	if err := t.WriteTOML(&out, name, len(lines), o.rest, defaultLists()); err != nil {
		return fail(err)
	}
	if o.rest != "" {
		var rest bytes.Buffer
		if err := t.WriteRest(&rest, name); err != nil {
			return fail(err)
		}
		if err := writeNew(o.rest, rest.Bytes()); err != nil {
			return fail(err)
		}
	}
	if o.out == "" {
		_, err = g.stdout.Write(out.Bytes())
	} else {
		err = writeNew(o.out, out.Bytes())
	}
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(g.stderr, "nodecheck: import-nhc: %d of %d lines of %s translated, %d not\n", len(lines)-len(t.Skipped), len(lines), name, len(t.Skipped))
	return exitHealthy
}

// writeNew writes a file the import makes, refusing to follow a symlink or to overwrite an
// existing file: an admin may run this as root next to files that matter.
func writeNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// defaultLists are the built-in lists of the keys import-nhc adds to, which a list written
// in nodecheck.toml replaces: the import keeps them.
func defaultLists() map[string][]string {
	def := config.Default(checks.Schema())
	out := map[string][]string{}
	for _, k := range []struct{ sec, key string }{{"fs_mounts", "mounts"}, {"fs_usage", "limits"}, {"services", "processes"}, {"interfaces", "present"}, {"stray_processes", "allow_users"}, {"file_tests", "tests"}, {"file_contents", "files"}} {
		if sec := def.Checks.Get(k.sec); sec != nil {
			out[k.sec+"."+k.key] = tomlStrings(sec, k.key)
		}
	}
	return out
}

// tomlStrings is the []string field of section s whose toml tag is key; nil where none is.
func tomlStrings(s config.Section, key string) []string {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("toml") == key {
			if ss, ok := v.Field(i).Interface().([]string); ok {
				return ss
			}
		}
	}
	return nil
}
