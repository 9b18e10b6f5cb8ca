package drain

import (
	"fmt"
	"strings"

	"github.com/nodecheck/nodecheck/config"
)

// PolicyFrom reads a Policy from a node's effective nodecheck.toml: [drain] and
// error_is_failure; the run sets State, the state directory it opened. It fails only on a max_drained that config.Validate would have refused (a
// config built in code may not have been validated): a limit that cannot be read must not
// be ignored.
func PolicyFrom(cfg *config.Config) (Policy, error) {
	n, percent, err := config.ParseMaxDrained(cfg.Drain.MaxDrained)
	if err != nil {
		return Policy{}, fmt.Errorf("max_drained: %w", err)
	}
	repairPasses := 0
	if cfg.Repair.Enabled {
		repairPasses = cfg.Repair.PassesToResume
	}
	return Policy{
		RepairPasses:      repairPasses,
		Prefix:            cfg.Drain.ReasonPrefix,
		ResumeAfterPasses: cfg.Drain.ResumeAfterPasses,
		MaxDrained:        Limit{N: n, Percent: percent},
		ErrorIsFailure:    cfg.ErrorIsFailure,
	}, nil
}

// ClientFrom returns the Client for cfg's scontrol and sinfo (and [repair]'s squeue), pointed
// at slurmConf ("" leaves SLURM_CONF unset).
func ClientFrom(cfg *config.Config, slurmConf string) *Client {
	return New(cfg.Drain.Scontrol, cfg.Drain.Sinfo, WithSlurmConf(slurmConf), WithSqueue(cfg.Repair.Squeue))
}

// Flags are what the command line asks a run to do to the live node: --drain, --resume and
// --repair.
type Flags struct {
	Drain  bool
	Resume bool
	Repair bool
}

// CheckFlags refuses flag combinations that cannot mean what the user wants, before any check
// runs, by one rule for all three: a replay acts on the live Slurm only for a node named on
// the command line (--node), whatever it is told to do; --resume is for health and manual
// runs, which count clean runs; --repair is for health runs, the only ones that repair.
func CheckFlags(mode config.Mode, f Flags, replay, nodeNamed bool) error {
	if replay && !nodeNamed {
		var named []string
		for _, fl := range []struct {
			on   bool
			name string
		}{{f.Drain, "--drain"}, {f.Resume, "--resume"}, {f.Repair, "--repair"}} {
			if fl.on {
				named = append(named, fl.name)
			}
		}
		if len(named) > 0 {
			return fmt.Errorf("%s with --snapshot need --node: a replay acts on the live Slurm only for a node named on the command line", strings.Join(named, " and "))
		}
	}
	if f.Resume && !mode.CountsCleanRuns() {
		return fmt.Errorf("--resume: %s runs never resume a node; health and manual runs do", mode)
	}
	if f.Repair && !mode.Repairs() {
		return fmt.Errorf("--repair: %s runs never repair a node; health runs do (add --mode health)", mode)
	}
	return nil
}

// Permissions says what a run may do to its node in Slurm. Hooks act as [drain] says: prolog
// and epilog drain, the health check drains and resumes. Manual runs only report, unless
// told --drain or --resume. A snapshot replay acts only when told, whatever its mode: it
// describes another node, and must not drain the live one by accident.
func Permissions(d config.DrainConfig, mode config.Mode, f Flags, replay bool) (mayDrain, mayResume bool) {
	if replay || mode == config.ModeManual {
		return f.Drain, f.Resume
	}
	switch mode {
	case config.ModeHealth:
		return d.Enabled || f.Drain, d.Enabled && d.Resume || f.Resume
	default: // prolog, epilog
		return d.Enabled || f.Drain, false
	}
}

// HookExit is the exit rule after drain acted. code is the exit code of the run's verdict (0
// healthy). It returns the code to exit with and, when the rule changed it or Slurm will act
// on it, a note for the log:
//
//   - a prolog or epilog whose drain max_drained held back (or stepped back) exits 0: a
//     non-zero exit would make Slurm drain the node after all ("Prolog error"), and the limit
//     would protect nothing;
//   - a prolog or epilog that exits non-zero without nodecheck's drain in place (unreachable,
//     locked, skipped, ...) lets Slurm drain the node itself, which the note says;
//   - otherwise code as given. The health check's exit status is only logged by slurmd.
func HookExit(mode config.Mode, code int, a Action) (int, string) {
	if !mode.JobHook() {
		return code, ""
	}
	switch {
	case a == ActionHeld:
		return 0, fmt.Sprintf("the %s exits 0 so that Slurm does not drain the node either", mode)
	case code != 0 && a != ActionDrained && a != ActionKept:
		return code, "exiting non-zero, so Slurm drains the node itself"
	}
	return code, ""
}
