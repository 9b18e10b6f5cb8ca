package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// dashboardQuery is one PromQL expression of the dashboard, and where it is.
type dashboardQuery struct {
	where string // "panel 3 \"Drains by check and remedy\" target A", "variable node"
	expr  string // with Grafana's variables replaced (grafanaVars)
}

// grafanaVars are the dashboard variables and Grafana's built-in ones, with values that make
// the expressions plain PromQL.
var grafanaVars = strings.NewReplacer("${node}", "n1", "$node", "n1", "$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h")

// labelValues is a variable's query: Grafana's label_values(METRIC, LABEL).
var labelValues = regexp.MustCompile(`^label_values\(\s*([^,]+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// dashboardQueries reads every expression of the dashboard: each panel's targets (rows'
// nested panels included) and each query variable's metric. Problems are a dashboard that
// does not parse, a panel other than a row or text without a target, duplicate panel ids and
// titles, and a variable query that is not label_values.
func dashboardQueries(data []byte) ([]dashboardQuery, []string) {
	var d struct {
		Panels     []dashPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, []string{fmt.Sprintf("%s: %v", DashboardFile, err)}
	}
	var qs []dashboardQuery
	var problems []string
	ids, titles := map[int]bool{}, map[string]bool{}
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			if ids[p.ID] || titles[p.Title] {
				problems = append(problems, fmt.Sprintf("panel %d %q: id or title used twice", p.ID, p.Title))
			}
			ids[p.ID], titles[p.Title] = true, true
			walk(p.Panels)
			if p.Type == "row" || p.Type == "text" {
				continue
			}
			if len(p.Targets) == 0 {
				problems = append(problems, fmt.Sprintf("panel %d %q: no query", p.ID, p.Title))
			}
			for _, tg := range p.Targets {
				where := fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID)
				if strings.TrimSpace(tg.Expr) == "" {
					problems = append(problems, where+": empty expr")
					continue
				}
				qs = append(qs, dashboardQuery{where, grafanaVars.Replace(tg.Expr)})
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			_ = json.Unmarshal(v.Query, &q.Query) // the older form: a plain string
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			problems = append(problems, fmt.Sprintf("variable %s: query %q, want label_values(METRIC, LABEL)", v.Name, q.Query))
			continue
		}
		qs = append(qs, dashboardQuery{"variable " + v.Name, m[1]})
	}
	return qs, problems
}

type dashPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"`
}

// checkDashboard returns what is wrong with a dashboard: dashboardQueries' problems, and every
// metric an expression names that nodecheck does not write.
func checkDashboard(data []byte, known map[string]bool) ([]dashboardQuery, []string) {
	qs, problems := dashboardQueries(data)
	for _, q := range qs {
		names := MetricNames(q.expr)
		if len(names) == 0 {
			problems = append(problems, fmt.Sprintf("%s: no metric in %q", q.where, q.expr))
		}
		for _, n := range names {
			if !known[n] {
				problems = append(problems, fmt.Sprintf("%s: %s is not a metric nodecheck writes", q.where, n))
			}
		}
	}
	return qs, problems
}

// promtoolCheckQueries writes the expressions as one recording rule each and runs `promtool
// check rules` on them: promtool parses each with Prometheus's own parser.
func promtoolCheckQueries(t *testing.T, qs []dashboardQuery) (string, error) {
	t.Helper()
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, q := range qs {
		rules = append(rules, rule{fmt.Sprintf("dashboard:query_%d", i), q.expr})
	}
	doc := map[string]any{"groups": []map[string]any{{"name": "dashboard", "rules": rules}}}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.rules.yml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return runPromtool(t, dir, "check", "rules", "dashboard.rules.yml")
}

// TestDashboard: every expression of the shipped dashboard parses (promtool check rules, one
// recording rule per expression) and names only metrics nodecheck writes (the metrics
// goldens).
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile(DashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	qs, problems := checkDashboard(data, writtenMetrics(t))
	for _, p := range problems {
		t.Error(p)
	}
	if len(qs) < 15 {
		t.Fatalf("%d queries in the dashboard, want its every panel's", len(qs))
	}
	if out, err := promtoolCheckQueries(t, qs); err != nil {
		t.Errorf("promtool check rules of the dashboard's %d expressions: %v\n%s", len(qs), err, out)
	}
}

// TestDashboardCheckCatches: the dashboard's test fails for a misspelt metric and for an
// expression that does not parse.
func TestDashboardCheckCatches(t *testing.T) {
	data, err := os.ReadFile(DashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	misspelt := strings.Replace(string(data), "nodecheck_drained{", "nodecheck_drain{", 1)
	if _, problems := checkDashboard([]byte(misspelt), writtenMetrics(t)); len(problems) == 0 {
		t.Error("a misspelt metric (nodecheck_drain) passed")
	}
	broken := strings.Replace(string(data), "count by (verdict) (", "count by (verdict (", 1)
	qs, _ := dashboardQueries([]byte(broken))
	if out, err := promtoolCheckQueries(t, qs); err == nil {
		t.Errorf("promtool accepted an expression that does not parse:\n%s", out)
	}
}
