package node

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// keptGPUs is a GPUSource that hands out the same inventory every time, as a source that
// keeps its one reading would: fillProcessOwners must not write into it.
type keptGPUs struct{ inv GPUInventory }

func (k keptGPUs) GPUs(context.Context, GPUFields) (GPUInventory, error) { return k.inv, nil }

func TestParseStatusUID(t *testing.T) {
	tests := []struct {
		name   string
		status string
		want   int
		ok     bool
	}{
		// proc(5): real, effective, saved set, filesystem.
		{"user", "Name:\tpython\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\nPPid:\t1\nTracerPid:\t0\nUid:\t1001\t1001\t1001\t1001\nGid:\t1001\t1001\t1001\t1001\n", 1001, true},
		{"setuid: real uid counts", "Uid:\t1001\t0\t0\t0\n", 1001, true},
		{"root", "Name:\tnv-hostengine\nUid:\t0\t0\t0\t0\n", 0, true},
		{"no Uid line", "Name:\tx\nGid:\t0\t0\t0\t0\n", 0, false},
		{"empty Uid line", "Uid:\n", 0, false},
		{"not a number", "Uid:\tx\t0\t0\t0\n", 0, false},
		{"uid too large", "Uid:\t4294967296\t0\t0\t0\n", 0, false},
		{"empty", "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseStatusUID([]byte(tc.status))
			if got != tc.want || ok != tc.ok {
				t.Errorf("parseStatusUID = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParsePasswd(t *testing.T) {
	in := strings.Join([]string{
		"root:x:0:0:root:/root:/bin/bash",
		"# a comment",
		"",
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
		"alice:x:1001:1001:Alice,,,:/home/alice:/bin/bash",
		"alias:x:1001:1001::/home/alice:/bin/bash", // a second name for uid 1001: the first wins
		"+@admins::::::", // NIS compat
		"broken:x:notanumber:0::/:/bin/sh",
		"short:x",
		":x:5:5::/:/bin/sh",
		"bob:x:1002:1002::/home/bob:/bin/bash", // no newline at the end
	}, "\n")
	want := map[int]string{0: "root", 1: "daemon", 1001: "alice", 1002: "bob"}
	if diff := cmp.Diff(want, parsePasswd([]byte(in))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// procTree writes a fixture root with /proc/<pid>/{status,comm} for each process and an
// /etc/passwd.
func procTree(t *testing.T, passwd string, procs map[int][2]string) string {
	t.Helper()
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if passwd != "" {
		write("etc/passwd", passwd)
	}
	for pid, sc := range procs {
		dir := filepath.Join("proc", strconv.Itoa(pid))
		write(filepath.Join(dir, "status"), sc[0])
		write(filepath.Join(dir, "comm"), sc[1])
	}
	return root
}

func TestLiveGPUsProcessOwners(t *testing.T) {
	ctx := context.Background()
	root := procTree(t, "root:x:0:0:root:/root:/bin/bash\nalice:x:1001:1001::/home/alice:/bin/bash\n",
		map[int][2]string{
			4242: {"Name:\tpython\nUid:\t1001\t1001\t1001\t1001\n", "python\n"},
			4243: {"Name:\tpython3\nUid:\t1001\t1001\t1001\t1001\n", "pt_main_thread\n"},
			77:   {"Name:\tnv-hostengine\nUid:\t0\t0\t0\t0\n", "nv-hostengine\n"},
			5000: {"Name:\tjob\nUid:\t2000\t2000\t2000\t2000\n", "job\n"}, // not in passwd (LDAP)
		})
	src := GPUInventory{Init: InitSuccess, DeviceCount: 3, Devices: []GPU{
		{Index: 0, MinorNumber: 0, Memory: &Memory{TotalMiB: 81559, UsedMiB: 2048}, Compute: &Compute{Processes: []Process{
			{PID: 4242, UsedMiB: 1024}, {PID: 4243, UsedMiB: 1024}, {PID: 9999, UsedMiB: 12}, // 9999 is gone
		}}},
		{Index: 1, MinorNumber: 1, Compute: &Compute{Processes: []Process{{PID: 4242, UsedMiB: 10}, {PID: 77}, {PID: 5000}}}},
		{Index: 2, MinorNumber: 2}, // NVML could not list
	}}
	kept := src.Clone()
	l, err := NewLive(Paths{Sys: t.TempDir(), Dev: t.TempDir(), FS: root}, WithGPUSource(keptGPUs{src}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.GPUs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := kept.Clone()
	want.Devices[0].Compute.Processes = []Process{
		{PID: 4242, UsedMiB: 1024, UID: 1001, User: "alice", Command: "python"},
		{PID: 4243, UsedMiB: 1024, UID: 1001, User: "alice", Command: "pt_main_thread"},
		{PID: 9999, UsedMiB: 12, UID: -1},
	}
	want.Devices[1].Compute.Processes = []Process{
		{PID: 4242, UsedMiB: 10, UID: 1001, User: "alice", Command: "python"},
		{PID: 77, UID: 0, User: "root", Command: "nv-hostengine"},
		{PID: 5000, UID: 2000, Command: "job"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPUs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(kept, src); diff != "" {
		t.Errorf("the source's inventory was changed (-before +after):\n%s", diff)
	}

	t.Run("no passwd", func(t *testing.T) {
		root := procTree(t, "", map[int][2]string{4242: {"Uid:\t1001\t1001\t1001\t1001\n", "python\n"}})
		l, err := NewLive(Paths{Sys: t.TempDir(), Dev: t.TempDir(), FS: root}, WithGPUSource(keptGPUs{GPUInventory{
			Init: InitSuccess, DeviceCount: 1, Devices: []GPU{{Compute: &Compute{Processes: []Process{{PID: 4242}}}}},
		}}))
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.GPUs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]Process{{PID: 4242, UID: 1001, Command: "python"}}, got.Devices[0].Compute.Processes); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

// TestLiveGPUsOwnProcess reads this test's own process from the real /proc and /etc/passwd.
func TestLiveGPUsOwnProcess(t *testing.T) {
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	pid := uint32(os.Getpid())
	l, err := NewLive(DefaultPaths(), WithGPUSource(keptGPUs{GPUInventory{
		Init: InitSuccess, DeviceCount: 1, Devices: []GPU{{Compute: &Compute{Processes: []Process{{PID: pid}}}}},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := got.Devices[0].Compute.Processes[0]
	if p.UID != os.Getuid() || p.Command != strings.TrimSuffix(string(comm), "\n") {
		t.Errorf("process %d: uid %d, command %q; want %d, %q", pid, p.UID, p.Command, os.Getuid(), strings.TrimSpace(string(comm)))
	}
	if os.Getuid() == 0 && p.User != "root" {
		t.Errorf("process %d of root: user %q", pid, p.User)
	}
}

// FuzzParseProcFiles: whatever /proc/<pid>/status and /etc/passwd hold, the parsers return
// without panicking, a uid is never negative, and a user name never carries the separators
// that end a passwd field or line.
func FuzzParseProcFiles(f *testing.F) {
	f.Add([]byte("Name:\tpython\nUid:\t1001\t1001\t1001\t1001\n"), []byte("root:x:0:0:root:/root:/bin/bash\nalice:x:1001:1001::/home/alice:/bin/sh\n"))
	f.Add([]byte("Uid:\n"), []byte("+::::::\n#c\n:x:1:1::/:/bin/false\n"))
	f.Fuzz(func(t *testing.T, status, passwd []byte) {
		if u, ok := parseStatusUID(status); ok && u < 0 {
			t.Fatalf("parseStatusUID(%q) = %d", status, u)
		}
		for uid, name := range parsePasswd(passwd) {
			if uid < 0 || name == "" || strings.ContainsAny(name, ":\n") {
				t.Fatalf("parsePasswd(%q): uid %d name %q", passwd, uid, name)
			}
		}
	})
}
