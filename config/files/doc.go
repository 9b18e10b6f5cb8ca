// Package files is how nodecheck touches files it does not own and files it writes as root:
// the one bounded, deadline-aware reader (Read, ReadIn: regular files only, refused without
// blocking on a FIFO or device, bounded in size, abandoned at the caller's deadline), Await
// for any other work that cannot be interrupted, the one atomic writer and the openers that
// never follow a symlink (log file, state directory, lock), and the ownership rule for what
// root trusts (config file, state directory). It imports nothing from the module.
package files
