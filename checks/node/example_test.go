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
