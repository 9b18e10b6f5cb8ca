// Package nvml is nodecheck's NVML adapter and the only package that imports
// github.com/NVIDIA/go-nvml: it turns NVML into a node.GPUInventory and must never be
// imported by anything but the CLI's cgo wiring, so that the rest builds with
// CGO_ENABLED=0.
//
// go-nvml needs cgo (it dlopens libnvidia-ml.so.1 at Init), so every other file of this
// package is built only with cgo; this one is not, so that the package exists (empty) in a
// CGO_ENABLED=0 build and `go build ./...` and `go vet ./...` still work there.
//
// NVML facts this package respects (nvml.h, go-nvml; docs/development.md):
//   - after a failed nvmlInit, any other NVML call kills the process (the dynamic linker
//     cannot resolve the symbol: exit 127, not a panic), and so does a call to a function
//     the installed driver's library lacks; every call is gated on a successful Init, and
//     functions newer than the oldest supported driver are looked up first;
//   - return codes are compared as values (nvml.SUCCESS, nvml.ERROR_...), never as text: the
//     text changes once the library is loaded;
//   - a wedged GPU can block an NVML call for minutes and a blocked cgo call cannot be
//     cancelled: the reading runs in a goroutine that a deadline abandons.
//
// A cgo binary built on Debian 12 needs glibc 2.34 or later where it runs.
package nvml
