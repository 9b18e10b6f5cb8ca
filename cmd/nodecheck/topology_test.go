package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
)

// repoBin is the absolute path of a test program in the repository's testdata/bin.
func repoBin(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "bin", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTopologyCapture(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name       string
		o          captureOptions
		wantCode   int
		wantStderr string
		wantFile   bool
	}{
		{name: "saved", o: captureOptions{Program: repoBin(t, "ibnetdiscover-standin"), Out: filepath.Join(dir, "fabric.txt")}, wantFile: true,
			wantStderr: "1 switches, 2 channel adapters, 2 links in"},
		{name: "stderr is reported, not saved", o: captureOptions{Program: repoBin(t, "ibnetdiscover-standin"), Out: filepath.Join(dir, "f2.txt"), CA: "mlx5_1", Port: 2, Ports: false},
			wantFile: true, wantStderr: "said on stderr (not saved): stand-in for ibnetdiscover, printing a recorded capture; args: -C mlx5_1 -P 2"},
		{name: "not installed", o: captureOptions{Program: "/nonexistent/ibnetdiscover", Out: filepath.Join(dir, "x1")}, wantCode: 2, wantStderr: "/nonexistent/ibnetdiscover is not installed (infiniband-diags)"},
		{name: "relative path", o: captureOptions{Program: "ibnetdiscover", Out: filepath.Join(dir, "x2")}, wantCode: 2, wantStderr: "is not an absolute path"},
		{name: "fails", o: captureOptions{Program: repoBin(t, "exit-3"), Out: filepath.Join(dir, "x3")}, wantCode: 2, wantStderr: "exited 3: to stderr"},
		{name: "hangs", o: captureOptions{Program: repoBin(t, "sleep-forever"), Out: filepath.Join(dir, "x4"), Timeout: 300 * time.Millisecond}, wantCode: 2, wantStderr: "ran past --timeout 300ms and was killed: nothing saved"},
		{name: "too much", o: captureOptions{Program: repoBin(t, "huge-stdout"), Out: filepath.Join(dir, "x5"), OutputLimit: 1 << 20}, wantCode: 2, wantStderr: "printed more than 1048576 bytes: nothing saved"},
		{name: "not a fabric", o: captureOptions{Program: repoBin(t, "huge-stdout"), Out: filepath.Join(dir, "x6")}, wantCode: 2, wantStderr: "no switch or channel adapter found"},
		{name: "bad timeout", o: captureOptions{Program: repoBin(t, "exit-3"), Timeout: -1}, wantCode: 2, wantStderr: "--timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.o.Timeout == 0 {
				tc.o.Timeout = 30 * time.Second
			}
			var out, errb bytes.Buffer
			code := captureTopology(context.Background(), &out, &errb, tc.o)
			if code != tc.wantCode || !strings.Contains(errb.String(), tc.wantStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), tc.wantCode, tc.wantStderr)
			}
			b, err := os.ReadFile(tc.o.Out)
			switch {
			case tc.wantFile && (err != nil || !bytes.Contains(b, []byte(`# "compute-00-01 HCA-1"`))):
				t.Errorf("saved file: %v\n%s", err, b)
			case !tc.wantFile && tc.o.Out != "" && err == nil:
				t.Errorf("a file was written on failure")
			}
			if out.Len() != 0 {
				t.Errorf("stdout with --out: %q", out.String())
			}
		})
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestTopologyCaptureArgsAndStdout(t *testing.T) {
	capture, err := os.ReadFile("../../config/slurm/testdata/ibnetdiscover/treydock-ibnetdiscover-p-osc-edr.txt")
	if err != nil {
		t.Fatal(err)
	}
	var argv []string
	o := captureOptions{Program: "/usr/sbin/ibnetdiscover", Timeout: time.Minute, Ports: true, CA: "mlx5_0", Port: 1,
		Exec: func(_ context.Context, a []string) (node.CmdResult, error) {
			argv = a
			return node.CmdResult{Argv: a, Stdout: string(capture)}, nil
		}}
	var out, errb bytes.Buffer
	if code := captureTopology(context.Background(), &out, &errb, o); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Join(argv, " ") != "/usr/sbin/ibnetdiscover -p -C mlx5_0 -P 1" || out.String() != string(capture) || !strings.Contains(errb.String(), "(ports) saved to standard output") {
		t.Errorf("argv %v, stderr %q, stdout %d bytes", argv, errb.String(), out.Len())
	}
}

// TestTopologyCommand runs the verb through the binary's entry point.
func TestTopologyCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "fabric.txt")
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"nodecheck", "topology", "capture", "--ibnetdiscover-path", repoBin(t, "ibnetdiscover-standin"), "--out", out, "--timeout", "20s"},
		strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	if code != 0 || !strings.Contains(stderr.String(), "saved to "+out) {
		t.Errorf("exit %d, stderr %s", code, stderr.String())
	}
}

// TestTopologyCaptureSymlinkOut: capture runs as root; a symlink planted at --out is replaced
// by the capture and its target is left alone (files.WriteAtomic never follows a link).
func TestTopologyCaptureSymlinkOut(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "passwd")
	if err := os.WriteFile(target, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "fabric.txt")
	if err := os.Symlink(target, out); err != nil {
		t.Fatal(err)
	}
	o := captureOptions{Program: repoBin(t, "ibnetdiscover-standin"), Out: out, Timeout: 30 * time.Second}
	var stdout, stderr bytes.Buffer
	if code := captureTopology(context.Background(), &stdout, &stderr, o); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if b, _ := os.ReadFile(target); string(b) != "root:x:0:0\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	fi, err := os.Lstat(out)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("--out after capture: %v, %v; want a regular file of mode 0644", fi, err)
	}
}
