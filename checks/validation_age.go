package checks

import (
	"context"
	"fmt"
	"time"

	"github.com/nodecheck/nodecheck/checks/history"
	"github.com/nodecheck/nodecheck/config"
)

const idValidationAge = "validation_age"

// validationAge warns when the node's last passing validation (`nodecheck validate`, kept in
// its history) is older than [validate] expiry: the node may have turned slow under load
// since, which no passive check sees. It never fails: an expired validation is a reason to
// validate again, not to drain. Without an expiry it skips.
type validationAge struct{}

func (validationAge) ID() string { return idValidationAge }

func (validationAge) Description() string {
	return "the node's last passing validation (nodecheck validate) is younger than [validate] expiry (older warns)"
}

// observes: the history alone; nothing more is gathered for this check.
func (validationAge) observes() observed { return observed{} }

// judgementRemedy: the check never fails.
func (validationAge) judgementRemedy(history.Judgement) Remedy { return "" }

// validationAgeConfig is [checks.validation_age]: the common keys only; the expiry is
// [validate] expiry, beside validation's other settings.
type validationAgeConfig struct {
	config.CheckCommon
}

func (validationAge) Section() config.Section {
	return &validationAgeConfig{config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}}}
}

func (validationAge) Run(_ context.Context, env *Env) Result {
	expiry := env.Config.Validation.Expiry
	if expiry <= 0 {
		return Result{Status: StatusSkip, Summary: "validation does not expire here ([validate] expiry is not set)"}
	}
	h, res, ok := env.history.usable("validation age")
	if !ok {
		return res
	}
	pass, hasPass := h.LastPassed()
	last, _ := h.Last()
	return judgeValidationAge(pass, hasPass, last, env.history.now, expiry)
}

// judgeValidationAge judges the last passing validation's age against expiry at now, and
// notes a validation that did not pass since.
func judgeValidationAge(pass history.Validation, hasPass bool, last history.Validation, now time.Time, expiry time.Duration) Result {
	res := Result{Expected: "a passing validation within " + ageText(expiry)}
	failedSince := ""
	if last.Verdict != "" && last.Verdict != history.ValidationPassed && (!hasPass || last.Started > pass.Started) {
		failedSince = fmt.Sprintf("; the last validation, %s, did not pass", last)
	}
	if !hasPass {
		res.Status, res.Observed = StatusWarn, "none"
		res.Summary = "not validated: no passing validation in the node's history (run nodecheck validate --level quick)" + failedSince
		return res
	}
	started := time.Unix(pass.Started, 0).UTC()
	age := now.Sub(started)
	res.Observed = ageText(max(age, 0))
	if age > expiry {
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("not validated since %s (%s passed %s ago; [validate] expiry %s)%s", started.Format(time.RFC3339), pass.Level, ageText(age), ageText(expiry), failedSince)
		return res
	}
	res.Status = StatusOK
	res.Summary = fmt.Sprintf("validated %s ago (%s passed %s)%s", ageText(max(age, 0)), pass.Level, started.Format(time.RFC3339), failedSince)
	if failedSince != "" {
		res.Status = StatusWarn
	}
	return res
}

// Faults: validation_age never fails (it warns), so it has no row of the remedy table.
func (validationAge) Faults() Faults { return Faults{} }

// Explain is what `nodecheck explain validation_age` says.
func (validationAge) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"The node's history (history/<node>.json in the state directory): the validations nodecheck validate recorded, their level, time and verdict.",
			"[validate] expiry in nodecheck.toml.",
		},
		Passes: "The last passing validation is no older than [validate] expiry, and none failed since.",
		Warns:  "No validation ever passed, the last one that did is older than the expiry (\"not validated since ...\"), or one failed or was undecided after it.",
		Fails:  "Never: an expired validation calls for validating again, not for draining.",
		Skips:  "[validate] expiry is not set (validations never expire); no history is kept (no state directory), or the run has no boot id.",
		Errors: "The node's history is configured but cannot be read.",
		Fix: []string{
			"Validate the node: nodecheck validate --level quick (docs/validation.md), or let the fleet sweep do it as an exclusive job.",
			"nodecheck history shows the recorded validations.",
		},
	}
}

// ageText writes an age as admins read a validation's: whole days from two days on ("7d"),
// else as history.Human ("36h", "5m").
func ageText(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return history.Human(d)
}
