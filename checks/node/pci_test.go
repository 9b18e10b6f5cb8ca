package node

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseHexID(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    uint32
		wantErr bool
	}{
		{name: "vendor", in: "0x10de\n", want: 0x10de},
		{name: "device", in: "0x2330", want: 0x2330},
		{name: "class", in: "0x030200\n", want: 0x030200},
		{name: "leading zeros", in: "0x00ab", want: 0xab},
		{name: "upper case digits", in: "0x10DE", want: 0x10de},
		{name: "eight digits", in: "0xffffffff", want: 0xffffffff},
		{name: "spaces", in: "  0x8086 \n", want: 0x8086},
		{name: "zero", in: "0x0", want: 0},
		{name: "empty", in: "", wantErr: true},
		{name: "no prefix", in: "10de", wantErr: true},
		{name: "upper case prefix", in: "0X10de", wantErr: true},
		{name: "prefix only", in: "0x", wantErr: true},
		{name: "nine digits", in: "0x100000000", wantErr: true},
		{name: "not hex", in: "0x10dg", wantErr: true},
		{name: "sign", in: "0x+10de", wantErr: true},
		{name: "underscore", in: "0x10_de", wantErr: true},
		{name: "two values", in: "0x10de 0x2330", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseHexID(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parseHexID(%q) = %#x, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parseHexID(%q) = %#x, %v, want %#x", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParsePCILinkWidth(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int
		wantErr bool
	}{
		{name: "x16", in: "16\n", want: 16},
		{name: "x1", in: "1", want: 1},
		{name: "x2 nvswitch", in: "2\n", want: 2},
		{name: "x32", in: "32", want: 32},
		{name: "odd width passed through", in: "12", want: 12},
		{name: "zero is reserved: unknown", in: "0\n", want: 0},
		{name: "255 is PCIE_LNK_WIDTH_UNKNOWN", in: "255\n", want: 0},
		{name: "63 is all ones from a lost device", in: "63", want: 0},
		{name: "too wide", in: "33", want: 0},
		{name: "leading zero", in: "016", want: 16},
		{name: "empty", in: "", wantErr: true},
		{name: "x prefix", in: "x16", wantErr: true},
		{name: "negative", in: "-1", wantErr: true},
		{name: "text", in: "Unknown", wantErr: true},
		{name: "huge", in: "99999999999999999999", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePCILinkWidth(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parsePCILinkWidth(%q) = %d, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parsePCILinkWidth(%q) = %d, %v, want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParsePCILinkSpeed(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    float64
		wantErr bool
	}{
		{name: "gen5", in: "32.0 GT/s PCIe\n", want: 32},
		{name: "gen4", in: "16.0 GT/s PCIe", want: 16},
		{name: "gen3", in: "8.0 GT/s PCIe\n", want: 8},
		{name: "gen2", in: "5.0 GT/s PCIe", want: 5},
		{name: "gen1", in: "2.5 GT/s PCIe\n", want: 2.5},
		{name: "gen6", in: "64.0 GT/s PCIe", want: 64},
		{name: "old kernel gen3", in: "8 GT/s\n", want: 8},
		{name: "old kernel gen1", in: "2.5 GT/s", want: 2.5},
		{name: "unknown", in: "Unknown\n", want: 0},
		{name: "old kernel unknown", in: "Unknown speed\n", want: 0},
		{name: "empty", in: "", wantErr: true},
		{name: "no unit", in: "32.0", wantErr: true},
		{name: "wrong unit", in: "32.0 Gb/s PCIe", wantErr: true},
		{name: "lspci form", in: "32GT/s", wantErr: true},
		{name: "trailing word", in: "32.0 GT/s PCI-X", wantErr: true},
		{name: "extra words", in: "32.0 GT/s PCIe x16", wantErr: true},
		{name: "negative", in: "-8.0 GT/s PCIe", wantErr: true},
		{name: "two points", in: "8.0.0 GT/s PCIe", wantErr: true},
		{name: "leading point", in: ".5 GT/s PCIe", wantErr: true},
		{name: "trailing point", in: "8. GT/s PCIe", wantErr: true},
		{name: "exponent", in: "1e400 GT/s PCIe", wantErr: true},
		{name: "nan", in: "NaN GT/s PCIe", wantErr: true},
		{name: "lower case unknown", in: "unknown", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePCILinkSpeed(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parsePCILinkSpeed(%q) = %v, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parsePCILinkSpeed(%q) = %v, %v, want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestComparePCIAddress(t *testing.T) {
	want := []string{
		"0000:00:02.1", "0000:00:1f.6", "0000:01:00.0", "0000:19:00.0", "0000:a2:00.0",
		"0001:00:00.0", "000b:00:00.0", "ffff:00:00.0", "10000:e1:00.0", "odd", "z",
	}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, comparePCIAddress)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sorted addresses (-want +got):\n%s", diff)
	}
}

// pciAddrRE matches a directory name sysfs gives a PCI function.
var pciAddrRE = regexp.MustCompile(`^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// buildSysfsPCI copies testdata/sys-pci-procfs into a temporary sysfs root with the colons
// back in the directory names, adds the /sys/bus/pci/devices links sysfs has for every
// function, and returns the root.
func buildSysfsPCI(t *testing.T) string {
	t.Helper()
	sys := t.TempDir()
	buildSysfsPCIAt(t, sys)
	return sys
}

// buildSysfsPCIAt is buildSysfsPCI into the directory sys.
func buildSysfsPCIAt(t *testing.T, sys string) {
	t.Helper()
	src := "testdata/sys-pci-procfs"
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == src || d.Name() == "SOURCE" {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(sys, strings.ReplaceAll(rel, "-", ":"))
		if d.IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			if name := filepath.Base(dst); pciAddrRE.MatchString(name) {
				link := filepath.Join(sys, "bus/pci/devices", name)
				if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
					return err
				}
				return os.Symlink(filepath.Join("../../..", filepath.Dir(rel), filepath.Base(rel)), link)
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The links must use the colon names too.
	ents, err := os.ReadDir(filepath.Join(sys, "bus/pci/devices"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p := filepath.Join(sys, "bus/pci/devices", e.Name())
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(strings.ReplaceAll(target, "-", ":"), p); err != nil {
			t.Fatal(err)
		}
	}
}

// procfsPCI is what readPCIDevices makes of testdata/sys-pci-procfs.
// procfsPCI is what the reader gives for the procfs fixture. The real downgraded links there
// (0000:00:02.1 at x4 of x8, 0000:00:03.0 at x8 of x16) are on PCI bridges (class 0x0604),
// whose links no check judges, so their link attributes are not read: zeros.
var procfsPCI = []PCIDevice{
	{Address: "0000:00:02.1", Vendor: 0x1022, Device: 0x1634, Class: 0x060400,
		SysfsPath: "/sys/devices/pci0000:00/0000:00:02.1"},
	{Address: "0000:00:03.0", Vendor: 0x8086, Device: 0x6f08, Class: 0x060400,
		SysfsPath: "/sys/devices/pci0000:00/0000:00:03.0"},
	{Address: "0000:00:1f.6", Vendor: 0x8086, Device: 0x15d7, Class: 0x020000,
		SysfsPath: "/sys/devices/pci0000:00/0000:00:1f.6"},
	{Address: "0000:01:00.0", Vendor: 0xc0a9, Device: 0x540a, Class: 0x010802,
		SysfsPath: "/sys/devices/pci0000:00/0000:00:02.1/0000:01:00.0"},
	{Address: "0000:03:00.0", Vendor: 0x1000, Device: 0x00ab, Class: 0x010700,
		SysfsPath: "/sys/devices/pci0000:00/0000:00:03.0/0000:03:00.0"},
	{Address: "0000:a2:00.0", Vendor: 0x8086, Device: 0x159b, Class: 0x020000,
		CurLinkWidth: 8, MaxLinkWidth: 8, CurLinkSpeedGTs: 16, MaxLinkSpeedGTs: 16,
		SysfsPath: "/sys/devices/pci0000:a2/0000:a2:00.0"},
}

func TestReadPCIDevicesProcfs(t *testing.T) {
	sys := buildSysfsPCI(t)
	got, err := readPCIDevices(context.Background(), os.DirFS(sys))
	if err != nil {
		t.Fatalf("readPCIDevices: %v", err)
	}
	if diff := cmp.Diff(procfsPCI, got); diff != "" {
		t.Errorf("readPCIDevices (-want +got):\n%s", diff)
	}

	t.Run("live", func(t *testing.T) {
		l, err := NewLive(Paths{Sys: sys, Dev: t.TempDir(), FS: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.PCIDevices(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(procfsPCI, got); diff != "" {
			t.Errorf("Live.PCIDevices (-want +got):\n%s", diff)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{metaFile: validMeta})
		buildSysfsPCIAt(t, filepath.Join(dir, "fs", "sys"))
		s, err := OpenSnapshot(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.PCIDevices(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(procfsPCI, got); diff != "" {
			t.Errorf("Snapshot.PCIDevices (-want +got):\n%s", diff)
		}
	})
}

// h100Snapshot is the repository's recorded H100 node, or a skip where the checkout has no
// testdata/snapshots (they are fenced out of the module zip).
func h100Snapshot(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "snapshots", "h100-healthy")
	if _, err := os.Stat(filepath.Join(dir, metaFile)); err != nil {
		t.Skipf("no repository snapshots here (%v): they exist only in a checkout", err)
	}
	return dir
}

func TestPCIDevicesH100Snapshot(t *testing.T) {
	dir := h100Snapshot(t)
	s, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.PCIDevices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gpu := func(addr, path string) PCIDevice {
		return PCIDevice{Address: addr, Vendor: 0x10de, Device: 0x2330, Class: 0x030200,
			CurLinkWidth: 16, MaxLinkWidth: 16, CurLinkSpeedGTs: 32, MaxLinkSpeedGTs: 32,
			SysfsPath: "/sys/devices/" + path + "/" + addr}
	}
	nvswitch := func(addr, path string) PCIDevice {
		return PCIDevice{Address: addr, Vendor: 0x10de, Device: 0x22a3, Class: 0x068000,
			CurLinkWidth: 2, MaxLinkWidth: 2, CurLinkSpeedGTs: 16, MaxLinkSpeedGTs: 16,
			SysfsPath: "/sys/devices/" + path + "/" + addr}
	}
	want := []PCIDevice{
		gpu("0000:19:00.0", "pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0"),
		gpu("0000:3b:00.0", "pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0"),
		gpu("0000:4c:00.0", "pci0000:48/0000:48:01.0/0000:49:00.0/0000:4a:01.0"),
		gpu("0000:5d:00.0", "pci0000:59/0000:59:01.0/0000:5a:00.0/0000:5b:01.0"),
		nvswitch("0000:83:00.0", "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0"),
		nvswitch("0000:84:00.0", "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:01.0"),
		nvswitch("0000:85:00.0", "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:02.0"),
		nvswitch("0000:86:00.0", "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:03.0"),
		gpu("0000:9b:00.0", "pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:01.0"),
		gpu("0000:bb:00.0", "pci0000:b7/0000:b7:01.0/0000:b8:00.0/0000:b9:01.0"),
		gpu("0000:cb:00.0", "pci0000:c7/0000:c7:01.0/0000:c8:00.0/0000:c9:01.0"),
		gpu("0000:db:00.0", "pci0000:d7/0000:d7:01.0/0000:d8:00.0/0000:d9:01.0"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Snapshot.PCIDevices (-want +got):\n%s", diff)
	}

	// Live over the same tree gives the same answer.
	abs, err := filepath.Abs(filepath.Join(dir, "fs", "sys"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLive(Paths{Sys: abs, Dev: t.TempDir(), FS: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fromLive, err := l.PCIDevices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, fromLive); diff != "" {
		t.Errorf("Live.PCIDevices differs from Snapshot.PCIDevices on the same tree (-snapshot +live):\n%s", diff)
	}
}

func TestReadPCIDevicesMalformed(t *testing.T) {
	sys := t.TempDir()
	dev := func(addr string, attrs map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range attrs {
			m["bus/pci/devices/"+addr+"/"+k] = v
		}
		return m
	}
	writeTree(t, sys, mergeFiles(
		dev("0000:00:00.0", map[string]string{"vendor": "0x8086\n", "device": "0x0d57\n", "class": "0x060000\n"}),
		dev("0000:17:00.0", map[string]string{"vendor": "0x10de\n", "device": "0x2330\n", "class": "0x030200\n",
			"current_link_width": "255\n", "max_link_width": "16\n",
			"current_link_speed": "Unknown\n", "max_link_speed": "32.0 GT/s PCIe\n"}),
		dev("0000:18:00.0", map[string]string{"vendor": "10de\n", "device": "garbage", "class": "0x30200\n",
			"current_link_width": "x16\n", "max_link_width": "0\n",
			"current_link_speed": "fast\n", "max_link_speed": "8 GT/s\n"}),
		dev("0000:19:00.0", map[string]string{"vendor": "0x10de\n", "class": "0x068000\n", "current_link_width/x": ""}),
	))
	got, err := readPCIDevices(context.Background(), os.DirFS(sys))
	bus := "/sys/bus/pci/devices/"
	want := []PCIDevice{
		{Address: "0000:00:00.0", Vendor: 0x8086, Device: 0x0d57, Class: 0x060000, SysfsPath: bus + "0000:00:00.0"},
		{Address: "0000:17:00.0", Vendor: 0x10de, Device: 0x2330, Class: 0x030200,
			MaxLinkWidth: 16, MaxLinkSpeedGTs: 32, SysfsPath: bus + "0000:17:00.0"},
		{Address: "0000:18:00.0", Class: 0x030200, MaxLinkSpeedGTs: 8, SysfsPath: bus + "0000:18:00.0"},
		{Address: "0000:19:00.0", Vendor: 0x10de, Class: 0x068000, SysfsPath: bus + "0000:19:00.0"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readPCIDevices (-want +got):\n%s", diff)
	}
	if err == nil || !strings.Contains(err.Error(), "read /sys/bus/pci/devices/0000:19:00.0/current_link_width: is a directory") {
		t.Errorf("readPCIDevices error = %v, want one naming the unreadable current_link_width", err)
	}

	t.Run("no bus", func(t *testing.T) {
		got, err := readPCIDevices(context.Background(), os.DirFS(t.TempDir()))
		if err != nil || got != nil {
			t.Errorf("readPCIDevices without bus/pci/devices = %v, %v; want none and no error", got, err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := readPCIDevices(ctx, os.DirFS(sys)); !errors.Is(err, context.Canceled) {
			t.Errorf("readPCIDevices with a cancelled context: %v, want context.Canceled", err)
		}
	})
	t.Run("EINVAL from a link attribute is unknown", func(t *testing.T) {
		fsys := einvalFS{fstest.MapFS{
			"bus/pci/devices/0000:17:00.0/vendor":             {Data: []byte("0x10de\n")},
			"bus/pci/devices/0000:17:00.0/current_link_speed": {Data: []byte("x")},
			"bus/pci/devices/0000:17:00.0/max_link_speed":     {Data: []byte("32.0 GT/s PCIe\n")},
			"bus/pci/devices/0000:17:00.0/class":              {Data: []byte("0x030200\n")},
			"bus/pci/devices/0000:18:00.0/vendor":             {Data: []byte("0x10de\n")},
			"bus/pci/devices/0000:18:00.0/class":              {Data: []byte("x")},
		}, []string{"current_link_speed", "0000:18:00.0/class"}}
		got, err := readPCIDevices(context.Background(), fsys)
		want := []PCIDevice{
			{Address: "0000:17:00.0", Vendor: 0x10de, Class: 0x030200, MaxLinkSpeedGTs: 32, SysfsPath: bus + "0000:17:00.0"},
			{Address: "0000:18:00.0", Vendor: 0x10de, SysfsPath: bus + "0000:18:00.0"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("readPCIDevices (-want +got):\n%s", diff)
		}
		// EINVAL from class is not expected of the kernel: that one is an error.
		if err == nil || !strings.Contains(err.Error(), "class: invalid argument") || strings.Contains(err.Error(), "speed") {
			t.Errorf("readPCIDevices error = %v, want one for class only", err)
		}
	})
}

// einvalFS is a MapFS whose named files fail reads with EINVAL, as sysfs attributes do.
type einvalFS struct {
	fstest.MapFS
	names []string
}

func (e einvalFS) Open(name string) (fs.File, error) {
	f, err := e.MapFS.Open(name)
	if err != nil || !slices.ContainsFunc(e.names, func(n string) bool { return strings.HasSuffix(name, "/"+n) }) {
		return f, err
	}
	return einvalFile{f}, nil
}

type einvalFile struct{ fs.File }

func (einvalFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: "attr", Err: syscall.EINVAL}
}

var _ io.Reader = einvalFile{}

// TestSnapshotPCIDevicesConfined: a bus entry whose link leads out of the snapshot is an
// error for that device, never a read of the live node.
func TestSnapshotPCIDevicesConfined(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		metaFile: validMeta,
		"fs/sys/devices/pci0000:00/0000:00:01.0/vendor": "0x10de\n",
	})
	links := filepath.Join(dir, "fs/sys/bus/pci/devices")
	if err := os.MkdirAll(links, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ target, name string }{
		{"../../../devices/pci0000:00/0000:00:01.0", "0000:00:01.0"},
		{"/sys/devices/pci0000:00/0000:00:00.0", "0000:00:00.0"}, // absolute: the live node
	} {
		if err := os.Symlink(l.target, filepath.Join(links, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.PCIDevices(context.Background())
	want := []PCIDevice{
		{Address: "0000:00:00.0", SysfsPath: "/sys/bus/pci/devices/0000:00:00.0"},
		{Address: "0000:00:01.0", Vendor: 0x10de, SysfsPath: "/sys/devices/pci0000:00/0000:00:01.0"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PCIDevices (-want +got):\n%s", diff)
	}
	if err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("PCIDevices error = %v, want one saying the link escapes the snapshot", err)
	}
}

func TestSnapshotPCIDevicesDelay(t *testing.T) {
	for _, key := range []string{"/sys/bus/pci/devices", "/sys/bus", "/sys/devices/pci0000:15"} {
		t.Run(key, func(t *testing.T) {
			s, _ := writeSnapshot(t, map[string]string{
				metaFile: `{"format": 1, "delay_ms": {"` + key + `": 60000}}`,
			})
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, err := s.PCIDevices(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("PCIDevices = %v, want context.DeadlineExceeded", err)
			}
		})
	}
	t.Run("elsewhere", func(t *testing.T) {
		s, _ := writeSnapshot(t, map[string]string{metaFile: `{"format": 1, "delay_ms": {"/sys/class/infiniband": 60000}}`})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := s.PCIDevices(ctx); err != nil {
			t.Errorf("PCIDevices = %v, want no delay", err)
		}
	})
}

// TestLivePCIDevicesReal reads the PCI bus of the machine running the test.
func TestLivePCIDevicesReal(t *testing.T) {
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Skipf("no PCI bus here: %v", err)
	}
	l, err := NewLive(DefaultPaths())
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.PCIDevices(context.Background())
	if err != nil {
		t.Fatalf("PCIDevices: %v", err)
	}
	if !slices.IsSortedFunc(got, func(a, b PCIDevice) int { return comparePCIAddress(a.Address, b.Address) }) {
		t.Errorf("PCIDevices not sorted by address: %v", got)
	}
	for _, d := range got {
		if !pciAddrRE.MatchString(d.Address) || !strings.HasPrefix(d.SysfsPath, "/sys/devices/") || d.Vendor == 0 {
			t.Errorf("odd device %+v", d)
		}
	}
}
