// Package files is how nodecheck touches files: the one atomic writer and the openers that never
// follow a symlink (log file, state directory, lock), and the ownership rule for what root
// trusts (config file, state directory). (Planned here too: the one bounded, deadline-aware
// reader of files nodecheck does not own.) It imports nothing from the module.
package files
