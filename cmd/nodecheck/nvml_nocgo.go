//go:build !cgo

package main

import "github.com/nodecheck/nodecheck/checks/node"

// newGPUSource has no NVML to offer in a CGO_ENABLED=0 build (go-nvml needs cgo): without a
// source, node.Live reports GPUInventory.Init node.InitNotBuilt ("NOT_BUILT_WITH_NVML"),
// which checks treat as NVML unavailable and which tells an admin to use a cgo build.
func newGPUSource() node.GPUSource { return nil }
