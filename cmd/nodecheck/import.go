package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/spf13/cobra"
)

// importOpts are the flags of `nodecheck import-nvidia-smi`.
type importOpts struct {
	query  string // nvidia-smi -q output; "-" is stdin
	nvlink string // nvidia-smi nvlink --status output; "" for none
	errs   string // nvidia-smi nvlink -e output; "" for none
	out    string // nvml.json to write; "" is stdout
}

// importInputMax bounds each capture read: a real `nvidia-smi -q` of 8 GPUs is about 75 KB.
const importInputMax = 16 << 20

func newImportNvidiaSMICmd(g *globals) *cobra.Command {
	var o importOpts
	cmd := &cobra.Command{
		Use:   "import-nvidia-smi --query FILE [--nvlink-status FILE] [--nvlink-errors FILE] [--out nvml.json]",
		Short: "Turn nvidia-smi captures into a snapshot's nvml.json",
		Long: `Turn the text of nvidia-smi -q (and, for NVLink state, of nvidia-smi nvlink --status)
taken on a GPU node into the nvml.json of a node snapshot, so that a real capture can be
replayed with nodecheck run --snapshot DIR, or become a test fixture.

The -q capture must cover every GPU (not -i): the importer refuses output whose number of
GPU blocks differs from "Attached GPUs", which is what a capture cut short looks like.
Any -d selection is read (-q -d PAGE_RETIREMENT gives retired pages only). Values nvidia-smi
prints as N/A are left out. Processes of type G (graphics) are left out, as NVML's list of
compute processes leaves them out; process owners are unknown (uid -1). NVLink states come
only from --nvlink-status, and NVLink error counters only from --nvlink-errors (nvidia-smi
nvlink -e, summed over the active links where --nvlink-status is given), matched to the
GPUs by UUID. The nvml.json lists in "fields" the facts the captures printed: a check whose
fact is not among them says it was not recorded.

The result goes to --out, or to stdout. Errors name the file and line.
Exit codes: 0 written, 2 unreadable or invalid input.`,
		Example: `  nvidia-smi -q >q.txt; nvidia-smi nvlink --status >nvlink.txt; nvidia-smi nvlink -e >nvlink-e.txt
  nodecheck import-nvidia-smi --query q.txt --nvlink-status nvlink.txt --nvlink-errors nvlink-e.txt --out DIR/nvml.json
  nvidia-smi -q | nodecheck import-nvidia-smi --query -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.query == "" {
				return usageError(cmd, "--query FILE is required (the output of nvidia-smi -q; - for stdin)")
			}
			if n := countStdin(o.query, o.nvlink, o.errs); n > 1 {
				return usageError(cmd, "only one of --query, --nvlink-status and --nvlink-errors can read stdin")
			}
			if code := importNvidiaSMI(g, o); code != exitHealthy {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.query, "query", "", "output of nvidia-smi -q (- for stdin)")
	f.StringVar(&o.nvlink, "nvlink-status", "", "output of nvidia-smi nvlink --status, for the GPUs' NVLink states")
	f.StringVar(&o.errs, "nvlink-errors", "", "output of nvidia-smi nvlink -e, for the GPUs' NVLink error counters")
	f.StringVar(&o.out, "out", "", "nvml.json to write (default: stdout)")
	return cmd
}

// importNvidiaSMI is `nodecheck import-nvidia-smi` without the flag parsing.
func importNvidiaSMI(g *globals, o importOpts) int {
	fail := func(err error) int {
		fmt.Fprintf(g.stderr, "nodecheck: import-nvidia-smi: %v\n", err)
		return exitCannotRun
	}
	q, err := readCapture(g, o.query)
	if err != nil {
		return fail(err)
	}
	inv, err := node.ParseNvidiaSMIQuery(bytes.NewReader(q))
	if err != nil {
		return fail(captureError(o.query, err))
	}
	if o.nvlink != "" {
		b, err := readCapture(g, o.nvlink)
		if err != nil {
			return fail(err)
		}
		links, err := node.ParseNvidiaSMINvLinkStatus(bytes.NewReader(b))
		if err != nil {
			return fail(captureError(o.nvlink, err))
		}
		if inv, err = node.MergeNVLinks(inv, links); err != nil {
			return fail(fmt.Errorf("%s: %w", o.nvlink, err))
		}
	}
	if o.errs != "" {
		b, err := readCapture(g, o.errs)
		if err != nil {
			return fail(err)
		}
		counters, err := node.ParseNvidiaSMINvLinkErrors(bytes.NewReader(b))
		if err != nil {
			return fail(captureError(o.errs, err))
		}
		if inv, err = node.MergeNVLinkErrors(inv, counters); err != nil {
			return fail(fmt.Errorf("%s: %w", o.errs, err))
		}
	}
	b, err := node.MarshalNVMLJSON(inv)
	if err != nil {
		return fail(err)
	}
	if o.out == "" {
		if _, err := g.stdout.Write(b); err != nil {
			return fail(fmt.Errorf("write stdout: %w", err))
		}
		return exitHealthy
	}
	if err := os.WriteFile(o.out, b, 0o644); err != nil {
		return fail(fmt.Errorf("write %s: %w", o.out, pathErr(err)))
	}
	return exitHealthy
}

// readCapture reads a capture file, or stdin for "-", up to importInputMax bytes.
func readCapture(g *globals, name string) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = g.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, pathErr(err))
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, importInputMax+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", displayName(name), err)
	}
	if len(b) > importInputMax {
		return nil, fmt.Errorf("%s: larger than %d MiB: not an nvidia-smi capture", displayName(name), importInputMax>>20)
	}
	return b, nil
}

// captureError puts the file name before a parser error: "q.txt:91: ...".
func captureError(name string, err error) error {
	var se *node.NvidiaSMIError
	if errors.As(err, &se) && se.Line > 0 {
		return fmt.Errorf("%s:%d: %s", displayName(name), se.Line, se.Msg)
	}
	return fmt.Errorf("%s: %w", displayName(name), err)
}

// pathErr is err without the operation and path an *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func displayName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return name
}

// countStdin counts the flags that read stdin ("-").
func countStdin(names ...string) int {
	n := 0
	for _, name := range names {
		if name == "-" {
			n++
		}
	}
	return n
}
