package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestSnapshotTreeSymlinks: the listings read files from directories they hold open
// (rootDirs), and a file or directory those cannot answer for is read through the snapshot's
// root, which follows a symlink as long as it stays inside fs/. So sysfs' links (a device
// linked in from class/infiniband, an attribute linked from elsewhere in fs/) replay, and a
// link out of the snapshot is an error, as before.
func TestSnapshotTreeSymlinks(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "rate")
	if err := os.WriteFile(outside, []byte("400 Gb/sec (4X NDR)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := "fs/sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0"
	s, dir := writeSnapshot(t, map[string]string{
		dev + "/ports/1/state":          "4: ACTIVE\n",
		dev + "/ports/1/phys_state":     "5: LinkUp\n",
		dev + "/ports/1/link_layer":     "InfiniBand\n",
		"fs/shared/rate":                "400 Gb/sec (4X NDR)\n",
		"fs/sys/class/infiniband/.keep": "",
		dev + "/ports/2/state":          "4: ACTIVE\n",
		dev + "/ports/2/phys_state":     "5: LinkUp\n",
		dev + "/ports/2/link_layer":     "InfiniBand\n",
	})
	links := map[string]string{
		"fs/sys/class/infiniband/mlx5_0": "../../devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0",
		dev + "/ports/1/rate":            "../../../../../../../../shared/rate", // inside fs/, outside the port
		dev + "/ports/2/rate":            outside,                               // out of the snapshot
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	ports, err := s.IBPorts(context.Background())
	if len(ports) != 2 {
		t.Fatalf("IBPorts = %+v, %v; want 2 ports", ports, err)
	}
	if p := ports[0]; p.Device != "mlx5_0" || p.Port != 1 || p.RateGbps != 400 || p.StateID != 4 || p.PhysStateID != 5 {
		t.Errorf("port 1 = %+v, want ACTIVE/LinkUp at 400 Gb/s read through the links", p)
	}
	if p := ports[1]; p.Rate != "" || p.StateID != 4 {
		t.Errorf("port 2 = %+v, want its state and no rate (the rate links out of the snapshot)", p)
	}
	if err == nil || !strings.Contains(err.Error(), "ports/2/rate") || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("IBPorts error = %v, want one naming ports/2/rate as leading out of the snapshot", err)
	}

	// The same answers whether directories are opened with openat2 from the tree's root or,
	// as on a kernel before 5.6, from their parents one component each.
	root, rerr := os.OpenRoot(filepath.Join(dir, "fs"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	defer root.Close()
	for _, noBeneath := range []bool{false, true} {
		tree, terr := rootTree(root, "sys")
		if terr != nil {
			t.Fatal(terr)
		}
		tree.dir.noBeneath = noBeneath
		got, gerr := readIBPorts(context.Background(), tree)
		tree.close()
		if !reflect.DeepEqual(got, ports) || fmt.Sprint(gerr) != fmt.Sprint(err) {
			t.Errorf("noBeneath=%v: %+v, %v; want %+v, %v", noBeneath, got, gerr, ports, err)
		}
	}
}
