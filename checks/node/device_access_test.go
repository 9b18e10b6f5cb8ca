package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDeviceCgroup(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// cgroup v2, a prolog run inside the job (PrologFlags=RunInJob): slurmstepd's own
		// leaf under the extern step (src/plugins/cgroup/v2/cgroup_v2.c: step_x/slurm).
		{"v2", "0::/system.slice/slurmstepd.scope/job_42/step_extern/slurm\n", "/system.slice/slurmstepd.scope/job_42/step_extern/slurm"},
		// cgroup v1: the devices hierarchy's line, whatever its number and neighbours
		// (src/plugins/cgroup/v1/xcgroup.c: slurm/uid_%u/job_%u/step_%s).
		{"v1", "12:pids:/system.slice/slurmd.service\n7:devices:/slurm/uid_1000/job_42/step_extern\n1:name=systemd:/system.slice/slurmd.service\n", "/slurm/uid_1000/job_42/step_extern"},
		{"v1 shared hierarchy", "4:cpu,devices,memory:/slurm/uid_0/job_7/step_extern\n", "/slurm/uid_0/job_7/step_extern"},
		// Hybrid: both listed; the v1 devices controller is the one that rules.
		{"hybrid", "0::/system.slice/slurmd.service\n7:devices:/slurm/uid_1000/job_42/step_extern\n", "/slurm/uid_1000/job_42/step_extern"},
		{"slurmd's own, v2", "0::/system.slice/slurmd.service\n", "/system.slice/slurmd.service"},
		{"no devices, no unified", "3:memory:/user.slice\n", ""},
		{"empty", "", ""},
		{"garbage", "no colons here\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeviceCgroup(tc.in); got != tc.want {
				t.Errorf("DeviceCgroup(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestDeviceAccessFactLive reads a fixture tree: plain files named like GPUs are not GPUs,
// and a character node of major 195 (made where this test may mknod) is probed.
func TestDeviceAccessFactLive(t *testing.T) {
	root := t.TempDir()
	sys, dev := filepath.Join(root, "sys"), filepath.Join(root, "dev")
	for _, d := range []string{filepath.Join(sys, "fs/cgroup"), dev, filepath.Join(root, "proc/self")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(sys, "fs/cgroup/cgroup.controllers"), "cpuset cpu io memory pids\n")
	write(filepath.Join(root, "proc/self/cgroup"), "0::/system.slice/slurmstepd.scope/job_42/step_extern/slurm\n")
	write(filepath.Join(dev, "nvidia0"), "") // a plain file: not a GPU
	write(filepath.Join(dev, "nvidiactl"), "")
	made := unix.Mknod(filepath.Join(dev, "nvidia3"), unix.S_IFCHR|0o666, int(unix.Mkdev(195, 3))) == nil

	l, err := NewLive(Paths{Sys: sys, Dev: dev, FS: root})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(context.Background(), l, DeviceAccessFact)
	if err != nil {
		t.Fatal(err)
	}
	if got.CgroupVersion != 2 || got.Cgroup != "/system.slice/slurmstepd.scope/job_42/step_extern/slurm" {
		t.Errorf("cgroup v%d %q, want v2 and the job's extern step", got.CgroupVersion, got.Cgroup)
	}
	if !made {
		if len(got.GPUs) != 0 {
			t.Errorf("GPUs %+v, want none: no device node was made", got.GPUs)
		}
		t.Log("mknod not permitted here: the probe of a real device node is not exercised")
		return
	}
	if len(got.GPUs) != 1 || got.GPUs[0].Path != "/dev/nvidia3" || got.GPUs[0].Minor != 3 || got.GPUs[0].Error != "" {
		t.Fatalf("GPUs %+v, want /dev/nvidia3 (minor 3) alone, probed without error", got.GPUs)
	}
	t.Logf("this process may open 195:3: %v", got.GPUs[0].Allowed)
}

func TestDeviceAccessFactCheck(t *testing.T) {
	for _, bad := range []GPUAccess{
		{CgroupVersion: 3},
		{GPUs: []GPUDeviceAccess{{Path: "nvidia0"}}},
		{GPUs: []GPUDeviceAccess{{Path: "/dev/nvidiactl", Minor: 255}}},
		{GPUs: []GPUDeviceAccess{{Path: "/dev/nvidia0", Allowed: true, Error: "EACCES"}}},
	} {
		if err := DeviceAccessFact.Check(bad); err == nil {
			t.Errorf("Check(%+v) = nil, want an error", bad)
		}
	}
	if err := DeviceAccessFact.Check(GPUAccess{CgroupVersion: 1, GPUs: []GPUDeviceAccess{{Path: "/dev/nvidia7", Minor: 7, Allowed: true}}}); err != nil {
		t.Errorf("Check of a valid record: %v", err)
	}
}

// BenchmarkDeviceAccessFact reads the fact from this machine's /dev and /proc, with eight GPU
// device nodes made in a directory standing for /dev where mknod is permitted.
func BenchmarkDeviceAccessFact(b *testing.B) {
	dev := b.TempDir()
	for i := range 8 {
		if err := unix.Mknod(filepath.Join(dev, "nvidia"+string(rune('0'+i))), unix.S_IFCHR|0o666, int(unix.Mkdev(195, uint32(i)))); err != nil {
			b.Skipf("mknod: %v", err)
		}
	}
	l, err := NewLive(Paths{Sys: "/sys", Dev: dev, FS: "/"})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		a, err := Read(context.Background(), l, DeviceAccessFact)
		if err != nil || len(a.GPUs) != 8 {
			b.Fatalf("%+v %v", a, err)
		}
	}
}
