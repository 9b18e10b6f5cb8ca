package dcgm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The two top keys of `dcgmi diag -j`: DCGM 4.x's (NVVS_NAME in nvvs/include/NvvsJsonStrings.h,
// testing/python3/dcgm_diag_schema.json) and DCGM 3.x's.
const (
	Diag4Key = "DCGM Diagnostic"
	Diag3Key = "DCGM GPU Diagnostic"
)

// The statuses a diagnostic result has (Diag::HelperDisplayDiagResult, dcgmi/Diag.cpp; NVVS's
// own JSON spells them in capitals).
const (
	DiagPass   = "Pass"
	DiagFail   = "Fail"
	DiagWarn   = "Warn"
	DiagSkip   = "Skip"
	DiagNotRun = "Not Run"
)

// DiagReport is `dcgmi diag -r N -j` of DCGM 3.x or 4.x.
type DiagReport struct {
	// Layout is the top key: Diag4Key or Diag3Key.
	Layout string
	// Version is DCGM's version and Driver the driver's, where the output says.
	Version, Driver string
	// RuntimeError is the diagnostic's own failure to run ("runtime_error"): no test result
	// then.
	RuntimeError string
	Tests        []DiagTest
	// Serials are the GPUs' serial numbers by DCGM GPU id, where the output lists them
	// (4.x entity_groups; 3.x "GPU Device Serials").
	Serials map[int]string
}

// DiagTest is one test (a plugin) of a category.
type DiagTest struct {
	Category string // "Deployment", "Hardware", "Integration", "Stress"
	Name     string // "Persistence Mode", "memory", "pcie", "software"
	// Summary is the test's overall status (4.x test_summary); "" where the output has none.
	Summary string
	// SummaryWarnings are test_summary's warnings: every warning of the test, 4.x.
	SummaryWarnings []DiagWarning
	Results         []DiagResult
}

// DiagResult is a test's result on one entity, or on the node where HasEntity is false.
type DiagResult struct {
	Group     string // "GPU" (3.x results are all GPUs)
	Entity    int
	HasEntity bool
	Status    string // normalised: DiagPass, DiagFail, DiagWarn, DiagSkip, DiagNotRun, or as printed
	Warnings  []DiagWarning
	Info      []string
}

// DiagWarning is one of DCGM's errors on a result: its message and failure code.
type DiagWarning struct {
	Message  string
	Code     int
	Category int
	// Severity is the output's error_severity; where the output has none it is the code's
	// severity from DCGM's table.
	Severity Severity
}

// Error is w's row of DCGM's table.
func (w DiagWarning) Error() ErrorInfo { e, _ := Lookup(w.Code); return e }

type diagJSON struct {
	Categories   []categoryJSON `json:"test_categories"`
	RuntimeError string         `json:"runtime_error"`
	Version      string         `json:"version"`
}

type categoryJSON struct {
	Category string     `json:"category"`
	Tests    []testJSON `json:"tests"`
}

type testJSON struct {
	Name    string       `json:"name"`
	Results []resultJSON `json:"results"`
	Summary *resultJSON  `json:"test_summary"`
}

type resultJSON struct {
	EntityGroup string          `json:"entity_group"`
	EntityID    *int            `json:"entity_id"`
	GPUID       json.RawMessage `json:"gpu_id"`  // 3.x: "0" per GPU, 0 on a Deployment error
	GPUIDs      string          `json:"gpu_ids"` // NVVS's own JSON: "0,1,2,3"
	Status      string          `json:"status"`
	Warnings    []warningJSON   `json:"warnings"`
	Info        json.RawMessage `json:"info"` // 4.x a list, 3.x a string
}

type warningJSON struct {
	Warning string `json:"warning"`
	// Warnings is the message under the key DCGM 3.x's Deployment tests use by mistake
	// (HelperJsonAddBasicTests: warningEntry[NVVS_WARNINGS] = msg).
	Warnings string `json:"warnings"`
	ErrorID  int    `json:"error_id"`
	Category int    `json:"error_category"`
	Severity *int   `json:"error_severity"`
}

type diagTop struct {
	Diag4    *diagJSON `json:"DCGM Diagnostic"`
	Diag3    *diagJSON `json:"DCGM GPU Diagnostic"`
	Metadata struct {
		Version string `json:"version"`
		Driver  string `json:"Driver Version Detected"`
	} `json:"metadata"`
	Version      string            `json:"version"`                 // 3.x
	Driver       string            `json:"Driver Version Detected"` // 3.x
	Serials3     map[string]string `json:"GPU Device Serials"`      // 3.x
	EntityGroups []struct {
		Group    string `json:"entity_group"`
		Entities []struct {
			ID     int    `json:"entity_id"`
			Serial string `json:"serial_num"`
		} `json:"entities"`
	} `json:"entity_groups"`
}

// ParseDiag reads `dcgmi diag -j`: DCGM 4.x's layout ("DCGM Diagnostic": test_categories,
// tests with per-entity results and a test_summary, warnings with error_id and
// error_severity; entity_groups; metadata) or DCGM 3.x's ("DCGM GPU Diagnostic": the
// Deployment tests with one result each, the other tests with a result per GPU by
// "gpu_id"). A runtime_error with no test is a report too, with RuntimeError set.
func ParseDiag(b []byte) (DiagReport, error) {
	js, err := jsonStart(b)
	if err != nil {
		return DiagReport{}, fmt.Errorf("dcgmi diag -j: %w", err)
	}
	var top diagTop
	dec := json.NewDecoder(bytes.NewReader(js))
	if err := dec.Decode(&top); err != nil {
		return DiagReport{}, fmt.Errorf("dcgmi diag -j: %w", err)
	}
	rep := DiagReport{Serials: map[int]string{}}
	d := top.Diag4
	switch {
	case top.Diag4 != nil:
		rep.Layout, rep.Version, rep.Driver = Diag4Key, top.Metadata.Version, top.Metadata.Driver
	case top.Diag3 != nil:
		d, rep.Layout, rep.Version, rep.Driver = top.Diag3, Diag3Key, top.Version, top.Driver
	default:
		return DiagReport{}, fmt.Errorf("dcgmi diag -j: neither %q (DCGM 4) nor %q (DCGM 3) in the output", Diag4Key, Diag3Key)
	}
	rep.RuntimeError = strings.TrimSpace(d.RuntimeError)
	if rep.Version == "" {
		rep.Version = d.Version
	}
	for _, g := range top.EntityGroups {
		if g.Group == GroupGPU {
			for _, e := range g.Entities {
				if e.Serial != "" {
					rep.Serials[e.ID] = e.Serial
				}
			}
		}
	}
	for k, v := range top.Serials3 {
		if id, err := strconv.Atoi(k); err == nil && v != "" {
			rep.Serials[id] = v
		}
	}
	for _, c := range d.Categories {
		for _, t := range c.Tests {
			test, err := convertTest(c.Category, t)
			if err != nil {
				return DiagReport{}, fmt.Errorf("dcgmi diag -j: %s/%s: %w", c.Category, t.Name, err)
			}
			rep.Tests = append(rep.Tests, test)
		}
	}
	if len(rep.Tests) == 0 && rep.RuntimeError == "" {
		return DiagReport{}, errors.New("dcgmi diag -j: no test result and no runtime_error")
	}
	return rep, nil
}

func convertTest(category string, t testJSON) (DiagTest, error) {
	test := DiagTest{Category: category, Name: t.Name}
	if t.Summary != nil {
		test.Summary = normalizeStatus(t.Summary.Status)
		test.SummaryWarnings = convertWarnings(t.Summary.Warnings)
	}
	for _, r := range t.Results {
		res, err := convertResult(r)
		if err != nil {
			return DiagTest{}, err
		}
		test.Results = append(test.Results, res)
	}
	return test, nil
}

func convertResult(r resultJSON) (DiagResult, error) {
	res := DiagResult{Status: normalizeStatus(r.Status), Warnings: convertWarnings(r.Warnings)}
	switch {
	case r.EntityID != nil:
		res.Group, res.Entity, res.HasEntity = r.EntityGroup, *r.EntityID, true
		if res.Group == "" {
			res.Group = GroupGPU
		}
	case len(r.GPUID) > 0 && string(r.GPUID) != "null":
		id, err := rawInt(r.GPUID)
		if err != nil {
			return DiagResult{}, fmt.Errorf("gpu_id %s: %w", r.GPUID, err)
		}
		res.Group, res.Entity, res.HasEntity = GroupGPU, id, true
	case r.GPUIDs != "" && !strings.Contains(r.GPUIDs, ","):
		id, err := strconv.Atoi(strings.TrimSpace(r.GPUIDs))
		if err != nil {
			return DiagResult{}, fmt.Errorf("gpu_ids %q: %w", r.GPUIDs, err)
		}
		res.Group, res.Entity, res.HasEntity = GroupGPU, id, true
	}
	if res.HasEntity && res.Entity < 0 {
		return DiagResult{}, fmt.Errorf("entity id %d is negative", res.Entity)
	}
	res.Info = rawStrings(r.Info)
	return res, nil
}

func convertWarnings(ws []warningJSON) []DiagWarning {
	var out []DiagWarning
	for _, w := range ws {
		msg := w.Warning
		if msg == "" {
			msg = w.Warnings
		}
		dw := DiagWarning{Message: strings.TrimSpace(msg), Code: w.ErrorID, Category: w.Category}
		if w.Severity != nil {
			dw.Severity = Severity(*w.Severity)
		} else {
			dw.Severity = dw.Error().Severity
		}
		out = append(out, dw)
	}
	return out
}

// rawInt reads a JSON number or a string holding one.
func rawInt(raw json.RawMessage) (int, error) {
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, errors.New("not a number")
	}
	return strconv.Atoi(strings.TrimSpace(s))
}

// rawStrings reads a JSON string or a list of strings; anything else is nothing.
func rawStrings(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil && s != "" {
		return []string{s}
	}
	return nil
}

// normalizeStatus spells a status as dcgmi does: "PASS" -> "Pass", "NOT RUN" -> "Not Run".
func normalizeStatus(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pass":
		return DiagPass
	case "fail":
		return DiagFail
	case "warn", "warning":
		return DiagWarn
	case "skip":
		return DiagSkip
	case "not run", "not_run":
		return DiagNotRun
	}
	return strings.TrimSpace(s)
}
