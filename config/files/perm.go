package files

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// RootOnly is the ownership rule for what nodecheck, running as root, trusts: its config file
// and its state directory (drain.json, the lock). Such a file or directory must be owned by
// root and writable by nobody else, or whoever can change it steers what root does (a
// config names programs root runs; drain.json decides when a drained node is resumed).
//
// It returns nil when fi (from Lstat, or Stat on the opened file) passes. Otherwise problems
// says what is wrong ("owned by uid 1000, not root", "mode drwxrwxrwx lets group or others
// write it") and fixes the commands that put it right ("chown root PATH", "chmod go-w PATH"),
// in the same order. ok is false when the owner cannot be told (fi.Sys() is not a
// *syscall.Stat_t, which any os.FileInfo on Linux is): the caller must refuse then too.
// Symlinks and file types are the caller's to judge: a config wants a regular file, the
// state a directory.
func RootOnly(path string, fi fs.FileInfo) (problems, fixes []string, ok bool) {
	st, isStat := fi.Sys().(*syscall.Stat_t)
	if !isStat {
		return nil, nil, false
	}
	if st.Uid != 0 {
		problems = append(problems, fmt.Sprintf("owned by uid %d, not root", st.Uid))
		fixes = append(fixes, "chown root "+ShellQuote(path))
	}
	if fi.Mode().Perm()&0o022 != 0 {
		problems = append(problems, fmt.Sprintf("mode %s lets group or others write it", fi.Mode().Perm()))
		fixes = append(fixes, "chmod go-w "+ShellQuote(path))
	}
	return problems, fixes, true
}

// ShellQuote quotes s for a command line an admin pastes from a message: s itself when it
// holds only letters, digits and "/._-+:@%,=", else s in single quotes, a single quote inside
// closed, escaped and opened again.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
