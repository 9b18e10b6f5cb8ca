// This go.mod only fences testdata/snapshots off from the nodecheck module: files under a
// directory with its own go.mod stay out of nodecheck's module zip. Without it, publishing
// nodecheck breaks (`go install github.com/nodecheck/nodecheck/cmd/nodecheck@vX` and the module
// proxy refuse the whole version): snapshot paths contain ':' (PCI addresses such as
// fs/sys/devices/pci0000:15/0000:15:01.0/...), which module zips reject ("malformed file path
// ...: invalid char ':'"), and symlinks, which module zips drop. No Go code lives here and
// nothing imports this module. Tests read these directories from the repository checkout.
module github.com/nodecheck/nodecheck/testdata/snapshots
