//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The packages' file list, as scripts/nfpm.yaml lays it out (man pages: a sample).
var packageFiles = []string{
	"/etc/nodecheck/nodecheck.toml",
	"/usr/sbin/nodecheck",
	"/usr/sbin/nodecheck-health",
	"/usr/lib/nodecheck/nhc",
	"/usr/share/bash-completion/completions/nodecheck",
	"/usr/share/doc/nodecheck/README.md",
	"/usr/share/doc/nodecheck/docs/README.md",
	"/usr/share/doc/nodecheck/docs/draining.md",
	"/usr/share/doc/nodecheck/docs/repairs.md",
	"/usr/share/fish/vendor_completions.d/nodecheck.fish",
	"/usr/share/man/man1/nodecheck.1.gz",
	"/usr/share/nodecheck/prometheus/nodecheck.rules.yml",
	"/usr/share/nodecheck/grafana/nodecheck-dashboard.json",
	"/usr/share/man/man1/nodecheck-run.1.gz",
	"/usr/share/man/man1/nodecheck-config-check.1.gz",
	"/usr/share/zsh/vendor-completions/_nodecheck",
	"/var/lib/nodecheck",
}

// withDocs is packageFiles and every page of the manual in the repository's docs/, at the
// path the packages install it.
func withDocs(t *testing.T, repo string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md in %s: %v", repo, err)
	}
	out := slices.Clone(packageFiles)
	for _, p := range pages {
		out = append(out, "/usr/share/doc/nodecheck/docs/"+filepath.Base(p))
	}
	return out
}

const (
	pkgTestVersion    = "0.0.0-pkgtest" // VERSION given to package.sh
	pkgTestPkgVersion = "0.0.0~pkgtest" // the package version package.sh makes of it
	pkgStateDir       = "/var/lib/nodecheck"
	pkgConfig         = "/etc/nodecheck/nodecheck.toml"
)

// TestPackage builds the .deb and .rpm with scripts/package.sh, reads both, installs the .deb
// on this machine with dpkg, runs the installed nodecheck, and removes and purges it again.
// It installs a package as root, so it runs only where NODECHECK_PACKAGE_TEST=1 says this
// machine may be changed (CI's .ci/run). It needs dpkg and rpm (Debian's "rpm" package).
func TestPackage(t *testing.T) {
	if os.Getenv("NODECHECK_PACKAGE_TEST") != "1" {
		t.Skip("NODECHECK_PACKAGE_TEST=1 builds the .deb and .rpm and installs the .deb here (as root, with dpkg); CI sets it")
	}
	if os.Geteuid() != 0 {
		t.Fatal("NODECHECK_PACKAGE_TEST=1: the package test installs the .deb with dpkg and must run as root")
	}
	for _, tool := range []string{"dpkg", "dpkg-deb", "dpkg-query", "rpm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("NODECHECK_PACKAGE_TEST=1 needs %s (rpm: apt-get install --no-install-recommends rpm): %v", tool, err)
		}
	}
	if st := dpkgStatus(t); st != "" && st != "unknown ok not-installed" {
		t.Fatalf("dpkg knows a nodecheck package here (%q): this test installs and purges its own, so remove it first (dpkg -P nodecheck)", st)
	}
	for _, p := range []string{"/usr/sbin/nodecheck", pkgConfig} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists and belongs to no package: this test would overwrite it", p)
		}
	}
	// Other tests (TestSlurm) run nodecheck with its default state dir: keep theirs aside, so
	// that the package's own directory is the one checked, and the purge removes only that.
	if _, err := os.Lstat(pkgStateDir); err == nil {
		backup := pkgStateDir + ".pkgtest-backup"
		if err := os.RemoveAll(backup); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(pkgStateDir, backup); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.RemoveAll(pkgStateDir); err != nil {
				t.Error(err)
			}
			if err := os.Rename(backup, pkgStateDir); err != nil {
				t.Error(err)
			}
		})
	}

	repo, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	start := time.Now()
	if out, errOut, code := command(t, 15*time.Minute, []string{"VERSION=" + pkgTestVersion, "DIST=" + dist}, filepath.Join(repo, "scripts", "package.sh")); code != 0 {
		t.Fatalf("scripts/package.sh: exit %d:\n%s%s", code, out, errOut)
	}
	t.Logf("scripts/package.sh built the .deb and .rpm in %s", time.Since(start).Round(time.Second))
	deb, rpm := onePackage(t, dist, "*.deb"), onePackage(t, dist, "*.rpm")

	t.Run("rpm", func(t *testing.T) {
		want := "nodecheck " + pkgTestPkgVersion + " 1"
		if got := mustRun(t, "rpm", "-qp", "--qf", `%{NAME} %{VERSION} %{RELEASE}`, rpm); got != want {
			t.Errorf("rpm name, version, release: %q, want %q", got, want)
		}
		// One line per file: mode, owner, flags (c: config, n: noreplace), path.
		list := mustRun(t, "rpm", "-qp", "--qf", `[%{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILEFLAGS:fflags} %{FILENAMES}\n]`, rpm)
		for _, p := range withDocs(t, repo) {
			if !containsField(list, p) {
				t.Errorf("the rpm lacks %s; it holds:\n%s", p, list)
			}
		}
		for _, line := range []string{
			"-rw-r--r-- root:root cn " + pkgConfig,
			"-rwxr-xr-x root:root  /usr/sbin/nodecheck",
			"drwx------ root:root  " + pkgStateDir,
		} {
			if !strings.Contains("\n"+list+"\n", "\n"+line+"\n") {
				t.Errorf("the rpm has no line %q; it holds:\n%s", line, list)
			}
		}
		if got := mustRun(t, "rpm", "-qp", "--requires", rpm); !strings.Contains(got, "glibc >= 2.34") {
			t.Errorf("rpm requires:\n%s\nwant glibc >= 2.34", got)
		}
		if got := mustRun(t, "rpm", "-qp", "--recommends", rpm); got != "slurm" {
			t.Errorf("rpm recommends %q, want slurm", got)
		}
	})

	t.Run("deb", func(t *testing.T) {
		want := "Package: nodecheck\nVersion: " + pkgTestPkgVersion + "\nDepends: libc6 (>= 2.34)\nRecommends: slurm-client"
		if got := mustRun(t, "dpkg-deb", "-f", deb, "Package", "Version", "Depends", "Recommends"); got != want {
			t.Errorf("deb control fields:\n%s\nwant:\n%s", got, want)
		}
		if got := mustRun(t, "dpkg-deb", "-I", deb, "conffiles"); got != pkgConfig {
			t.Errorf("deb conffiles %q, want %q", got, pkgConfig)
		}
		list := mustRun(t, "dpkg-deb", "-c", deb)
		for _, p := range withDocs(t, repo) {
			if !containsField(list, "."+p) && !containsField(list, "."+p+"/") {
				t.Errorf("the deb lacks %s; it holds:\n%s", p, list)
			}
		}
	})

	// Install, then remove and purge whatever happens.
	t.Cleanup(func() {
		if out, errOut, code := command(t, time.Minute, nil, "dpkg", "-P", "nodecheck"); code != 0 {
			t.Errorf("dpkg -P nodecheck: exit %d:\n%s%s", code, out, errOut)
		}
	})
	mustRun(t, "dpkg", "-i", deb)

	t.Run("installed", func(t *testing.T) {
		if out := mustRun(t, "/usr/sbin/nodecheck", "version"); !strings.HasPrefix(out, "nodecheck "+pkgTestVersion+" (") {
			t.Errorf("nodecheck version: %q, want it to start %q", out, "nodecheck "+pkgTestVersion+" (")
		}
		snap := filepath.Join(repo, "testdata", "snapshots", "h100-healthy")
		if out := mustRun(t, "/usr/sbin/nodecheck", "run", "--all", "--snapshot", snap); !strings.Contains(out, "HEALTHY") {
			t.Errorf("nodecheck run --all --snapshot %s:\n%s", snap, out)
		}
		// Started as nodecheck-health, nodecheck runs `run` in health mode: --help is run's.
		if out := mustRun(t, "/usr/sbin/nodecheck-health", "--help"); !strings.Contains(out, "nodecheck run [flags]") {
			t.Errorf("nodecheck-health --help:\n%s", out)
		}
		// The shipped file is valid, and nodecheck accepts its owner and mode (root, 0644).
		mustRun(t, "/usr/sbin/nodecheck", "config", "check", pkgConfig)
		// The installed alert rules load in Prometheus (.ci/run installs promtool).
		mustRun(t, "promtool", "check", "rules", "/usr/share/nodecheck/prometheus/nodecheck.rules.yml")

		if target, err := os.Readlink("/usr/sbin/nodecheck-health"); err != nil || target != "nodecheck" {
			t.Errorf("/usr/sbin/nodecheck-health -> %q (%v), want -> nodecheck", target, err)
		}
		// /usr/sbin/nhc is the alternative postinstall made, and nodecheck answers as nhc.
		if target, err := filepath.EvalSymlinks("/usr/sbin/nhc"); err != nil || target != "/usr/sbin/nodecheck" {
			t.Errorf("/usr/sbin/nhc resolves to %q (%v), want /usr/sbin/nodecheck", target, err)
		}
		if _, errOut, code := command(t, time.Minute, nil, "/usr/sbin/nhc", "-e", "check_fs_mount /"); code != 2 || !strings.Contains(errOut, "not supported by nodecheck's nhc drop-in") {
			t.Errorf("/usr/sbin/nhc -e: exit %d:\n%s", code, errOut)
		}
		for _, tc := range []struct {
			path string
			mode fs.FileMode
		}{
			{"/usr/sbin/nodecheck", 0o755},
			{pkgConfig, 0o644},
			{pkgStateDir, fs.ModeDir | 0o700},
			{"/usr/share/man/man1/nodecheck.1.gz", 0o644},
			{"/usr/share/bash-completion/completions/nodecheck", 0o644},
			{"/usr/share/zsh/vendor-completions/_nodecheck", 0o644},
			{"/usr/share/fish/vendor_completions.d/nodecheck.fish", 0o644},
			{"/usr/share/nodecheck/prometheus/nodecheck.rules.yml", 0o644},
			{"/usr/share/nodecheck/grafana/nodecheck-dashboard.json", 0o644},
		} {
			fi, err := os.Lstat(tc.path)
			if err != nil {
				t.Error(err)
				continue
			}
			if fi.Mode() != tc.mode {
				t.Errorf("%s: mode %v, want %v", tc.path, fi.Mode(), tc.mode)
			}
			if uid, gid := fileOwner(fi); uid != 0 || gid != 0 {
				t.Errorf("%s: owner %d:%d, want root", tc.path, uid, gid)
			}
		}
		want, err := os.ReadFile(filepath.Join(repo, "testdata", "nodecheck.toml"))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(pkgConfig); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from testdata/nodecheck.toml (%v)", pkgConfig, err)
		}
		if b, err := os.ReadFile("/usr/share/man/man1/nodecheck-run.1.gz"); err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("nodecheck-run.1.gz is not gzip (%v)", err)
		}
	})

	t.Run("conffile kept on reinstall and remove, gone on purge", func(t *testing.T) {
		edited := "\n# edited by TestPackage\n"
		appendFile(t, pkgConfig, edited)
		mustRun(t, "dpkg", "--force-confold", "-i", deb)
		if b, _ := os.ReadFile(pkgConfig); !strings.HasSuffix(string(b), edited) {
			t.Errorf("reinstalling replaced the edited %s", pkgConfig)
		}
		// What nodecheck writes at run time (drain.json) stays on remove, goes on purge.
		state := filepath.Join(pkgStateDir, "drain.json")
		appendFile(t, state, "{}\n")

		mustRun(t, "dpkg", "-r", "nodecheck")
		if st := dpkgStatus(t); st != "deinstall ok config-files" {
			t.Errorf("after dpkg -r: status %q, want deinstall ok config-files", st)
		}
		for _, p := range []string{"/usr/sbin/nodecheck", "/usr/sbin/nodecheck-health", "/usr/sbin/nhc", "/etc/alternatives/nhc", "/usr/share/man/man1/nodecheck.1.gz"} {
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after dpkg -r, %s is still there (%v)", p, err)
			}
		}
		if b, _ := os.ReadFile(pkgConfig); !strings.HasSuffix(string(b), edited) {
			t.Errorf("dpkg -r did not keep the edited %s", pkgConfig)
		}
		if _, err := os.Stat(state); err != nil {
			t.Errorf("dpkg -r removed nodecheck's state: %v", err)
		}

		mustRun(t, "dpkg", "-P", "nodecheck")
		for _, p := range []string{pkgConfig, filepath.Dir(pkgConfig), pkgStateDir} {
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after dpkg -P, %s is still there (%v)", p, err)
			}
		}
	})

	t.Run("LBNL NHC's own /usr/sbin/nhc is never replaced", func(t *testing.T) {
		const lbnl = "#!/bin/sh\n# stands in for LBNL NHC's /usr/sbin/nhc\nexit 0\n"
		if _, err := os.Lstat("/usr/sbin/nhc"); err == nil {
			t.Skip("/usr/sbin/nhc exists on this machine: not touched")
		}
		if err := os.WriteFile("/usr/sbin/nhc", []byte(lbnl), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove("/usr/sbin/nhc") })
		_, errOut, code := command(t, time.Minute, nil, "dpkg", "-i", deb)
		if code != 0 || !strings.Contains(errOut, "left as it is") {
			t.Errorf("dpkg -i beside LBNL NHC: exit %d:\n%s", code, errOut)
		}
		mustRun(t, "dpkg", "-P", "nodecheck")
		if b, err := os.ReadFile("/usr/sbin/nhc"); err != nil || string(b) != lbnl {
			t.Errorf("/usr/sbin/nhc was changed (%v):\n%s", err, b)
		}
	})
}

// command runs argv with the test's environment plus env, and returns its stdout, stderr and
// exit code. It fails the test if argv cannot start or runs past d.
func command(t *testing.T, d time.Duration, env []string, argv ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: timed out after %v:\n%s%s", strings.Join(argv, " "), d, out.String(), errb.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// mustRun runs argv for a minute at most, fails the test unless it exits 0, and returns its
// stdout without the trailing newline.
func mustRun(t *testing.T, argv ...string) string {
	t.Helper()
	out, errOut, code := command(t, time.Minute, nil, argv...)
	if code != 0 {
		t.Fatalf("%s: exit %d:\n%s%s", strings.Join(argv, " "), code, out, errOut)
	}
	return strings.TrimRight(out, "\n")
}

// dpkgStatus is dpkg's status of the nodecheck package ("install ok installed"), or "" when
// dpkg has never heard of it.
func dpkgStatus(t *testing.T) string {
	t.Helper()
	out, _, code := command(t, time.Minute, nil, "dpkg-query", "-W", "-f", "${Status}", "nodecheck")
	if code != 0 {
		return ""
	}
	return strings.TrimSpace(out)
}

func onePackage(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("package.sh made %q in %s, want one %s (%v)", m, dir, pattern, err)
	}
	return m[0]
}

// containsField reports whether a line of list ends in the field f (a path, or "path -> target").
func containsField(list, f string) bool {
	for _, line := range strings.Split(list, "\n") {
		line, _, _ = strings.Cut(line, " -> ")
		if strings.HasSuffix(line, " "+f) {
			return true
		}
	}
	return false
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprint(f, s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

func fileOwner(fi fs.FileInfo) (uid, gid uint32) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 1<<32 - 1, 1<<32 - 1
	}
	return st.Uid, st.Gid
}
