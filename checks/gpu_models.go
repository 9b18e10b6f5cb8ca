package checks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/text"
)

const idGPUModels = "gpu_models"

// The ways gpu_models fails: its rows of the remedy table (Faults).
const (
	faultModelMismatch fault = "gpu_models/mismatch"
)

// gpuModels checks that a node's GPUs are all one model (NVML device names), and that the
// slurm.conf Feature= tokens and Gres types of the node that name a GPU model (h100, a100,
// ...) name the model the GPUs are. Model tokens come from the NVML names through a table of
// rules (builtinGPUModels, with [checks.gpu_models] models tried first). A feature or Gres
// type that names no known model (ndr, ib, tesla) is not judged.
type gpuModels struct{}

func (gpuModels) ID() string { return idGPUModels }

func (gpuModels) Description() string {
	return "the node's GPUs are one model, and slurm.conf Feature= and Gres types that name a GPU model name that one"
}

// GPUFields implements gpuFactsUser: each GPU's model and bus id.
func (gpuModels) GPUFields() node.GPUFields {
	return node.GPUName | node.GPUPCIBusID
}

// gpuModelsConfig is [checks.gpu_models].
type gpuModelsConfig struct {
	config.CheckCommon
	// Models adds rules to the built-in table that names a GPU model token after the NVML
	// device name, each "words=token": "h100=h100", "rtx 4090=rtx4090". A rule matches a
	// name when its words appear one after another among the name's words (see
	// modelWords); the rules given here are tried before the built-in ones, in order.
	Models []string `toml:"models"`
}

func (gpuModels) Section() config.Section {
	return &gpuModelsConfig{CheckCommon: config.CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: config.ModeNames()}}
}

// ValidateSection implements config.SectionValidator.
func (gm *gpuModelsConfig) ValidateSection() []config.Problem {
	var errs []config.Problem
	for _, r := range gm.Models {
		if _, _, err := parseGPUModelRule(r); err != nil {
			errs = append(errs, config.Problem{Key: "models", Msg: ": " + err.Error()})
		}
	}
	return errs
}

// parseGPUModelRule reads one gpu_models rule, "words=token": "rtx 4090=rtx4090" gives the
// words rtx 4090 and the token rtx4090. The token is what slurm.conf Feature= and Gres types
// call the model: lower-case letters, digits, '.' and '_'.
func parseGPUModelRule(s string) (words []string, token string, err error) {
	pat, tok, ok := strings.Cut(s, "=")
	if !ok {
		return nil, "", fmt.Errorf("%q is not a rule: write words of the NVML name, '=' and the model token, such as \"h100=h100\" or \"rtx 4090=rtx4090\"", s)
	}
	words = modelWords(pat)
	if len(words) == 0 {
		return nil, "", fmt.Errorf("%q names no words of an NVML name before '='", s)
	}
	token = strings.TrimSpace(tok)
	if token == "" || strings.ToLower(token) != token || strings.ContainsFunc(token, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '.' && r != '_'
	}) {
		return nil, "", fmt.Errorf("%q: the token %q must be lower-case letters, digits, '.' and '_', as a slurm.conf feature (\"h100\")", s, token)
	}
	return words, token, nil
}

// builtinGPUModels is the built-in table from NVML device names to model tokens, in
// parseGPUModelRule's syntax. A rule's words must appear one after another among the
// name's words, so a10 matches "NVIDIA A10" but not "NVIDIA A100-SXM4-80GB", and l40 does not
// match "NVIDIA L40S". The first rule that matches wins. NVML names as the drivers write
// them: "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-80GB",
// "NVIDIA GeForce RTX 4090", "NVIDIA A10", "Tesla V100-SXM2-32GB", "NVIDIA TITAN V".
var builtinGPUModels = []string{
	"gb300=gb300", "gb200=gb200", "b300=b300", "b200=b200", "b100=b100",
	"gh200=gh200", "h200=h200", "h100=h100", "h800=h800", "h20=h20",
	"a100=a100", "a800=a800", "a40=a40", "a30=a30", "a16=a16", "a10g=a10g", "a10=a10", "a2=a2",
	"l40s=l40s", "l40=l40", "l20=l20", "l4=l4",
	"v100=v100", "t4=t4", "p100=p100",
	"rtx 6000 ada=rtx6000ada", "rtx a6000=rtxa6000", "rtx a5000=rtxa5000", "rtx a4000=rtxa4000",
	"rtx 5090=rtx5090", "rtx 4090=rtx4090", "rtx 3090=rtx3090", "titan v=titanv",
}

// gpuModelRule is one parsed rule of the model table.
type gpuModelRule struct {
	words []string
	token string
}

// gpuModelTable is the rules of [checks.gpu_models] models, then the built-in ones.
type gpuModelTable []gpuModelRule

func newGPUModelTable(extra []string) (gpuModelTable, error) {
	var t gpuModelTable
	for _, s := range append(slices.Clip(extra), builtinGPUModels...) {
		w, tok, err := parseGPUModelRule(s)
		if err != nil {
			return nil, fmt.Errorf("models: %w", err)
		}
		t = append(t, gpuModelRule{w, tok})
	}
	return t, nil
}

// modelOf is the token of the first rule whose words appear in a row among name's words;
// "" when none does.
func (t gpuModelTable) modelOf(name string) string {
	words := modelWords(name)
	for _, r := range t {
		if containsWords(words, r.words) {
			return r.token
		}
	}
	return ""
}

// named is the model a slurm.conf feature or Gres type names: the token itself ("h100",
// "rtx4090"), or a name the rules read ("nvidia_h100_80gb_hbm3", as AutoDetect writes Gres
// types, "a100_3g.20gb" for a MIG type); "" when it names no known model ("ndr").
func (t gpuModelTable) named(s string) string {
	ls := strings.ToLower(strings.TrimSpace(s))
	for _, r := range t {
		if r.token == ls {
			return r.token
		}
	}
	return t.modelOf(s)
}

// modelClaim is one slurm.conf setting that names a GPU model.
type modelClaim struct {
	what  string // "Feature=h100", "Gres=gpu:h100:8"
	token string
}

// gpuGroup is the GPUs of one NVML name.
type gpuGroup struct {
	name    string
	token   string // "" when the table does not know the name
	indices []int
}

func (g gpuGroup) label() string {
	s := g.name
	if g.token != "" {
		s += " (" + g.token + ")"
	}
	return s
}

func (g gpuGroup) gpus() string {
	idx := make([]string, len(g.indices))
	for i, n := range g.indices {
		idx[i] = strconv.Itoa(n)
	}
	if len(idx) == 1 {
		return "gpu " + idx[0]
	}
	return "gpus " + listSome(idx, 8)
}

func (gpuModels) Run(ctx context.Context, env *Env) Result {
	table, err := newGPUModelTable(settings[*gpuModelsConfig](env.Config, idGPUModels).Models)
	if err != nil {
		return Result{Status: StatusError, Summary: err.Error(), Err: err}
	}
	inv, err := env.Facts.GPUs(ctx)
	if err != nil {
		return factsError(ctx, "query NVML", err)
	}
	claims, confErr := modelClaims(ctx, env, table)
	if ctx.Err() != nil {
		return Result{Status: StatusFail, Summary: "timed out reading slurm.conf", Err: ctx.Err(), Remedy: remedyOf(faultSlurmTimeout)}
	}
	return judgeGPUModels(env.Node, inv, claims, confErr, table)
}

// judgeGPUModels judges NVML's GPUs against the models slurm.conf claims for the node
// (claims; confErr where slurm.conf could not be read), and against each other.
func judgeGPUModels(nodeName string, inv node.GPUInventory, claims []modelClaim, confErr error, table gpuModelTable) Result {
	var res Result
	if len(claims) > 0 {
		res.Expected = claimsText(claims)
	}
	if inv.Init != node.InitSuccess {
		init := inv.Init
		if init == "" {
			init = "no result"
		}
		res.Observed = "NVML " + init
		return modelsUnknown(res, nodeName, "NVML "+init, "NVML "+init, claims, confErr)
	}
	groups, unread := groupGPUsByName(inv.Devices, table)
	obs := make([]string, len(groups))
	for i, g := range groups {
		obs[i] = strconv.Itoa(len(g.indices)) + "x " + g.label()
	}
	res.Observed = strings.Join(obs, ", ")
	if len(groups) == 0 && len(unread) == 0 {
		return modelsUnknown(res, nodeName, "NVML names no GPU", "no GPU in NVML", claims, confErr)
	}
	fails, details := judgeClaims(claims, groups)
	res.Details = append(details, unread...)
	var mixed string
	if len(groups) > 1 {
		parts := make([]string, len(groups))
		for i, g := range groups {
			parts[i] = g.label() + " on " + g.gpus()
		}
		mixed = "mixed GPU models: " + strings.Join(parts, "; ")
		res.Details = append(res.Details, Detail{Device: "node", Status: StatusWarn, Message: mixed,
			Observed: strconv.Itoa(len(groups)) + " models", Expected: "1 model"})
	}
	switch {
	case len(fails) > 0:
		res.Status, res.Remedy = StatusFail, remedyOf(faultModelMismatch)
		res.Summary = fails[0] + moreSuffix(len(fails)-1)
	case confErr != nil:
		res.Status, res.Err = StatusError, confErr
		res.Summary = fmt.Sprintf("cannot tell the GPU models slurm.conf gives %s (%v); NVML: %s", nodeName, confErr, res.Observed)
	case len(unread) > 0:
		res.Status = StatusError
		res.Summary = unread[0].Device + ": " + strings.TrimPrefix(unread[0].Message, "NVML: ") + moreSuffix(len(unread)-1)
		res.Subject = unread[0].Subject
		res.Err = errors.New(res.Summary)
	case mixed != "":
		res.Status = StatusWarn
		res.Summary = mixed
	case len(claims) > 0:
		res.Status = StatusOK
		res.Summary = fmt.Sprintf("%s, as slurm.conf %s says", res.Observed, claimsText(claims))
	default:
		res.Status = StatusOK
		res.Summary = fmt.Sprintf("%s; slurm.conf names no GPU model for %s", res.Observed, nodeName)
	}
	return res
}

// modelsUnknown is the result where NVML names no GPU (why says so, and skipWhy in a skip):
// an error where slurm.conf claims a model or could not be read, a skip where it claims none.
func modelsUnknown(res Result, nodeName, why, skipWhy string, claims []modelClaim, confErr error) Result {
	switch {
	case len(claims) > 0:
		res.Status = StatusError
		res.Err = errors.New(why)
		res.Summary = fmt.Sprintf("cannot check %s: %s", claimsText(claims), why)
	case confErr != nil:
		res.Status, res.Err = StatusError, confErr
		res.Summary = fmt.Sprintf("cannot tell the GPU models slurm.conf gives %s (%v); %s", nodeName, confErr, why)
	default:
		res.Status = StatusSkip
		res.Summary = fmt.Sprintf("%s and slurm.conf names no GPU model for %s", skipWhy, nodeName)
	}
	return res
}

// groupGPUsByName groups the GPUs by NVML name, in index order of their first GPU. A GPU
// NVML lost, or gave no name, is not in a group: its model is unknown, which is an error
// detail (gpu_count fails the node for a lost GPU).
func groupGPUsByName(devices []node.GPU, table gpuModelTable) (groups []gpuGroup, unread []Detail) {
	for _, g := range devices {
		label := gpuLabel(g.Index, sysfsBusID(g.PCIBusID))
		switch {
		case g.Error != "":
			unread = append(unread, Detail{Device: label, Status: StatusError, Message: "NVML: " + g.Error + ": its model not read",
				Observed: g.Error, Expected: "usable in NVML", Subject: gpuSubject(g, "")})
			continue
		case g.Name == "":
			unread = append(unread, Detail{Device: label, Status: StatusError, Message: "NVML gave no name: its model not read", Expected: "an NVML name",
				Subject: gpuSubject(g, "")})
			continue
		}
		i := slices.IndexFunc(groups, func(gr gpuGroup) bool { return gr.name == g.Name })
		if i < 0 {
			groups = append(groups, gpuGroup{name: g.Name, token: table.modelOf(g.Name)})
			i = len(groups) - 1
		}
		groups[i].indices = append(groups[i].indices, g.Index)
	}
	return groups, unread
}

// judgeClaims checks slurm.conf's claims: every GPU must be the model each claim names. It
// returns a line per claim some GPUs break, and a detail per claim and model.
func judgeClaims(claims []modelClaim, groups []gpuGroup) (fails []string, details []Detail) {
	for _, c := range claims {
		var wrong []gpuGroup
		for _, g := range groups {
			if g.token == c.token {
				details = append(details, Detail{Device: g.gpus(), Status: StatusOK,
					Message: g.name + " is " + c.token + " as " + c.what + " says", Observed: g.token, Expected: c.token})
				continue
			}
			got := g.token
			if got == "" {
				got = "unknown model"
			}
			wrong = append(wrong, g)
			details = append(details, Detail{Device: g.gpus(), Status: StatusFail, Remedy: remedyOf(faultModelMismatch),
				Message: fmt.Sprintf("%s but %s %s %s", c.what, g.gpus(), text.Plural(len(g.indices), "is", "are"), g.label()), Observed: got, Expected: c.token})
		}
		switch {
		case len(wrong) == 0:
		case len(wrong) == len(groups) && len(groups) == 1:
			fails = append(fails, fmt.Sprintf("%s but the GPUs are %s", c.what, wrong[0].label()))
		default: // name which GPUs are wrong
			parts := make([]string, len(wrong))
			for i, g := range wrong {
				parts[i] = g.gpus() + " " + text.Plural(len(g.indices), "is", "are") + " " + g.label()
			}
			fails = append(fails, c.what+" but "+strings.Join(parts, ", "))
		}
	}
	return fails, details
}

// modelClaims lists this node's slurm.conf Feature= tokens and gpu Gres types that name a
// GPU model, features first, each once.
func modelClaims(ctx context.Context, env *Env, table gpuModelTable) ([]modelClaim, error) {
	conf, err := env.Slurm.Conf(ctx)
	if err != nil {
		return nil, err
	}
	nl, ok := conf.Node(env.Node)
	if !ok {
		return nil, fmt.Errorf("node %s is not defined in %s", env.Node, conf.Path)
	}
	var out []modelClaim
	add := func(c modelClaim) {
		if c.token != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, f := range nl.Features {
		add(modelClaim{what: "Feature=" + f, token: table.named(f)})
	}
	for _, g := range nl.Gres {
		if strings.EqualFold(g.Name, "gpu") && g.Type != "" {
			add(modelClaim{what: "Gres=" + g.String(), token: table.named(g.Type)})
		}
	}
	return out, nil
}

func claimsText(claims []modelClaim) string {
	parts := make([]string, len(claims))
	for i, c := range claims {
		parts[i] = c.what
	}
	return strings.Join(parts, ", ")
}

// Faults declares the check's own rows of the remedy table, and the shared faults it
// gives (remedy.go).
func (gpuModels) Faults() Faults {
	return Faults{
		shared: []fault{faultSlurmTimeout},
		own: []remedyRow{
			{faultModelMismatch, "the GPUs are not the model slurm.conf's Feature= or Gres type says", RemedyAdmin,
				"Feature= and Gres types are configuration: correct the NodeName line, or fit the board it names"},
		},
	}
}

// Explain is what `nodecheck explain gpu_models` says.
func (gpuModels) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"NVML: each GPU's index and device name (\"NVIDIA H100 80GB HBM3\").",
			"slurm.conf: the Feature= tokens and the gpu Gres types of this node's NodeName line.",
		},
		Passes: "Every GPU NVML names has the same name, and each Feature= token or Gres type that names a GPU model (h100, a100, l40s, rtx4090, ...) names the model of every GPU. A feature or type that names no known model (ndr, ib, tesla) is not judged. Model tokens come from the NVML names through a table of rules \"words=token\": the rule's words must appear one after another among the name's words (split at blanks, '-', '_' and '/'), so a10 matches \"NVIDIA A10\" but not \"NVIDIA A100-SXM4-80GB\". The built-in table covers gb200, b200, b100, gh200, h200, h100, h800, h20, a100, a800, a40, a30, a16, a10g, a10, a2, l40s, l40, l20, l4, v100, t4, p100, rtx6000ada (\"rtx 6000 ada\"), rtxa6000, rtxa5000, rtxa4000, rtx5090, rtx4090, rtx3090 and titanv (\"titan v\"); a Gres type as AutoDetect writes it (nvidia_h100_80gb_hbm3) or a MIG type (a100_3g.20gb) is read with the same rules.",
		Warns:  "The GPUs are of more than one model (NVML names differ): mixed generations on one node trouble the driver, Fabric Manager and NCCL. The warning names each model and its GPU indices.",
		Fails:  "A Feature= token or Gres type names a GPU model that some or all GPUs are not (Feature=h100 on a node with A100s): jobs that asked for that model get other GPUs. The summary names the token, the GPUs and their model.",
		Skips:  "NVML is unavailable, or lists no GPU, and slurm.conf names no GPU model for this node.",
		Errors: "slurm.conf names a GPU model but NVML is unavailable (\"cannot check Feature=h100: NVML ERROR_LIBRARY_NOT_FOUND\") or names no GPU; NVML lost a GPU or gave it no name, so that its model cannot be told; slurm.conf cannot be read or does not define the node; or a models rule is invalid.",
		Keys: map[string]string{
			"models": "Extra rules \"words=token\", tried before the built-in table, in order: [\"h100 nvl=h100nvl\", \"rtx 4000 ada=rtx4000ada\"]. The token is the word your slurm.conf uses for the model as a Feature or Gres type.",
		},
		Fix: []string{
			"nvidia-smi -L: which GPUs does the node carry?",
			"If slurm.conf is wrong (a NodeName range that takes in nodes of another model, a stale Feature=), fix it and run scontrol reconfigure.",
			"If the hardware is wrong (a board swapped for another model), replace it, or move the node to the right NodeName line and features.",
			"If the token is right but the built-in table reads the name differently, add a models rule.",
		},
	}
}
