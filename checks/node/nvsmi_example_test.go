package node_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/nodecheck/nodecheck/checks/node"
)

func ExampleParseNvidiaSMIQuery() {
	// A real `nvidia-smi -q` of one NVIDIA A10 with a row remap waiting for a reset
	// (testdata/nvsmi/SOURCE names its origin).
	f, err := os.Open("testdata/nvsmi/gpud-q-a10-535.129.03.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	inv, err := node.ParseNvidiaSMIQuery(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	g := inv.Devices[0]
	fmt.Println(inv.DriverVersion, inv.CUDADriverVersion, inv.DeviceCount)
	fmt.Println(g.Index, g.PCIBusID, g.Name)
	fmt.Printf("ECC on %t, uncorrectable since driver load %d\n", g.ECC.Enabled, *g.ECC.VolatileUncorrected)
	fmt.Printf("remapped rows: %d uncorrectable, pending %t, failed %t\n", g.RemappedRows.Uncorrectable, g.RemappedRows.Pending, g.RemappedRows.Failed)
	fmt.Printf("memory %d of %d MiB, %d processes\n", g.Memory.UsedMiB, g.Memory.TotalMiB, len(g.Compute.Processes))

	// Output cut short is refused, naming the line.
	_, err = node.ParseNvidiaSMIQuery(strings.NewReader("==============NVSMI LOG==============\nAttached GPUs : 8\nGPU 00000000:19:00.0\n    Product Name : NVIDIA H100 80GB HBM3\n"))
	fmt.Println(err)
	// Output:
	// 535.129.03 12020 1
	// 0 00000000:07:00.0 NVIDIA A10
	// ECC on true, uncorrectable since driver load 0
	// remapped rows: 4 uncorrectable, pending true, failed false
	// memory 4 of 23028 MiB, 0 processes
	// line 4: end of input after 1 GPU block, but "Attached GPUs : 8" (line 2) announced 8: the output is cut short, or was taken with -i; capture `nvidia-smi -q` of all GPUs
}

func ExampleParseNvidiaSMINvLinkStatus() {
	out := `GPU 6: NVIDIA A100-SXM4-80GB (UUID: GPU-6)
NVML: Unable to retrieve NVLink information as all links are inactive
GPU 7: NVIDIA A100-SXM4-80GB (UUID: GPU-7)
	 Link 0: 25 GB/s
	 Link 1: <inactive>
	 Link 2: 25 GB/s
`
	links, err := node.ParseNvidiaSMINvLinkStatus(strings.NewReader(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, uuid := range []string{"GPU-6", "GPU-7"} {
		fmt.Println(uuid, links[uuid])
	}
	// Output:
	// GPU-6 [{0 false} {1 false} {2 false}]
	// GPU-7 [{0 true} {1 false} {2 true}]
}
