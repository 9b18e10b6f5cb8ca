package checks

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/nodecheck/nodecheck/config/text"
)

// The bits of an MCi_STATUS register that machine_checks reads (Intel SDM vol. 3B, 16.3.2.2
// "IA32_MCi_STATUS MSRs"; AMD's MCA_STATUS has the same bits 63..57, AMD APM vol. 2, 9.3).
const (
	mciStatusVal   = 1 << 63 // the register holds an error
	mciStatusOver  = 1 << 62 // an earlier error was lost
	mciStatusUC    = 1 << 61 // the error was not corrected
	mciStatusPCC   = 1 << 57 // processor context corrupt: the CPU cannot go on safely
	mciStatusDefer = 1 << 44 // AMD: deferred, an uncorrected error not yet consumed
)

// mceRecord is one machine check the kernel printed with its MCi_STATUS: the x86 core's
// "CPU 2: Machine Check Exception: 5 Bank 0: f200004000070005" (arch/x86/kernel/cpu/mce/
// core.c __print_mce; "Machine Check:" without "Exception" where MCG_STATUS.MCIP is clear,
// and "Exception" always on kernels before 4.x), Intel EDAC's "CPU 1: Machine Check Event: 0
// Bank 11: 8c00004f000800c2" (sb_edac), or AMD EDAC's "CPU:2 (15:2:0) MC2_STATUS[-|CE|...]:
// 0x98444000010c0176" (drivers/edac/mce_amd.c).
type mceRecord struct {
	CPU, Bank int
	Status    uint64
}

// uncorrected says the record's error was not corrected (MCi_STATUS.UC).
func (r mceRecord) uncorrected() bool { return r.Status&mciStatusUC != 0 }

// words is the status as an admin reads it: "uncorrected, processor context corrupt".
func (r mceRecord) words() string {
	w := []string{"corrected"}
	if r.uncorrected() {
		w[0] = "uncorrected"
	} else if r.Status&mciStatusDefer != 0 {
		w[0] = "deferred"
	}
	if r.Status&mciStatusPCC != 0 {
		w = append(w, "processor context corrupt")
	}
	if r.Status&mciStatusOver != 0 {
		w = append(w, "earlier errors lost (overflow)")
	}
	return strings.Join(w, ", ")
}

// mceKernelLog is what the kernel log since boot says of machine checks.
type mceKernelLog struct {
	Records []mceRecord
	// Logged counts "Machine check events logged" (mce_notify_irq, at most two a minute):
	// the kernel queued records for /dev/mcelog and the trace point. Since Linux 4.x the
	// kernel prints a record itself only where no decoder (EDAC, mcelog, the CEC) took it,
	// so such a notice may be all the log shows of an error.
	Logged int
	// Storms counts "CMCI storm detected": corrected errors so frequent that the kernel
	// stopped taking their interrupts and polls instead.
	Storms int
}

var (
	// mceCoreLine is the x86 core's record line and sb_edac's.
	mceCoreLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`CPU (\d+): Machine Check(?: Exception| Event)?: [0-9a-fA-F]+ Bank (\d+): ([0-9a-fA-F]{1,16})\b`)
	})
	// mceAMDLine is mce_amd's record line.
	mceAMDLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`CPU:(\d+) \([0-9a-fA-F]+:[0-9a-fA-F]+:[0-9a-fA-F]+\) MC(\d+)_STATUS\[[^\]]*\]: 0x([0-9a-fA-F]{1,16})\b`)
	})
)

// scanMCE reads the machine-check lines of a kernel log (dmesg's text, with or without
// timestamps).
func scanMCE(log string) mceKernelLog {
	var k mceKernelLog
	for l := range strings.Lines(log) {
		switch {
		case strings.Contains(l, "Machine check events logged"):
			k.Logged++
		case strings.Contains(l, "CMCI storm detected"):
			k.Storms++
		case strings.Contains(l, "Machine Check"):
			if r, ok := mceRecordOf(mceCoreLine().FindStringSubmatch(l)); ok {
				k.Records = append(k.Records, r)
			}
		case strings.Contains(l, "_STATUS["):
			if r, ok := mceRecordOf(mceAMDLine().FindStringSubmatch(l)); ok {
				k.Records = append(k.Records, r)
			}
		}
	}
	return k
}

// mceRecordOf is the record of a match of mceCoreLine or mceAMDLine (CPU, bank, status).
func mceRecordOf(m []string) (mceRecord, bool) {
	if m == nil {
		return mceRecord{}, false
	}
	cpu, err1 := strconv.Atoi(m[1])
	bank, err2 := strconv.Atoi(m[2])
	st, err3 := strconv.ParseUint(m[3], 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || st&mciStatusVal == 0 {
		return mceRecord{}, false
	}
	return mceRecord{CPU: cpu, Bank: bank, Status: st}, true
}

// mcelogDIMM is one memory location of `mcelog --client`: the daemon's error counts since
// it started (memdb.c dump_dimm: "SOCKET 1 CHANNEL 3 DIMM 0", then "corrected memory
// errors:" and "uncorrected memory errors:", each with "N total" and "N in 24h").
type mcelogDIMM struct {
	Name   string // "SOCKET 1 CHANNEL 3 DIMM 0"; CHANNEL and DIMM may be "any"
	CE, UC uint64 // total
}

// mcelogReport is what `mcelog --client` answered.
type mcelogReport struct {
	DIMMs []mcelogDIMM
	// NoDaemon is the client's complaint where no daemon answers ("client connect:
	// Connection refused"); "" where one did.
	NoDaemon string
}

// parseMcelogClient reads `mcelog --client`: the answer to "dump all bios" (memdb.c
// dump_memory_errors: "Memory errors", then the DIMMs) and to "pages" (page.c
// dump_page_errors: "Per page corrected memory statistics:", whose corrected errors the
// DIMMs count already). A daemon that is not running leaves only the client's own
// complaints on stderr (client.c ask_server: "mcelog: client connect: ..."). A line of
// neither is an error: an answer not understood is no judgement.
func parseMcelogClient(stdout, stderr string) (mcelogReport, error) {
	var rep mcelogReport
	for l := range strings.Lines(stderr) {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
		case strings.HasPrefix(l, "mcelog: client "):
			if rep.NoDaemon == "" {
				rep.NoDaemon = strings.TrimPrefix(l, "mcelog: ")
			}
		default:
			return rep, fmt.Errorf("mcelog --client: %q on stderr", text.OneLine(l, 120))
		}
	}
	var cur *mcelogDIMM
	var count *uint64
	pages := false
	for i, l := range strings.Split(stdout, "\n") {
		l = strings.TrimSpace(l)
		f := strings.Fields(l)
		switch {
		case l == "" || l == "Memory errors" || strings.HasPrefix(l, "DMI_NAME ") || strings.HasPrefix(l, "DMI_LOCATION "):
		case l == "permission denied":
			// server.c access_check: the daemon answers only its [server] client-user and
			// client-group (root by default).
			return rep, errors.New("mcelog's daemon refused the client (permission denied): it answers only its [server] client-user, root by default")
		case l == "Per page corrected memory statistics:":
			pages, cur = true, nil
		case pages:
			// "4a5e000: total 3 seen \"3 in 24h\" online": counted in its DIMM already.
		case strings.HasPrefix(l, "SOCKET "):
			rep.DIMMs = append(rep.DIMMs, mcelogDIMM{Name: l})
			cur, count = &rep.DIMMs[len(rep.DIMMs)-1], nil
		case cur != nil && l == "corrected memory errors:":
			count = &cur.CE
		case cur != nil && l == "uncorrected memory errors:":
			count = &cur.UC
		case count != nil && len(f) == 2 && f[1] == "total":
			n, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return rep, fmt.Errorf("mcelog --client line %d: %q: %w", i+1, l, err)
			}
			*count = n
		case count != nil && len(f) == 3 && f[1] == "in":
			// "9 in 24h": the leaky bucket's count, which the total includes.
		default:
			return rep, fmt.Errorf("mcelog --client line %d not understood: %q", i+1, text.OneLine(l, 120))
		}
	}
	return rep, nil
}
