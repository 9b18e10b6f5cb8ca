package checks

import (
	"context"
	"errors"
	"fmt"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/text"
)

// What the per-GPU signal checks (gpu_clocks, gpu_thermal, gpu_power_limit,
// gpu_persistence, gpu_recovery_action) share: gathering the one NVML fact they judge, and
// making one result of one verdict per GPU.

// gpuSignal is one per-GPU signal check's way of judging: what it reads, and its judge of
// one GPU whose reading has its fact (g.Error is handled before).
type gpuSignal struct {
	fact node.GPUFields // the fact judged
	what string         // "clock event reasons", for messages
	// judge gives the verdict on one GPU; Device is filled in by the caller.
	judge func(g node.GPU) Detail
	// ok is the summary when every GPU judged is ok (n GPUs).
	ok func(n int) string
}

// runGPUSignal gathers the NVML inventory and judges each GPU with s. NVML unavailable
// is handled as every GPU check does (nvmlGPUs); a reading that did not take the fact (a
// snapshot recorded before nodecheck read it) is a skip that says so, never an ok.
func runGPUSignal(ctx context.Context, env *Env, s gpuSignal) Result {
	inv, res, ok := nvmlGPUs(ctx, env, s.what)
	if !ok {
		return res
	}
	if !gpuFactsRead(inv, s.fact) {
		return Result{Status: StatusSkip, Observed: "not recorded",
			Summary: fmt.Sprintf("the NVML reading has no %s (a snapshot recorded before nodecheck read this): not judged", s.what)}
	}
	return judgeGPUSignal(inv.Devices, s)
}

// judgeGPUSignal judges every GPU with s: a GPU NVML lost is an error for it.
func judgeGPUSignal(gpus []node.GPU, s gpuSignal) Result {
	var details []Detail
	for _, g := range gpus {
		label := gpuLabel(g.Index, sysfsBusID(g.PCIBusID))
		var d Detail
		if g.Error != "" {
			d = Detail{Status: StatusError, Observed: g.Error, Expected: "usable in NVML",
				Message: "NVML: " + g.Error + ": " + s.what + " not read"}
		} else {
			d = s.judge(g)
		}
		d.Device, d.Subject = label, gpuSubject(g, "")
		details = append(details, d)
	}
	return perGPUResult(details, s)
}

// perGPUResult makes one result of one detail per GPU: the worst status wins, but a GPU
// judged ok outranks GPUs skipped (the result is skip only when every GPU was); the summary
// names the first GPU of that status and counts the others.
func perGPUResult(details []Detail, s gpuSignal) Result {
	res := Result{Status: StatusSkip, Details: details}
	judged := 0
	var worst []Detail
	for _, d := range details {
		if d.Status != StatusSkip {
			judged++
		}
		switch {
		case d.Status == StatusOK || d.Status == StatusSkip:
		case len(worst) == 0 || d.Status.Worse(worst[0].Status):
			worst = []Detail{d}
		case d.Status == worst[0].Status:
			worst = append(worst, d)
		}
	}
	switch {
	case len(worst) > 0:
		res.Status = worst[0].Status
		res.Summary = worst[0].Device + ": " + worst[0].Message + moreSuffix(len(worst)-1)
		res.Subject = worst[0].Subject
		res.Observed, res.Expected = worst[0].Observed, worst[0].Expected
		if res.Status == StatusError {
			res.Err = errors.New(res.Summary)
		}
	case judged > 0:
		res.Status = StatusOK
		res.Summary = s.ok(judged)
		if skipped := len(details) - judged; skipped > 0 {
			res.Summary += fmt.Sprintf(" (%d not judged: %s)", skipped, firstSkip(details))
		}
	case len(details) > 0:
		res.Summary = details[0].Device + ": " + details[0].Message + moreSuffix(len(details)-1)
		res.Subject = details[0].Subject
	default:
		res.Summary = "NVML lists no GPU"
	}
	res.Summary = text.OneLine(res.Summary, 200)
	return res
}

// firstSkip is the message of the first skipped detail.
func firstSkip(details []Detail) string {
	for _, d := range details {
		if d.Status == StatusSkip {
			return d.Message
		}
	}
	return ""
}

// missingFact is the verdict on a GPU whose reading lacks the fact: an error where its
// model always reports it (gpuTraits.sensors: NVML was asked and did not answer, so the GPU
// was not looked at), else a skip.
func missingFact(g node.GPU, what string) Detail {
	tr, model := traitsOf(g.Name)
	if tr.sensors {
		return Detail{Status: StatusError, Expected: "reported",
			Message: fmt.Sprintf("%s not reported by NVML (%s GPUs report them): not judged", what, model)}
	}
	return Detail{Status: StatusSkip, Message: fmt.Sprintf("no %s reported (%s)", what, orUnknownName(g.Name))}
}
