// Package files is how nodecheck touches files: the one atomic writer, which never writes
// through a symlink. (Planned here too: the one bounded, deadline-aware reader of files
// nodecheck does not own, and the ownership rule for config and state directories.) It
// imports nothing from the module.
package files
