package main

import (
	"flag"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/cmd/fleet-sweep/validation"
)

// validateOptions are the flags of a validation sweep (--validate LEVEL).
type validateOptions struct {
	levelName       string
	level           validation.Level
	budget          time.Duration // --validate-time: replaces the level's budget
	maxParallel     int
	reservation     bool   // each node's job in a MAINT reservation of its own
	returnToService bool   // the nodes are drained after a repair: resume each only after it passes
	publishExtra    bool   // write the level, time and figures into the node's Extra
	statePath       string // the validation state kept between sweeps; "" none
	slowFraction    float64
	slowFractionRaw string
	timeoutSet      bool // --timeout was given: it bounds the whole validation sweep
}

// defineValidateFlags declares the validation flags.
func defineValidateFlags(fs *flag.FlagSet, v *validateOptions) {
	fs.StringVar(&v.levelName, "validate", "", "run `nodecheck validate --level LEVEL --json` (quick, full, burn-in) as exclusive jobs on the idle nodes, instead of nodecheck run")
	fs.DurationVar(&v.budget, "validate-time", 0, "the level's time budget on a node, as nodecheck.toml's [validate.budget] (default quick 10m, full 45m, burn-in 4h); the job's limit is this plus a quarter, at least 2m more")
	fs.IntVar(&v.maxParallel, "max-parallel", 4, "with --validate: at most this many nodes validating at once")
	fs.BoolVar(&v.reservation, "maint-reservation", false, "with --validate: each node's job runs in a MAINT reservation of that node, created just before (it fails when a job holds the node) and always removed")
	fs.BoolVar(&v.returnToService, "return-to-service", false, "with --validate: the nodes are drained after a repair; each is resumed into a MAINT reservation, validated there, and left in service only when it passes (else drained with the failing figure)")
	fs.BoolVar(&v.publishExtra, "publish-extra", true, "with --validate: put the level, the time it passed and the figures in each passed node's Extra (Slurm 23.11+ with SchedulerParameters=extra_constraints; skipped otherwise, with a message)")
	fs.StringVar(&v.statePath, "validation-state", "", "with --validate: a JSON `file` that keeps each node's last validation between sweeps (the stalest go first) and the fleet's baselines")
	fs.StringVar(&v.slowFractionRaw, "slow-fraction", "10%", "with --validate: a passed node more than this `percentage` below its GPU model's fleet P50 on a figure is slow (SuperBench's rule)")
}

// checkValidateFlags validates the validation flags; a sweep without --validate may not give
// them.
func checkValidateFlags(o *options) error {
	v := &o.validate
	if v.levelName == "" {
		if v.budget != 0 || v.reservation || v.returnToService || v.statePath != "" {
			return usagef("--validate-time, --maint-reservation, --return-to-service and --validation-state need --validate LEVEL")
		}
		return nil
	}
	if v.budget < 0 {
		return usagef("--validate-time %s: want a positive duration", v.budget)
	}
	l, err := validation.LookupLevel(v.levelName, v.budget)
	if err != nil {
		return usagef("--validate: %v", err)
	}
	v.level = l
	if v.maxParallel < 1 {
		return usagef("--max-parallel %d: want at least 1", v.maxParallel)
	}
	if o.multinode.enabled {
		return usagef("--validate and --multinode: run them as two sweeps")
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v.slowFractionRaw), "%"), 64)
	if err != nil || f <= 0 || f >= 100 || math.IsNaN(f) {
		return usagef("--slow-fraction %q: want a percentage above 0 and below 100, such as 10%%", v.slowFractionRaw)
	}
	v.slowFraction = f / 100
	if v.returnToService {
		v.reservation = true // the node is resumed only into its own reservation
	}
	return nil
}
