//go:build cgo

package main

import (
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/checks/node/nvml"
)

// newGPUSource is the NVML adapter: this build has cgo, so it can dlopen libnvidia-ml.so.1.
func newGPUSource() node.GPUSource { return nvml.New() }
