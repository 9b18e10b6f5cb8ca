package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const corpus = "../../config/slurm/testdata"

// fakeEtc serves files at the paths a node has them (/etc/slurm/slurm.conf) from local
// fixtures, so that goldens do not depend on where the repository is checked out.
type fakeEtc map[string]string // node path -> local file, or "=" + content

func (f fakeEtc) read(path string) ([]byte, error) {
	src, ok := f[path]
	if !ok {
		return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
	}
	if c, inline := strings.CutPrefix(src, "="); inline {
		return []byte(c), nil
	}
	return os.ReadFile(src)
}

func (f fakeEtc) exists(path string) bool { _, ok := f[path]; return ok }

func lintRun(t *testing.T, files fakeEtc, env map[string]string, o lintOptions) (stdout, stderr string, code int) {
	t.Helper()
	o.ReadFile = files.read
	o.Exists = files.exists
	o.Getenv = func(k string) string { return env[k] }
	var out, errb bytes.Buffer
	code = runLint(context.Background(), &out, &errb, o)
	return out.String(), errb.String(), code
}

func checkLintGolden(t *testing.T, name, got string) {
	t.Helper()
	goldenAt(t, filepath.Join("testdata", "lint", name), got)
}

// TestLintGolden runs `nodecheck lint` on corpus pairs placed at /etc/slurm, in text and JSON.
func TestLintGolden(t *testing.T) {
	tests := []struct {
		name        string
		slurm, gres string // fixture paths under config/slurm/testdata; gres "" = none beside slurm.conf
		wantCode    int
	}{
		{name: "test39.18-a59", slurm: "slurmconf/nodecheck-test39.18-a59.conf", gres: "gres/slurm-testsuite-39.18-a59-overspecified-nic-tmpdisk.conf", wantCode: 0},
		{name: "test39.18-c18", slurm: "slurmconf/nodecheck-test39.18-c18.conf", gres: "gres/slurm-testsuite-39.18-c18-missing-name.conf", wantCode: 1},
		// Cores= beyond the node's cores: slurmd logs an error and goes on, so lint warns.
		{name: "test7.17.7", slurm: "slurmconf/slurm-testsuite-7.17.7-slurm.conf", gres: "gres/slurm-testsuite-7.17.7.conf", wantCode: 0},
		{name: "csua-cpus-are-cores", slurm: "slurmconf/csua-slurm-docker-cluster-slurm.conf", gres: "gres/csua-slurm-docker-cluster-gres.conf", wantCode: 1}, // CacheGroups= (Slurm dropped it in 21.08),
		{name: "man-tux16", slurm: "slurmconf/nodecheck-man-gres-tux16.conf", gres: "gres/slurm-man-single-file-positive-nodename-ranges.conf", wantCode: 0},
		{name: "man-tux16-pending", slurm: "slurmconf/nodecheck-man-gres-tux16-pending.conf", gres: "gres/slurm-man-single-file-positive-nodename-ranges.conf", wantCode: 1},
		{name: "man-autodetect-except-one", slurm: "slurmconf/nodecheck-man-gres-tux16.conf", gres: "gres/slurm-man-autodetect-except-one-node.conf", wantCode: 0},
		{name: "doc-mps-bandwidth", slurm: "slurmconf/slurm-doc-gres-slurmconf-mps-bandwidth.conf", gres: "gres/slurm-doc-gres-mps-bandwidth.conf", wantCode: 0},
		{name: "slurm-conf-example-no-gres", slurm: "slurmconf/slurm-man-slurmconf-example-dev0-25.conf", wantCode: 0},
	}
	for _, tc := range tests {
		for _, format := range []string{"text", "json"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				files := fakeEtc{"/etc/slurm/slurm.conf": filepath.Join(corpus, tc.slurm)}
				if tc.gres != "" {
					files["/etc/slurm/gres.conf"] = filepath.Join(corpus, tc.gres)
				}
				out, errs, code := lintRun(t, files, nil, lintOptions{Format: format})
				if code != tc.wantCode || errs != "" {
					t.Errorf("exit %d, stderr %q; want exit %d and no stderr\n%s", code, errs, tc.wantCode, out)
				}
				if format == "json" && !json.Valid([]byte(out)) {
					t.Errorf("output is not JSON:\n%s", out)
				}
				ext := map[string]string{"text": ".txt", "json": ".json"}[format]
				checkLintGolden(t, tc.name+ext, out)
			})
		}
	}
}

// TestLintExitCodes has one row per exit code and per way of getting it.
func TestLintExitCodes(t *testing.T) {
	clean := "=GresTypes=gpu\nNodeName=gpu[01-02] Gres=gpu:h100:8\n"
	cleanGres := "=NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"
	tests := []struct {
		name       string
		files      fakeEtc
		env        map[string]string
		o          lintOptions
		wantCode   int
		wantStdout string // part of stdout
		wantStderr string // part of stderr
	}{
		{name: "clean", files: fakeEtc{"/etc/slurm/slurm.conf": clean, "/etc/slurm/gres.conf": cleanGres}, wantCode: 0, wantStdout: "0 errors, 0 warnings"},
		{
			name:       "warnings only",
			files:      fakeEtc{"/etc/slurm/slurm.conf": clean, "/etc/slurm/gres.conf": cleanGres + "NodeName=gpu03 Name=gpu File=/dev/nvidia0\n"},
			wantCode:   0,
			wantStdout: "gres.conf:2 NodeName=gpu03 matches no node in slurm.conf",
		},
		{
			name:       "errors",
			files:      fakeEtc{"/etc/slurm/slurm.conf": clean, "/etc/slurm/gres.conf": "=NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia[0-6]\n"},
			wantCode:   1,
			wantStdout: "slurm.conf:2 says gpu:h100:8 for gpu[01-02] but gres.conf:1 gives 7 files",
		},
		{
			name:       "typo'd key names its line",
			files:      fakeEtc{"/etc/slurm/slurm.conf": clean, "/etc/slurm/gres.conf": cleanGres + "NodeName=gpu01 Nmae=mps Count=100\n"},
			wantCode:   1,
			wantStdout: "gres.conf:2: unknown key Nmae= (did you mean Name=?)",
		},
		{
			name:       "broken bracket names its line",
			files:      fakeEtc{"/etc/slurm/slurm.conf": "=GresTypes=gpu\nNodeName=gpu[01-02 Gres=gpu:8\n"},
			wantCode:   1,
			wantStdout: "slurm.conf:2: NodeName=gpu[01-02: \"[01-02\": '[' is never closed; add the missing ']'",
		},
		{
			name:       "no gres.conf beside slurm.conf is not a read error",
			files:      fakeEtc{"/etc/slurm/slurm.conf": clean},
			wantCode:   1,
			wantStdout: "there is no gres.conf",
		},
		{
			name:       "SLURM_CONF and gres.conf beside it",
			files:      fakeEtc{"/srv/slurm/slurm.conf": clean, "/srv/slurm/gres.conf": cleanGres, "/etc/slurm/slurm.conf": "=NodeName=other\n"},
			env:        map[string]string{"SLURM_CONF": "/srv/slurm/slurm.conf"},
			wantCode:   0,
			wantStdout: "gres.conf   /srv/slurm/gres.conf",
		},
		{
			name:       "explicit files win",
			files:      fakeEtc{"/a/s.conf": clean, "/b/g.conf": cleanGres},
			env:        map[string]string{"SLURM_CONF": "/nowhere"},
			o:          lintOptions{SlurmConf: "/a/s.conf", GresConf: "/b/g.conf"},
			wantCode:   0,
			wantStdout: "slurm.conf  /a/s.conf",
		},
		{name: "slurm.conf not found", files: fakeEtc{}, wantCode: 2, wantStderr: "none of /etc/slurm/slurm.conf, /run/slurm/conf/slurm.conf, /var/spool/slurmd/conf-cache/slurm.conf, /usr/local/etc/slurm.conf, /opt/slurm/etc/slurm.conf, /etc/slurm-llnl/slurm.conf exists"},
		{name: "explicit slurm.conf missing", files: fakeEtc{"/etc/slurm/slurm.conf": clean}, o: lintOptions{SlurmConf: "/x/slurm.conf"}, wantCode: 2, wantStderr: "/x/slurm.conf does not exist"},
		{name: "explicit gres.conf missing", files: fakeEtc{"/etc/slurm/slurm.conf": clean}, o: lintOptions{GresConf: "/x/gres.conf"}, wantCode: 2, wantStderr: "/x/gres.conf: read gres.conf"},
		{name: "Include that cannot be read", files: fakeEtc{"/etc/slurm/slurm.conf": "=Include nodes.conf\n"}, wantCode: 2, wantStderr: "/etc/slurm/slurm.conf:1: Include /etc/slurm/nodes.conf"},
		{name: "bad format", files: fakeEtc{"/etc/slurm/slurm.conf": clean}, o: lintOptions{Format: "yaml"}, wantCode: 2, wantStderr: "--format=yaml: want text or json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := lintRun(t, tc.files, tc.env, tc.o)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errs)
			}
			if !strings.Contains(out, tc.wantStdout) {
				t.Errorf("stdout does not contain %q:\n%s", tc.wantStdout, out)
			}
			if !strings.Contains(errs, tc.wantStderr) {
				t.Errorf("stderr does not contain %q:\n%s", tc.wantStderr, errs)
			}
			if tc.wantCode == 2 && out != "" {
				t.Errorf("exit 2 with a report on stdout:\n%s", out)
			}
		})
	}
}

// TestLintCommand runs the cobra command: flags reach runLint and the exit code comes back as
// an exitError.
func TestLintCommand(t *testing.T) {
	dir := t.TempDir()
	slurm := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(slurm, []byte("GresTypes=gpu\nNodeName=n1 Gres=gpu:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte("Name=gpu File=/dev/nvidia0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{name: "text", args: []string{"--slurm-conf", slurm}, wantCode: 1, wantOut: "says gpu:2 for n1 but gres.conf:1 gives 1 file"},
		{name: "json", args: []string{"--slurm-conf", slurm, "--format", "json"}, wantCode: 1, wantOut: `"severity":"error"`},
		{name: "bad format", args: []string{"--slurm-conf", slurm, "--format=xml"}, wantCode: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newLintCmd()
			var out, errb bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			cmd.SetArgs(tc.args)
			err := cmd.ExecuteContext(context.Background())
			code := 0
			var ee exitError
			if errors.As(err, &ee) {
				code = ee.code
			} else if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if code != tc.wantCode || !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.wantCode, out.String(), errb.String())
			}
		})
	}
}

func (f fakeEtc) open(path string) (io.ReadCloser, error) {
	b, err := f.read(path)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// TestLintTopologyGolden runs `nodecheck lint --topology --ibnetdiscover` on real captures
// and topology.conf files written for them, files placed at the paths a site has them.
func TestLintTopologyGolden(t *testing.T) {
	test3conf, err := os.ReadFile(filepath.Join(corpus, "topology/nodecheck-jabl-test3.conf"))
	if err != nil {
		t.Fatal(err)
	}
	// r-ufm216 recabled from the SwitchIB to the SX6012 leaf, topology.conf not updated.
	moved := strings.Replace(strings.Replace(string(test3conf), "r-ufm[111,216]", "r-ufm111", 1), "r-ufm[96,100-101]", "r-ufm[96,100-101,216]", 1)
	tests := []struct {
		name     string
		files    fakeEtc
		o        lintOptions
		wantCode int
	}{
		{name: "topology-test3-moved", wantCode: 0,
			files: fakeEtc{"/etc/slurm/slurm.conf": "testdata/topology/jabl-test3-slurm.conf", "/etc/slurm/topology.conf": "=" + moved,
				"/var/tmp/fabric.txt": filepath.Join(corpus, "ibnetdiscover/jabl-ibtopotool-test3.txt")},
			o: lintOptions{Topology: "/etc/slurm/topology.conf", IBNetDiscover: "/var/tmp/fabric.txt"}},
		{name: "topology-x5-guid-map", wantCode: 1,
			files: fakeEtc{"/etc/slurm/topology.conf": filepath.Join(corpus, "topology/ltaulell-x5-topology.conf"),
				"/var/tmp/fabric.txt": filepath.Join(corpus, "ibnetdiscover/ltaulell-x5-ibnetdiscover.txt"), "/etc/slurm/x5.map": filepath.Join(corpus, "ibnetdiscover/ltaulell-x5-guid-hostname-map.txt")},
			o: lintOptions{Topology: "/etc/slurm/topology.conf", IBNetDiscover: "/var/tmp/fabric.txt", IBGUIDMap: "/etc/slurm/x5.map"}},
		{name: "topology-gb200-racks", wantCode: 0,
			files: fakeEtc{"/etc/slurm/topology.conf": filepath.Join(corpus, "topology/nodecheck-gb200-racks-tree.conf"),
				"/var/tmp/fabric.txt": filepath.Join(corpus, "ibnetdiscover/topograph-gb200-rail-optimized-ndr.txt")},
			o: lintOptions{Topology: "/etc/slurm/topology.conf", IBNetDiscover: "/var/tmp/fabric.txt"}},
		{name: "topology-only-tux", wantCode: 0,
			files: fakeEtc{"/etc/slurm/slurm.conf": filepath.Join(corpus, "slurmconf/nodecheck-man-gres-tux16.conf"), "/etc/slurm/gres.conf": filepath.Join(corpus, "gres/slurm-man-single-file-positive-nodename-ranges.conf"),
				"/etc/slurm/topology.conf": filepath.Join(corpus, "topology/slurm-doc-topology-tree-ex1.conf")},
			o: lintOptions{Topology: "/etc/slurm/topology.conf"}},
	}
	for _, tc := range tests {
		for _, format := range []string{"text", "json"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				o := tc.o
				o.Format = format
				o.Open = tc.files.open
				out, errs, code := lintRun(t, tc.files, nil, o)
				if code != tc.wantCode || errs != "" {
					t.Errorf("exit %d, stderr %q; want exit %d and no stderr\n%s", code, errs, tc.wantCode, out)
				}
				if format == "json" && !json.Valid([]byte(out)) {
					t.Errorf("output is not JSON:\n%s", out)
				}
				checkLintGolden(t, tc.name+map[string]string{"text": ".txt", "json": ".json"}[format], out)
			})
		}
	}
}

// TestLintTopologyUsage has a row per way --topology and its companions can be misused, and
// one reading the capture from standard input.
func TestLintTopologyUsage(t *testing.T) {
	files := fakeEtc{"/etc/slurm/slurm.conf": "testdata/topology/jabl-test3-slurm.conf",
		"/etc/slurm/topology.conf": filepath.Join(corpus, "topology/nodecheck-jabl-test3.conf"),
		"/var/tmp/fabric.txt":      filepath.Join(corpus, "ibnetdiscover/jabl-ibtopotool-test3.txt"),
		"/var/tmp/bad.map":         "=H-zz host\n",
		"/etc/slurm/bomb.conf":     "=" + strings.Repeat("SwitchName=s0 Nodes=node[0-16000000]\n", 64),
		"/etc/yaml/topology.yaml":  "../../config/slurm/testdata/topology/slurm-man-topology-yaml-example.yaml",
		"/etc/yaml/topology.conf":  "=SwitchName=s0 Nodes=a[1-4]\n"}
	capture, err := os.ReadFile(filepath.Join(corpus, "ibnetdiscover/jabl-ibtopotool-test3.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		o                lintOptions
		wantCode         int
		wantOut, wantErr string
	}{
		{name: "capture without topology", o: lintOptions{IBNetDiscover: "/var/tmp/fabric.txt"}, wantCode: 2, wantErr: "need --topology"},
		{name: "map without capture", o: lintOptions{Topology: "/etc/slurm/topology.conf", IBGUIDMap: "/var/tmp/bad.map"}, wantCode: 2, wantErr: "need --ibnetdiscover"},
		{name: "bad regexp", o: lintOptions{Topology: "/etc/slurm/topology.conf", IBNetDiscover: "/var/tmp/fabric.txt", IBHostRegexp: "(["}, wantCode: 2, wantErr: "--ib-host-regexp: error parsing regexp"},
		{name: "missing topology.conf", o: lintOptions{Topology: "/etc/slurm/nope.conf"}, wantCode: 2, wantErr: "read topology.conf: open /etc/slurm/nope.conf"},
		{name: "missing capture", o: lintOptions{Topology: "/etc/slurm/topology.conf", IBNetDiscover: "/nope"}, wantCode: 2, wantErr: "read --ibnetdiscover: open /nope"},
		{name: "capture that is not one", o: lintOptions{Topology: "/etc/slurm/topology.conf", IBNetDiscover: "/etc/slurm/slurm.conf"}, wantCode: 2, wantErr: "no switch or channel adapter found"},
		{name: "bad map line is a lint error", o: lintOptions{Topology: "/etc/slurm/topology.conf", IBNetDiscover: "/var/tmp/fabric.txt", IBGUIDMap: "/var/tmp/bad.map"}, wantCode: 1, wantOut: `bad.map:1: "H-zz" is not a GUID`},
		{name: "capture on stdin", o: lintOptions{Topology: "/etc/slurm/topology.conf", IBNetDiscover: "-", Stdin: bytes.NewReader(capture)}, wantCode: 0, wantOut: "slurm.conf:4 defines spare1, which topology.conf puts in no switch"},
		// A typo's hostlist is refused at its line in milliseconds (it took minutes and
		// gigabytes); the error names the file, the line and the bound.
		{name: "hostlist bomb", o: lintOptions{Topology: "/etc/slurm/bomb.conf"}, wantCode: 1,
			wantOut: "bomb.conf:1: SwitchName=s0 Nodes=node[0-16000000] stands for 16000001 names, which takes the Nodes= and Switches= lists of bomb.conf past 1048576 names"},
		{name: "topology.yaml is refused, not read as 64 broken lines", o: lintOptions{Topology: "/etc/yaml/topology.yaml"}, wantCode: 2,
			wantErr: "nodecheck lint: /etc/yaml/topology.yaml: topology.yaml (Slurm 25.05 and later, topology.yaml(5)) is not read yet"},
		{name: "topology.conf beside a topology.yaml: a note", o: lintOptions{Topology: "/etc/yaml/topology.conf"}, wantCode: 0,
			wantOut: "info     topology.conf: /etc/yaml/topology.yaml is beside it: Slurm 25.05 and later read topology.yaml and ignore topology.conf"},
		{name: "explicit slurm.conf still required", o: lintOptions{SlurmConf: "/x/slurm.conf", Topology: "/etc/slurm/topology.conf"}, wantCode: 2, wantErr: "/x/slurm.conf does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Open = files.open
			out, errs, code := lintRun(t, files, nil, tc.o)
			if code != tc.wantCode || !strings.Contains(out, tc.wantOut) || !strings.Contains(errs, tc.wantErr) {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s\nwant stdout %q, stderr %q", code, tc.wantCode, out, errs, tc.wantOut, tc.wantErr)
			}
		})
	}
}

// TestLintTopologyStdinDeadline: a capture pipe that never ends does not hang lint once its
// context is done.
func TestLintTopologyStdinDeadline(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	files := fakeEtc{"/etc/slurm/topology.conf": "=SwitchName=s0 Nodes=a1\n"}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	o := lintOptions{Topology: "/etc/slurm/topology.conf", IBNetDiscover: "-", Stdin: pr, ReadFile: files.read, Exists: files.exists, Open: files.open, Getenv: func(string) string { return "" }}
	if code := runLint(ctx, &out, &errb, o); code != 2 || !strings.Contains(errb.String(), "read -: context deadline exceeded") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

// TestLintHookBudgets: lint holds slurm.conf's hook limits against nodecheck's built-in
// budgets, or the ones --config gives, and checks its own flags.
func TestLintHookBudgets(t *testing.T) {
	files := fakeEtc{
		"/etc/slurm/slurm.conf": "=GresTypes=gpu\nNodeName=g1 Gres=gpu:h100:8 Feature=h100\nProlog=/usr/sbin/nodecheck\nPrologFlags=Alloc\nPrologEpilogTimeout=20\n",
		"/etc/slurm/gres.conf":  "=NodeName=g1 Name=gpu Type=h100 File=/dev/nvidia[0-7]\n",
	}
	dir := t.TempDir()
	toml := filepath.Join(dir, "nodecheck.toml")
	if err := os.WriteFile(toml, []byte("[budget]\nprolog = \"30s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repairToml := filepath.Join(dir, "repair.toml")
	if err := os.WriteFile(repairToml, []byte("[repair]\nenabled = true\nreboot = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		o          lintOptions
		wantCode   int
		want, not  string
		wantStderr string
	}{
		{name: "built-in budget fits", not: "PrologEpilogTimeout=20"},
		{name: "the config's budget does not", o: lintOptions{Config: toml},
			want: "slurm.conf:5 Prolog=/usr/sbin/nodecheck gets PrologEpilogTimeout 20s (slurm.conf:5), so nodecheck cuts its prolog budget (30s) to 18s"},
		// [repair] without reboots still needs a health check to run the repairs.
		{name: "repairs need a health check", o: lintOptions{Config: repairToml},
			want: "slurm.conf:3 Prolog=/usr/sbin/nodecheck drains nodes that fail its checks, and nodecheck resumes a node it drained only in a health run (or a run by hand); [repair] is on in nodecheck.toml, and repairs run only in health runs; but slurm.conf sets no HealthCheckProgram",
			not:  "RebootProgram"},
		{name: "missing config", o: lintOptions{Config: filepath.Join(dir, "none.toml")}, wantCode: 2, wantStderr: "--config " + filepath.Join(dir, "none.toml")},
		{name: "negative window", o: lintOptions{CheckpointWindow: -time.Second}, wantCode: 2, wantStderr: "--checkpoint-window=-1s: want a positive duration"},
		// The fleet sweep publishes validations in Extra; this slurm.conf has no extra_constraints.
		{name: "publishing without extra_constraints", o: lintOptions{PublishExtra: true},
			want: "SchedulerParameters lacks extra_constraints: Slurm ignores --extra"},
		{name: "not publishing", not: "extra_constraints"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := lintRun(t, files, nil, tc.o)
			if code != tc.wantCode || !strings.Contains(errs, tc.wantStderr) || !strings.Contains(out, tc.want) || (tc.not != "" && strings.Contains(out, tc.not)) {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr with %q, output with %q and without %q:\n%s", code, errs, tc.wantCode, tc.wantStderr, tc.want, tc.not, out)
			}
		})
	}
}
