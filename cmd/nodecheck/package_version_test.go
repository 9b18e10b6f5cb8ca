//go:build linux

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageVersion checks the package versions scripts/package.sh makes of `git describe`
// strings, and that dpkg and rpm order them as releases come: an untagged build is
// 0.0.0+git<commit time>.<hash>, never the bare hash, which sorted above later untagged builds
// ("7543d79" > "1a2b3c4").
func TestPackageVersion(t *testing.T) {
	script, err := filepath.Abs(filepath.Join(repoRoot, "scripts", "package.sh"))
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(mustRun(t, "git", "-C", repoRoot, "rev-parse", "--short=7", "HEAD"))
	version := func(v, epoch string, env ...string) string {
		t.Helper()
		cmd := exec.Command(script, "--print-version")
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "VERSION=" + v, "SOURCE_DATE_EPOCH=" + epoch}, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("VERSION=%s package.sh --print-version: %v\n%s", v, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	const jan2, jan3 = "1735830245", "1735916645" // 2025-01-02 15:04:05 and a day later, UTC
	for _, tc := range []struct {
		describe string
		env      []string
		want     string
	}{
		{"v1.2.0", nil, "1.2.0"},
		{"v1.2.0-rc1", nil, "1.2.0~rc1"},
		{"v1.2.0-5-gabc1234", nil, "1.2.0+5.gabc1234"},
		{"v1.2.0-dirty", nil, "1.2.0.dirty"},
		{head, nil, "0.0.0+git20250102150405." + head},
		{head + "-dirty", nil, "0.0.0+git20250102150405." + head + ".dirty"},
		{"7543d79", nil, "0.0.0+git20250102150405.7543d79"},                              // the hash of the issue
		{"7543d79", []string{"GIT_DIR=/nonexistent"}, "0.0.0+git20250102150405.7543d79"}, // not a checkout: by its letters
		{"20250102", []string{"GIT_DIR=/nonexistent"}, "20250102"},                       // digits only: a version
	} {
		if got := version(tc.describe, jan2, tc.env...); got != tc.want {
			t.Errorf("VERSION=%s %v: package version %q, want %q", tc.describe, tc.env, got, tc.want)
		}
	}

	// In release order: untagged builds by commit time (whatever their hashes), then a
	// release candidate, the release, a commit after it, the next release.
	ordered := []string{
		version("fffffff", jan2),
		version("aaaaaaa", jan3),
		version("v0.1.0-rc1", jan3),
		version("v0.1.0", jan3),
		version("v0.1.0-5-gabc1234", jan3),
		version("v0.1.1", jan3),
	}
	dpkg, dpkgErr := exec.LookPath("dpkg")
	rpm, rpmErr := exec.LookPath("rpm")
	if dpkgErr != nil || rpmErr != nil {
		t.Skipf("dpkg and rpm compare the versions (apt-get install rpm): %v %v", dpkgErr, rpmErr)
	}
	for i := 0; i+1 < len(ordered); i++ {
		a, b := ordered[i], ordered[i+1]
		if err := exec.Command(dpkg, "--compare-versions", a, "lt", b).Run(); err != nil {
			t.Errorf("dpkg: %s is not lower than %s", a, b)
		}
		if got := strings.TrimSpace(mustRun(t, rpm, "--eval", `%{lua: print(rpm.vercmp("`+a+`", "`+b+`"))}`)); got != "-1" {
			t.Errorf("rpm.vercmp(%s, %s) = %s, want -1", a, b, got)
		}
	}
	t.Logf("in order: %s", strings.Join(ordered, " < "))
}
