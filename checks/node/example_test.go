package node_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/nodecheck/nodecheck/checks/node"
)

func ExampleOpenSnapshot() {
	snap, err := node.OpenSnapshot("testdata/snap-h100")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	ports, _ := snap.IBPorts(ctx)
	for _, p := range ports {
		fmt.Printf("%s %s %s %g Gb/s %s\n", p.Name(), p.State, p.PhysState, p.RateGbps, p.LinkLayer)
	}
	dn, _ := snap.DevNode(ctx, "/dev/nvidia7")
	fmt.Println(dn.Path, "missing:", dn.Missing)
	res, _ := snap.Exec(ctx, []string{"/usr/bin/nv-fabricmanager", "--version"})
	fmt.Println(strings.TrimSpace(res.Stdout))
	// Output:
	// mlx5_0/1 ACTIVE LinkUp 400 Gb/s InfiniBand
	// mlx5_bond_0/1 ACTIVE LinkUp 200 Gb/s Ethernet
	// /dev/nvidia7 missing: true
	// Fabric Manager version is : 535.161.08
}

func ExampleSnapshot_GPUs() {
	snap, err := node.OpenSnapshot("testdata/snap-h100")
	if err != nil {
		fmt.Println(err)
		return
	}
	inv, err := snap.GPUs(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("init", inv.Init, "driver", inv.DriverVersion, "GPUs", inv.DeviceCount)
	for _, g := range inv.Devices {
		fmt.Printf("GPU %d %s x%d of x%d, fabric %s/%s\n", g.Index, g.PCIBusID,
			g.PCIe.CurLinkWidth, g.PCIe.MaxLinkWidth, g.Fabric.State, g.Fabric.Status)
	}
	// Output:
	// init SUCCESS driver 535.161.08 GPUs 1
	// GPU 0 0000:18:00.0 x16 of x16, fabric COMPLETED/SUCCESS
}
