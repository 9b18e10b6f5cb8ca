package run

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodecheck/nodecheck/config/files"
)

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on every architecture Slurm
// GPU nodes run (x86-64, arm64, ppc64le; proc(5), sysconf(_SC_CLK_TCK)).
const userHZ = 100

// ProcessStart is when this process was created, as the kernel recorded it: the time Slurm
// counts a hook's timeout from. The start of main can come much later on a loaded node (the
// binary's pages read from disk, the runtime's start): about 10 ms on an idle node, seconds
// under heavy I/O. It falls back to now when /proc cannot say.
func ProcessStart(now time.Time) time.Time {
	b, err := files.Read(context.Background(), "/proc/self/stat", files.Limits{MaxBytes: 4096})
	if err != nil {
		return now
	}
	ticks, ok := parseStatStartTime(b)
	if !ok {
		return now
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return now
	}
	// starttime counts from boot, as CLOCK_BOOTTIME does.
	since := time.Duration(ts.Nano()) - time.Duration(ticks)*time.Second/userHZ
	if since < 0 || since > time.Minute {
		return now // a clock that disagrees: trust main's own start
	}
	return now.Add(-since)
}

// parseStatStartTime returns field 22 of /proc/<pid>/stat, starttime, in clock ticks after
// boot. The command name (field 2) is in parentheses and may hold spaces and ')': the fields
// are counted after the last ')'.
func parseStatStartTime(b []byte) (uint64, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(b[i+1:])
	const starttime = 22 - 3 // fields after ')' begin with field 3, state
	if len(fields) <= starttime {
		return 0, false
	}
	v, err := strconv.ParseUint(string(fields[starttime]), 10, 64)
	return v, err == nil
}
