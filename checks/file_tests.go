package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

const idFileTests = "file_tests"

// The ways file_tests fails: its rows of the remedy table (Faults).
const (
	faultFileTest     fault = "file_tests/failed"
	faultFileTestHung fault = "file_tests/hung"
)

// fileTests runs test(1)'s file operators on the paths listed, from stat, lstat and
// access(2) (node.FileStat), never reading a file: NHC's check_file_test (test -w /tmp, test
// -r /etc/passwd).
type fileTests struct{}

func (fileTests) ID() string { return idFileTests }

func (fileTests) Description() string {
	return "the files listed pass test(1)'s file tests (-r /etc/passwd, -w /tmp), from stat and access(2), as NHC's check_file_test runs them"
}

// fileTestsConfig is [checks.file_tests].
type fileTestsConfig struct {
	config.CheckCommon
	// Tests lists one check_file_test line each: "-r -w -x -d -k /tmp /var/tmp".
	Tests []string `toml:"tests"`
}

// Section: no tests (there is nothing every node must hold that fs_mounts does not already
// ask), in every mode, as fs_mounts: a stat costs microseconds. A stat that a hung NFS
// server holds is given up after node.StatfsTimeout, inside the check's 3 s.
func (fileTests) Section() config.Section {
	return &fileTestsConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: config.ModeNames()}}
}

// ValidateSection implements config.SectionValidator.
func (c *fileTestsConfig) ValidateSection() []config.Problem {
	var out []config.Problem
	for i, s := range c.Tests {
		if _, err := parseFileTest(s); err != nil {
			out = append(out, config.Problemf("tests", "[%d] = %q: %v", i, s, err))
		}
	}
	return out
}

// fileTest is one entry of tests: check_file_test's arguments.
type fileTest struct {
	Text  string   // the entry as written
	Ops   []byte   // the operators' letters, in order: 'r' for -r
	Neg   bool     // -! : the line passes when any test is false
	Paths []string // the files, in order
}

// fileTestOps are the operators check_file_test takes (lbnl_file.nhc: -[abcdefghkprstuwxOGLSN]),
// but -t, refused in parseFileTest.
const fileTestOps = "abcdefghkprsuwxOGLSN"

// parseFileTest parses one entry of tests as check_file_test parses its arguments: -X for an
// operator, -! to negate, anything else a file. A file must be an absolute path without glob
// characters: NHC's shell would expand a glob, and nodecheck does not.
func parseFileTest(s string) (fileTest, error) {
	t := fileTest{Text: s}
	for _, a := range strings.Fields(s) {
		switch {
		case a == "-!":
			t.Neg = true
		case a == "-t":
			return fileTest{}, errors.New(`-t asks whether a file descriptor is a terminal, and a health check has none`)
		case len(a) == 2 && a[0] == '-' && strings.IndexByte(fileTestOps, a[1]) >= 0:
			t.Ops = append(t.Ops, a[1])
		case strings.HasPrefix(a, "-"):
			return fileTest{}, fmt.Errorf("%q is not an operator check_file_test takes (-a -b -c -d -e -f -g -h -k -p -r -s -u -w -x -O -G -L -S -N, and -! to negate)", a)
		case !strings.HasPrefix(a, "/"):
			return fileTest{}, fmt.Errorf("file %q is not an absolute path", a)
		case strings.ContainsAny(a, "*?["):
			return fileTest{}, fmt.Errorf("file %q holds a glob character: list the files themselves", a)
		case path.Clean(a) != a:
			// test -f /etc/passwd/ is false and /x/link/.. follows the link: stat of the
			// cleaned path would answer another question.
			return fileTest{}, fmt.Errorf("file %q: write it as %q (a trailing /, // or .. is not taken)", a, path.Clean(a))
		default:
			t.Paths = append(t.Paths, a)
		}
	}
	if len(t.Ops) == 0 || len(t.Paths) == 0 {
		return fileTest{}, errors.New(`want at least one operator and one file, such as "-r -w /tmp" or "-! -e /etc/nologin"`)
	}
	return t, nil
}

// fileFacts is what the check learnt of one path: its FileStat, or why it has none.
type fileFacts struct {
	node.FileStat
	Hung        bool   // the stat did not answer in time (a hung NFS server?)
	NotRecorded bool   // a snapshot that never stat'ed the path
	ReadErr     string // why the stat could not be made otherwise; "" when it was
}

func (fileTests) Run(ctx context.Context, env *Env) Result {
	set := settings[*fileTestsConfig](env.Config, idFileTests)
	if len(set.Tests) == 0 {
		return Result{Status: StatusSkip, Summary: "no file tests listed in [checks.file_tests]"}
	}
	var tests []fileTest
	var paths []string
	seen := map[string]bool{}
	for _, s := range set.Tests {
		t, err := parseFileTest(s)
		if err != nil {
			return Result{Status: StatusError, Summary: fmt.Sprintf("tests entry %q: %v", s, err), Err: err}
		}
		tests = append(tests, t)
		for _, p := range t.Paths {
			if !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	return judgeFileTests(tests, gatherFileFacts(ctx, env.Facts, paths))
}

// gatherFileFacts stats every path at once, each given node.StatfsTimeout: a path on a hung
// NFS mount is marked Hung and the others are still answered.
func gatherFileFacts(ctx context.Context, f node.Facts, paths []string) map[string]fileFacts {
	ctx, cancel := context.WithTimeout(ctx, node.StatfsTimeout)
	defer cancel()
	type answer struct {
		path string
		st   node.FileStat
		err  error
	}
	ch := make(chan answer, len(paths)) // buffered: a goroutine answering late must not block
	for _, p := range paths {
		go func() {
			st, err := f.FileStat(ctx, p)
			ch <- answer{p, st, err}
		}()
	}
	out := make(map[string]fileFacts, len(paths))
	for _, p := range paths {
		// Where a Facts does not return at ctx's end, the path is left hung.
		out[p] = fileFacts{FileStat: node.FileStat{Path: p}, Hung: true}
	}
	for range paths {
		select {
		case a := <-ch:
			ff := fileFacts{FileStat: a.st}
			ff.Path = a.path
			switch {
			case a.err == nil:
			case errors.Is(a.err, context.DeadlineExceeded) || errors.Is(a.err, context.Canceled):
				ff.Hung = true
			case errors.Is(a.err, fs.ErrNotExist):
				ff.NotRecorded = true
			default:
				ff.ReadErr = a.err.Error()
			}
			out[a.path] = ff
		case <-ctx.Done():
			return out
		}
	}
	return out
}

// Faults lists file_tests' rows of the remedy table.
func (fileTests) Faults() Faults {
	return Faults{own: []remedyRow{
		{faultFileTest, "a file test failed: a file is missing, of the wrong kind or mode, or not readable or writable (a read-only filesystem)", RemedyAdmin,
			"NHC check_file_test: a person restores the file, its mode or its filesystem; a read-only /tmp is often a filesystem the kernel remounted after I/O errors"},
		{faultFileTestHung, "stat of a file a test names did not answer (a hung NFS or parallel filesystem server)", RemedyAdmin,
			"a hard NFS mount blocks every access until its server answers: a person fixes the server or the network"},
	}}
}

// Explain is what `nodecheck explain file_tests` says.
func (fileTests) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"lstat(2), stat(2) and access(2) (faccessat with AT_EACCESS: R_OK, W_OK, X_OK as the user nodecheck runs as) of each file the tests name, each given 2 s. No file is opened or read.",
		},
		Passes: "Every test line holds: each operator holds for each file, or, for a line with -!, at least one does not.",
		Fails:  `A test does not hold, named as NHC names it ("-w /tmp returned 1") with what the file is instead; a line with -! whose every test held ("-e /etc/nologin returned 0"); or a stat did not answer in 2 s (a hung NFS server).`,
		Skips:  "tests is empty; a snapshot that did not record a file a line names.",
		Errors: "stat gave an error other than absence (EACCES on a directory above the file, EIO): the test was not made.",
		Keys: map[string]string{
			"tests": `The tests, one string each, written as NHC's check_file_test arguments: operators, then absolute paths, such as "-r -w -x -d -k /tmp /var/tmp", "-f -r /etc/passwd" or "-! -e /etc/nologin". Each operator is tested on each file, in order, as bash's test does (-e exists, -f regular file, -d directory, -b block and -c character device, -p FIFO, -S socket, -h and -L symbolic link, -s not empty, -r -w -x access(2) as nodecheck's user: as root, -w is false on a read-only filesystem and -x true for a directory or any x bit, -u setuid, -g setgid, -k sticky, -O and -G owned by nodecheck's effective user and group, -N modified since last read (mtime after atime, as bash 5.1 and later compare them), -a as -e). -! anywhere makes the line pass when any test is false. -t is refused (a health check has no terminal), and globs are not expanded.`,
		},
		Fix: []string{
			"stat PATH, ls -ld PATH and findmnt -T PATH show what the check saw; a read-only filesystem shows ro in findmnt's options, and dmesg says why the kernel remounted it.",
		},
	}
}

// judgeFileTests judges each test line on the facts of its files, as check_file_test does:
// each operator on each file, in order; a line fails at its first test that does not hold,
// or, negated (-!), when every test held. A file whose facts could not be read settles no
// test: the line fails only where a test that was made decides it.
func judgeFileTests(tests []fileTest, facts map[string]fileFacts) Result {
	var res Result
	for _, t := range tests {
		res.Details = append(res.Details, judgeFileTest(t, facts))
	}
	res = settleDetails(res, countNoun(len(tests), "file test line", "file test lines")+" held")
	if res.Status == StatusSkip { // settleDetails names the first line, which may have held
		for _, d := range res.Details {
			if d.Status == StatusSkip {
				res.Summary = d.Device + ": " + d.Message
				break
			}
		}
	}
	return res
}

// judgeFileTest judges one line.
func judgeFileTest(t fileTest, facts map[string]fileFacts) Detail {
	d := Detail{Device: t.Text, Expected: "every test holds"}
	if t.Neg {
		d.Expected = "some test does not hold (-!)"
	}
	var unknown *fileFacts // the first file whose facts are missing
	var lastOp byte
	var lastPath string
	for _, op := range t.Ops {
		for _, p := range t.Paths {
			ff, ok := facts[p]
			if !ok {
				ff = fileFacts{FileStat: node.FileStat{Path: p}, ReadErr: "not stat'ed"}
			}
			if ff.Hung || ff.NotRecorded || ff.ReadErr != "" || ff.Error != "" {
				if unknown == nil {
					unknown = &ff
				}
				continue
			}
			lastOp, lastPath = op, p
			if fileOp(op, ff.FileStat) {
				continue
			}
			d.Subject = Subject{File: p}
			if t.Neg {
				d.Status = StatusOK
				d.Message = fmt.Sprintf("-%c %s returned 1: %s", op, p, fileOpFalse(op, ff.FileStat))
				return d
			}
			d.Observed = fmt.Sprintf("-%c %s returned 1", op, p)
			d.Message = d.Observed + ": " + fileOpFalse(op, ff.FileStat)
			failDetail(&d, faultFileTest)
			return d
		}
	}
	if unknown != nil {
		return fileTestUnknown(d, *unknown)
	}
	if t.Neg {
		d.Subject = Subject{File: lastPath}
		d.Observed = fmt.Sprintf("-%c %s returned 0", lastOp, lastPath)
		d.Message = d.Observed + ": the line is negated (-!), and every test held"
		failDetail(&d, faultFileTest)
		return d
	}
	d.Status, d.Message = StatusOK, "every test held"
	return d
}

// fileTestUnknown is the line's detail where no test decided it and a file's facts are
// missing.
func fileTestUnknown(d Detail, ff fileFacts) Detail {
	d.Subject = Subject{File: ff.Path}
	switch {
	case ff.Hung:
		d.Message = fmt.Sprintf("stat %s did not answer within %s (a hung NFS server?)", ff.Path, node.StatfsTimeout)
		failDetail(&d, faultFileTestHung)
	case ff.NotRecorded:
		d.Status, d.Message = StatusSkip, ff.Path+" not recorded in this snapshot"
	case ff.ReadErr != "":
		d.Status, d.Message = StatusError, "could not stat "+ff.Path+": "+ff.ReadErr
	default:
		d.Status, d.Message = StatusError, "could not stat "+ff.Path+": "+ff.Error
	}
	return d
}

// fileOp is bash's test -OP on a path's facts.
func fileOp(op byte, s node.FileStat) bool {
	switch {
	case s.Missing:
		return false
	case op == 'h' || op == 'L':
		return s.Symlink
	case s.Type == "": // a symlink that resolves nowhere: stat fails
		return false
	}
	switch op {
	case 'a', 'e':
		return true
	case 'b':
		return s.Type == "block"
	case 'c':
		return s.Type == "char"
	case 'd':
		return s.Type == "dir"
	case 'f':
		return s.Type == "file"
	case 'p':
		return s.Type == "fifo"
	case 'S':
		return s.Type == "socket"
	case 'u':
		return s.Mode&0o4000 != 0
	case 'g':
		return s.Mode&0o2000 != 0
	case 'k':
		return s.Mode&0o1000 != 0
	case 'r':
		return s.Readable
	case 'w':
		return s.Writable
	case 'x':
		return s.Executable
	case 's':
		return s.Size > 0
	case 'O':
		return s.UID == s.EUID
	case 'G':
		return s.GID == s.EGID
	case 'N': // bash 5.1 and later, to the nanosecond; older bash: atime <= mtime in seconds
		return s.MTime.After(s.ATime)
	}
	return false
}

// fileOpNames say what a file is not when -OP does not hold of it.
var fileOpNames = map[byte]string{
	'b': "not a block device", 'c': "not a character device", 'd': "not a directory",
	'f': "not a regular file", 'p': "not a named pipe", 'S': "not a socket",
	'h': "not a symbolic link", 'L': "not a symbolic link",
	'u': "has no setuid bit", 'g': "has no setgid bit", 'k': "has no sticky bit", 's': "is empty",
	'r': "not readable", 'x': "not executable (no x bit) nor a directory",
	'N': "not modified since it was last read",
}

// fileOpFalse says in words why -OP does not hold of s (or, for -!, that it did not).
func fileOpFalse(op byte, s node.FileStat) string {
	what := s.Path + " "
	switch {
	case s.Missing:
		return what + "does not exist"
	case s.Type == "" && op != 'h' && op != 'L':
		return what + "is a symbolic link that leads nowhere"
	}
	kind := ""
	if s.Type != "" {
		kind = fmt.Sprintf(" (a %s, mode %04o, owner %d:%d)", fileTypeWord(s.Type), s.Mode, s.UID, s.GID)
	}
	switch op {
	case 'w':
		return what + "is not writable (a read-only filesystem, or its mode)" + kind
	case 'O':
		return fmt.Sprintf("%sis owned by uid %d, not nodecheck's %d", what, s.UID, s.EUID)
	case 'G':
		return fmt.Sprintf("%sis owned by gid %d, not nodecheck's %d", what, s.GID, s.EGID)
	case 'N':
		return fmt.Sprintf("%sis %s: read at %s, modified at %s", what, fileOpNames[op],
			s.ATime.Format(time.RFC3339), s.MTime.Format(time.RFC3339))
	}
	if n, ok := fileOpNames[op]; ok {
		if !strings.HasPrefix(n, "has") && !strings.HasPrefix(n, "is") {
			n = "is " + n
		}
		return what + n + kind
	}
	return what + "exists" + kind
}

// fileTypeWord names a FileStat.Type in words.
func fileTypeWord(t string) string {
	switch t {
	case "file":
		return "regular file"
	case "dir":
		return "directory"
	case "char":
		return "character device"
	case "block":
		return "block device"
	case "fifo":
		return "named pipe"
	}
	return t
}
