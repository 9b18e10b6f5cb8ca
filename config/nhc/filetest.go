package nhc

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// fileTest translates check_file_test: its operators and files, as file_tests takes them,
// refused where NHC would refuse them (an unknown operator, no operator or no file) or
// where file_tests cannot do what NHC does (-t, a relative path, a glob NHC's shell expands).
func fileTest(args []string, entry entryFunc) ([]Entry, string, error) {
	ops, files := 0, 0
	for _, a := range args {
		switch {
		case a == "-!":
		case a == "-t":
			return nil, "", errors.New("check_file_test -t asks whether a file descriptor is a terminal, which a health check has none of: keep the line in NHC")
		case len(a) == 2 && a[0] == '-' && strings.IndexByte("abcdefghkprsuwxOGLSN", a[1]) >= 0:
			ops++
		case strings.HasPrefix(a, "-"):
			return nil, "", fmt.Errorf("check_file_test: syntax error: invalid or unsupported operator %q (NHC refuses the line too)", a)
		case !strings.HasPrefix(a, "/"):
			return nil, "", fmt.Errorf("check_file_test file %q is not an absolute path: NHC resolves it from its working directory; write the whole path", a)
		case strings.ContainsAny(a, "*?[ \t"):
			return nil, "", fmt.Errorf("check_file_test file %q holds a glob character or a blank: NHC's shell expands or splits it, file_tests does not; list the files", a)
		case path.Clean(a) != a:
			return nil, "", fmt.Errorf("check_file_test file %q: file_tests takes it written as %q (a trailing /, // or .. changes what test(1) answers)", a, path.Clean(a))
		default:
			files++
		}
	}
	if ops == 0 || files == 0 {
		return nil, "", errors.New("check_file_test: syntax error: missing parameters (an operator and a file; NHC refuses the line too)")
	}
	return entry("file_tests", "tests", strings.Join(args, " ")), "", nil
}
