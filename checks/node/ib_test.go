package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseIBState(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantID  uint
		want    string
		wantErr bool
	}{
		{name: "active", in: "4: ACTIVE", wantID: 4, want: "ACTIVE"},
		{name: "with newline", in: "4: ACTIVE\n", wantID: 4, want: "ACTIVE"},
		{name: "down", in: "1: DOWN", wantID: 1, want: "DOWN"},
		{name: "nop", in: "0: NOP", wantID: 0, want: "NOP"},
		{name: "phys linkup", in: "5: LinkUp\n", wantID: 5, want: "LinkUp"},
		{name: "phys two words", in: "4: PortConfigurationTraining", wantID: 4, want: "PortConfigurationTraining"},
		{name: "phys unknown", in: "9: <unknown>", wantID: 9, want: "<unknown>"},
		{name: "no space", in: "2:INIT", wantID: 2, want: "INIT"},
		{name: "name with colon", in: "3: A:B", wantID: 3, want: "A:B"},
		{name: "empty", in: "", wantErr: true},
		{name: "no colon", in: "ACTIVE", wantErr: true},
		{name: "no id", in: ": ACTIVE", wantErr: true},
		{name: "no name", in: "4:", wantErr: true},
		{name: "negative id", in: "-1: DOWN", wantErr: true},
		{name: "signed id", in: "+4: ACTIVE", wantErr: true},
		{name: "hex id", in: "0x4: ACTIVE", wantErr: true},
		{name: "id too large", in: "4294967296: ACTIVE", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, name, err := parseIBState(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parseIBState(%q) = %d, %q, want an error", tc.in, id, name)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseIBState(%q): %v", tc.in, err)
			}
			if id != tc.wantID || name != tc.want {
				t.Errorf("parseIBState(%q) = %d, %q, want %d, %q", tc.in, id, name, tc.wantID, tc.want)
			}
		})
	}
}

func TestParseIBRate(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    float64
		wantErr bool
	}{
		{name: "ndr", in: "400 Gb/sec (4X NDR)", want: 400},
		{name: "with newline", in: "400 Gb/sec (4X NDR)\n", want: 400},
		{name: "2x ndr", in: "200 Gb/sec (2X NDR)", want: 200},
		{name: "edr", in: "100 Gb/sec (4X EDR)", want: 100},
		{name: "sdr half", in: "2.5 Gb/sec (1X SDR)", want: 2.5},
		{name: "sdr no speed name", in: "10 Gb/sec (4X)", want: 10},
		{name: "no detail", in: "40 Gb/sec", want: 40},
		{name: "zero", in: "0 Gb/sec (0X)", want: 0},
		{name: "empty", in: "", wantErr: true},
		{name: "number only", in: "400", wantErr: true},
		{name: "other unit", in: "400 Mb/sec (4X NDR)", wantErr: true},
		{name: "not a number", in: "fast Gb/sec", wantErr: true},
		{name: "negative", in: "-400 Gb/sec", wantErr: true},
		{name: "exponent", in: "4e2 Gb/sec", wantErr: true},
		{name: "nan", in: "NaN Gb/sec", wantErr: true},
		{name: "inf", in: "Inf Gb/sec", wantErr: true},
		{name: "two dots", in: "1.2.3 Gb/sec", wantErr: true},
		{name: "dot", in: ". Gb/sec", wantErr: true},
		{name: "unit glued", in: "400Gb/sec", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseIBRate(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parseIBRate(%q) = %v, want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseIBRate(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("parseIBRate(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestNaturalCompare(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want int
	}{
		{name: "equal", a: "mlx5_0", b: "mlx5_0", want: 0},
		{name: "numeric", a: "mlx5_2", b: "mlx5_10", want: -1},
		{name: "numeric reversed", a: "mlx5_10", b: "mlx5_2", want: 1},
		{name: "prefix", a: "mlx5", b: "mlx5_0", want: -1},
		{name: "letters after digits", a: "mlx5_9", b: "mlx5_bond_0", want: -1},
		{name: "different drivers", a: "hfi1_0", b: "mlx4_0", want: -1},
		{name: "zero padding", a: "n01", b: "n1", want: -1},
		{name: "empty", a: "", b: "a", want: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := naturalCompare(tc.a, tc.b); got != tc.want {
				t.Errorf("naturalCompare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// h100Port is a port of the gpud H100 capture, where every port is 4X NDR InfiniBand and
// ACTIVE/LinkUp.
func h100Port(dev string) IBPort {
	return IBPort{Device: dev, Port: 1, State: "ACTIVE", StateID: 4, PhysState: "LinkUp", PhysStateID: 5,
		Rate: "400 Gb/sec (4X NDR)", RateGbps: 400, LinkLayer: "InfiniBand"}
}

// h100Bond is the Ethernet bond port of the same capture.
var h100Bond = IBPort{Device: "mlx5_bond_0", Port: 1, State: "ACTIVE", StateID: 4, PhysState: "LinkUp", PhysStateID: 5,
	Rate: "200 Gb/sec (2X NDR)", RateGbps: 200, LinkLayer: "Ethernet"}

func TestReadIBPortsFixtures(t *testing.T) {
	tests := []struct {
		name string
		sys  string
		want []IBPort
	}{
		{
			name: "gpud h100",
			sys:  "testdata/sys-ib-h100",
			want: []IBPort{
				h100Port("mlx5_0"), h100Port("mlx5_1"), h100Port("mlx5_4"), h100Port("mlx5_5"),
				h100Port("mlx5_6"), h100Port("mlx5_7"), h100Port("mlx5_8"), h100Port("mlx5_9"),
				h100Bond,
			},
		},
		{
			name: "procfs fixtures",
			sys:  "testdata/sys-ib-procfs",
			want: []IBPort{
				{Device: "hfi1_0", Port: 1, State: "ACTIVE", StateID: 4, PhysState: "LinkUp", PhysStateID: 5,
					Rate: "100 Gb/sec (4X EDR)", RateGbps: 100, LinkLayer: "InfiniBand"},
				{Device: "mlx4_0", Port: 1, State: "ACTIVE", StateID: 4, PhysState: "LinkUp", PhysStateID: 5,
					Rate: "40 Gb/sec (4X QDR)", RateGbps: 40, LinkLayer: "InfiniBand"},
				{Device: "mlx4_0", Port: 2, State: "ACTIVE", StateID: 4, PhysState: "LinkUp", PhysStateID: 5,
					Rate: "40 Gb/sec (4X QDR)", RateGbps: 40, LinkLayer: "InfiniBand"},
				// phys_state "4: ACTIVE" is odd (phys_state 4 is PortConfigurationTraining) but
				// as captured; it is reported as read.
				{Device: "mlx5_0", Port: 1, State: "ACTIVE", StateID: 4, PhysState: "ACTIVE", PhysStateID: 4,
					Rate: "25 Gb/sec (1X EDR)", RateGbps: 25, LinkLayer: "InfiniBand"},
			},
		},
		{name: "no infiniband class", sys: "testdata", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readIBPorts(context.Background(), os.DirFS(tc.sys))
			if err != nil {
				t.Fatalf("readIBPorts: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("readIBPorts (-want +got):\n%s", diff)
			}
		})
	}
}

// writeTree creates files (path: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// portFiles is the four attribute files of one port, under class/infiniband.
func portFiles(dev, port, state, phys, rate, link string) map[string]string {
	dir := "class/infiniband/" + dev + "/ports/" + port + "/"
	m := map[string]string{}
	for name, v := range map[string]string{"state": state, "phys_state": phys, "rate": rate, "link_layer": link} {
		if v != "-" { // "-" leaves the file out
			m[dir+name] = v
		}
	}
	return m
}

func mergeFiles(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestReadIBPortsMalformed(t *testing.T) {
	sys := t.TempDir()
	writeTree(t, sys, mergeFiles(
		portFiles("mlx5_0", "1", "4: ACTIVE\n", "5: LinkUp\n", "400 Gb/sec (4X NDR)\n", "InfiniBand\n"),
		portFiles("mlx5_1", "1", "garbage\n", "-", "fast\n", "InfiniBand\n"),
		portFiles("mlx5_10", "1", "1: DOWN\n", "3: Disabled\n", "40 Gb/sec (4X QDR)\n", "InfiniBand\n"),
		portFiles("mlx5_2", "1", "", "", "", ""),
		map[string]string{
			"class/infiniband/mlx5_3/fw_ver":          "28.41.1000\n", // no ports directory
			"class/infiniband/mlx5_0/ports/x/state":   "4: ACTIVE\n",  // not a port number
			"class/infiniband/mlx5_0/ports/2/hidden":  "",             // a port without attributes
			"class/infiniband/mlx5_4/ports/1/state/x": "",             // an unreadable state
		},
	))
	got, err := readIBPorts(context.Background(), os.DirFS(sys))
	want := []IBPort{
		{Device: "mlx5_0", Port: 1, State: "ACTIVE", StateID: 4, PhysState: "LinkUp", PhysStateID: 5,
			Rate: "400 Gb/sec (4X NDR)", RateGbps: 400, LinkLayer: "InfiniBand"},
		{Device: "mlx5_0", Port: 2},
		{Device: "mlx5_1", Port: 1, State: "garbage", Rate: "fast", LinkLayer: "InfiniBand"},
		{Device: "mlx5_2", Port: 1},
		{Device: "mlx5_4", Port: 1},
		{Device: "mlx5_10", Port: 1, State: "DOWN", StateID: 1, PhysState: "Disabled", PhysStateID: 3,
			Rate: "40 Gb/sec (4X QDR)", RateGbps: 40, LinkLayer: "InfiniBand"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readIBPorts (-want +got):\n%s", diff)
	}
	if err == nil {
		t.Fatal("readIBPorts: no error for a device without ports and a port named x")
	}
	for _, s := range []string{
		"list /sys/class/infiniband/mlx5_3/ports: no such file or directory",
		"/sys/class/infiniband/mlx5_0/ports/x: port name is not a number",
		"read /sys/class/infiniband/mlx5_4/ports/1/state: is a directory",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("readIBPorts error %q does not name %s", err, s)
		}
	}
}

// TestReadIBPortsSysfsLayout reads a tree laid out as sysfs lays it: class/infiniband/<dev> is
// a relative symlink into devices/, and each port has counters the reader must not touch.
func TestReadIBPortsSysfsLayout(t *testing.T) {
	sys := buildSysfsIB(t)
	done := make(chan struct{})
	var got []IBPort
	var err error
	go func() {
		defer close(done)
		got, err = readIBPorts(context.Background(), os.DirFS(sys))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		// Opening a counter FIFO blocks forever: the reader went into counters/.
		t.Fatal("readIBPorts hangs: it opened a file under counters/ or hw_counters/")
	}
	if err != nil {
		t.Fatalf("readIBPorts: %v", err)
	}
	want := []IBPort{h100Port("mlx5_0"), h100Bond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readIBPorts (-want +got):\n%s", diff)
	}
}

// buildSysfsIB lays out two ports of the H100 capture as sysfs does, with a FIFO for each
// port counter (opening one for reading blocks until a writer comes, which none does), and
// returns the sysfs root.
func buildSysfsIB(t *testing.T) string {
	t.Helper()
	sys := t.TempDir()
	buildSysfsIBAt(t, sys)
	return sys
}

// buildSysfsIBAt is buildSysfsIB into the directory sys.
func buildSysfsIBAt(t *testing.T, sys string) {
	t.Helper()
	for _, d := range []struct{ dev, bus string }{{"mlx5_0", "0000:18:00.0"}, {"mlx5_bond_0", "0000:5a:00.0"}} {
		devDir := filepath.Join(sys, "devices/pci0000:00", d.bus, "infiniband", d.dev)
		if err := os.CopyFS(devDir, os.DirFS(filepath.Join("testdata/sys-ib-h100/class/infiniband", d.dev))); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"counters/symbol_error", "hw_counters/out_of_buffer"} {
			p := filepath.Join(devDir, "ports/1", c)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		link := filepath.Join(sys, "class/infiniband", d.dev)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("../../devices/pci0000:00", d.bus, "infiniband", d.dev), link); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadIBPortsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := readIBPorts(ctx, os.DirFS("testdata/sys-ib-h100"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("readIBPorts with a cancelled context: %v, want context.Canceled", err)
	}
}
