package slurm

// Slurm's time limits (a partition's MaxTime= and DefaultTime=), read as
// src/common/parse_time.c's time_str2mins reads them.

import (
	"strconv"
	"strings"
	"time"
)

// UnlimitedTime stands for a time limit of UNLIMITED (or INFINITE, or -1).
const UnlimitedTime = time.Duration(1<<63 - 1)

// maxSlurmTime is the longest limit ParseSlurmTime returns: Slurm keeps minutes in a 32-bit
// int (4,000 years), more than a time.Duration holds; longer limits are cut to it (146 years).
const maxSlurmTime = time.Duration(1<<62) / time.Minute * time.Minute

// ParseSlurmTime reads a time limit as Slurm does: "UNLIMITED", "INFINITE" or "-1" (any
// case) for no limit; "minutes", "minutes:seconds", "hours:minutes:seconds",
// "days-hours", "days-hours:minutes" or "days-hours:minutes:seconds"; seconds rounded up to
// a whole minute. ok is false for what Slurm refuses (it then refuses the partition: "Bad
// value ... for MaxTime"). Parts are checked as _is_valid_timespec checks them: digits,
// at most one '-', at most two ':', no ':' before the '-', and enough numbers for the
// separators given.
func ParseSlurmTime(s string) (d time.Duration, ok bool) {
	switch {
	case s == "-1" || strings.EqualFold(s, "INFINITE") || strings.EqualFold(s, "UNLIMITED"):
		return UnlimitedTime, true
	case !validTimespec(s):
		return 0, false
	}
	var days, hours, mins, secs int64
	var parts []int64
	if dayPart, rest, hasDay := strings.Cut(s, "-"); hasDay {
		var n []int64
		if n, ok = timeNumbers(dayPart + ":" + rest); !ok {
			return 0, false
		}
		parts = append(n, 0, 0, 0)[:4]
		days, hours, mins, secs = parts[0], parts[1], parts[2], parts[3]
	} else {
		if parts, ok = timeNumbers(s); !ok {
			return 0, false
		}
		switch len(parts) {
		case 3:
			hours, mins, secs = parts[0], parts[1], parts[2]
		case 2:
			mins, secs = parts[0], parts[1]
		default:
			mins = parts[0]
		}
	}
	// Each part is at most 2^31 (timeNumbers), so the sum cannot overflow.
	total := ((days*24+hours)*60+mins)*60 + secs
	mins = (total + 59) / 60
	if mins > int64(maxSlurmTime/time.Minute) {
		return maxSlurmTime, true
	}
	return time.Duration(mins) * time.Minute, true
}

// timeNumbers splits "1:2:3" into its numbers, as sscanf's %d reads them: a number may be
// missing at the end ("1:" is 1), not in the middle.
func timeNumbers(s string) ([]int64, bool) {
	var out []int64
	for i, p := range strings.Split(s, ":") {
		if p == "" {
			if i == 0 {
				return nil, false
			}
			break
		}
		// validTimespec let only digits through. sscanf's %d of a number past an int is
		// undefined, and slurmctld 22.05.8 takes MaxTime=2147483648: such a number is cut
		// to 2^31, which keeps the sum below 2^63 and still means "longer than any window".
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n > 1<<31 {
			n = 1 << 31
		}
		out = append(out, n)
	}
	return out, len(out) > 0
}

// validTimespec is parse_time.c's _is_valid_timespec.
func validTimespec(s string) bool {
	digits, dashes, colons := 0, 0, 0
	inDigit := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if !inDigit {
				digits++
				inDigit = true
			}
		case c == '-':
			inDigit = false
			dashes++
			if colons > 0 {
				return false
			}
		case c == ':':
			inDigit = false
			colons++
		default:
			return false
		}
	}
	switch {
	case digits == 0 || dashes > 1 || colons > 2:
		return false
	case dashes > 0:
		return !(colons == 1 && digits < 3 || colons == 2 && digits < 4)
	}
	return !(colons == 1 && digits < 2 || colons == 2 && digits < 3)
}

// slurmTimeText writes a limit as Slurm prints one: "2-00:00:00", "12:00:00", "UNLIMITED".
func slurmTimeText(d time.Duration) string {
	if d == UnlimitedTime {
		return "UNLIMITED"
	}
	m := int64(d / time.Minute)
	days, hours, mins := m/1440, m/60%24, m%60
	if days > 0 {
		return strconv.FormatInt(days, 10) + "-" + pad2(hours) + ":" + pad2(mins) + ":00"
	}
	return pad2(hours) + ":" + pad2(mins) + ":00"
}

func pad2(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}
