package checks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/config"
)

// TestClockAheadRun: a health run with the clock five years ahead, then runs at the right
// time (NTP stepped the clock back in the same boot) with correctable ECC climbing
// 10,000,000 an hour, far over the fail rate: the first run back warns that the clock went
// back, the next fails on the rate; never a skip.
func TestClockAheadRun(t *testing.T) {
	dir := t.TempDir()
	f := historyFacts("")
	ecc := f.gpus.Devices[0].ECC.VolatileCorrected
	run := func(now time.Time, uptime string, count uint64) Result {
		t.Helper()
		*ecc = count
		f.files[uptimePath] = uptime + " 1.00\n"
		env := historyEnv(f, config.ModeHealth, dir)
		env.History.Now = now
		env.history = loadRunHistory(context.Background(), env, All())
		if env.history.Err != nil || !env.history.Saved {
			t.Fatalf("history step at %s: %+v", now, env.history.RunHistory)
		}
		return gpuErrorRates{}.Run(context.Background(), env)
	}
	ahead := historyNow.AddDate(5, 0, 0)
	run(ahead, "3600.00", 100)
	res := run(historyNow.Add(10*time.Minute), "4200.00", 200)
	if res.Status != StatusWarn || !strings.Contains(res.Summary, "after this run's time 2024-08-01T10:10:00Z: the system clock went back") {
		t.Errorf("first run back: %s %q; want a warning naming the clock", res.Status, res.Summary)
	}
	res = run(historyNow.Add(70*time.Minute), "7800.00", 10_000_200)
	if res.Status != StatusFail || !strings.Contains(res.Summary, "correctable ECC (volatile) +10000000 in 1h") {
		t.Errorf("an hour later: %s %q; want the rate to fail", res.Status, res.Summary)
	}
}
