package monitoring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodecheck/nodecheck/scripts/testbed"
)

// Debian's binaries (packages prometheus and prometheus-node-exporter).
const (
	PrometheusBin   = "/usr/bin/prometheus"
	NodeExporterBin = "/usr/bin/prometheus-node-exporter"
)

// Options say how Start runs the stack.
type Options struct {
	// Rules is the rules file's content to load (ScaleFor of the shipped file, say); nil
	// loads none.
	Rules []byte
	// Interval is Prometheus's scrape and evaluation interval (default 1 s).
	Interval time.Duration
	// TextfileDir is the directory node_exporter's textfile collector reads; "" makes one
	// (Stack.TextfileDir), removed when the test ends.
	TextfileDir string
}

// Stack is a running node_exporter and Prometheus.
type Stack struct {
	URL          string // Prometheus, http://127.0.0.1:PORT
	ExporterURL  string // node_exporter
	Instance     string // the instance label of node_exporter's series
	TextfileDir  string
	Interval     time.Duration
	dir          string
	client       *http.Client
	procs        []*proc
	prometheusUp time.Duration
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// Start runs node_exporter (textfile collector only) and Prometheus (scraping it every
// Interval, evaluating the rules every Interval) on free loopback ports, each in its own
// process group, and waits until Prometheus is ready and has scraped node_exporter once.
// Both are stopped, and their files removed, when t ends, passed or failed (their last log
// lines are logged on failure). Where the binaries are absent the test skips, except under
// CI=true, where it fails (CI installs both).
func Start(t *testing.T, o Options) *Stack {
	t.Helper()
	Require(t)
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	dir, err := os.MkdirTemp("", "nodecheck-prometheus-")
	if err != nil {
		t.Fatal(err)
	}
	// 0755: on a 24.11 test bed nodecheck writes the textfile from inside the bed's root.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Stack{dir: dir, Interval: o.Interval, TextfileDir: o.TextfileDir, client: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(func() { s.stop(t) })
	if s.TextfileDir == "" {
		s.TextfileDir = filepath.Join(dir, "textfile")
		if err := os.Mkdir(s.TextfileDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port, err := testbed.FreePorts(2)
	if err != nil {
		t.Fatalf("free ports: %v", err)
	}
	s.Instance = fmt.Sprintf("127.0.0.1:%d", port)
	s.ExporterURL = "http://" + s.Instance
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", port+1)
	s.start(t, "node_exporter", NodeExporterBin, "--web.listen-address="+s.Instance, "--collector.disable-defaults",
		"--collector.textfile", "--collector.textfile.directory="+s.TextfileDir)
	cfg := s.prometheusConfig(t, o.Rules)
	started := time.Now()
	s.start(t, "prometheus", PrometheusBin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port+1), "--log.level=warn")
	s.waitReady(t, 60*time.Second)
	s.prometheusUp = time.Since(started)
	t.Logf("node_exporter at %s (textfile directory %s), Prometheus at %s, ready and scraping after %s", s.ExporterURL, s.TextfileDir, s.URL, s.prometheusUp.Round(time.Millisecond))
	return s
}

// Require skips t where Prometheus or node_exporter is not installed, except under CI=true,
// where it fails t. A test calls it before anything slow, such as a Slurm test bed.
func Require(t *testing.T) {
	t.Helper()
	for _, bin := range []string{PrometheusBin, NodeExporterBin} {
		if _, err := os.Stat(bin); err != nil {
			msg := fmt.Sprintf("%s is not installed (apt-get install --no-install-recommends prometheus prometheus-node-exporter): %v", bin, err)
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true: " + msg)
			}
			t.Skip(msg)
		}
	}
}

// prometheusConfig writes prometheus.yml and the rules, and returns the config's path.
func (s *Stack) prometheusConfig(t *testing.T, rules []byte) string {
	t.Helper()
	var ruleFiles string
	if rules != nil {
		p := filepath.Join(s.dir, "rules.yml")
		if err := os.WriteFile(p, rules, 0o644); err != nil {
			t.Fatal(err)
		}
		ruleFiles = fmt.Sprintf("rule_files: [%q]\n", p)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\n%sscrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: [%q]\n",
		s.Interval, s.Interval, ruleFiles, s.Instance)
	p := filepath.Join(s.dir, "prometheus.yml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// start runs bin in its own process group, its output in a log file in the stack's directory.
func (s *Stack) start(t *testing.T, name, bin string, args ...string) {
	t.Helper()
	log := filepath.Join(s.dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	s.procs = append(s.procs, p)
}

// waitReady waits until Prometheus answers /-/ready and its scrape of node_exporter is up.
func (s *Stack) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, p := range s.procs {
			select {
			case err := <-p.done:
				p.done <- err
				t.Fatalf("%s exited at start: %v\n%s", p.name, err, tailFile(p.log, 20))
			default:
			}
		}
		if res, err := s.Query(context.Background(), `up{job="node"} == 1`); err == nil && len(res) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus not ready and scraping after %s", timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop ends both processes (SIGTERM to the group, SIGKILL after 10 s), logs their last
// lines when t failed, and removes the stack's directory.
func (s *Stack) stop(t *testing.T) {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s log, last lines:\n%s", p.name, tailFile(p.log, 15))
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		t.Errorf("remove %s: %v", s.dir, err)
	}
}

func tailFile(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Alert is one alert as /api/v1/alerts lists it.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"` // pending or firing
	ActiveAt    time.Time         `json:"activeAt"`
	Value       string            `json:"value"`
}

// Sample is one series of an instant query's result.
type Sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"` // [unix time, "value"]
}

// Alerts lists the pending and firing alerts.
func (s *Stack) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	err := s.get(ctx, "/api/v1/alerts", nil, &data)
	return data.Alerts, err
}

// Query runs an instant query.
func (s *Stack) Query(ctx context.Context, expr string) ([]Sample, error) {
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []Sample `json:"result"`
	}
	err := s.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data)
	return data.Result, err
}

// get reads an API answer's "data" into v.
func (s *Stack) get(ctx context.Context, path string, q url.Values, v any) error {
	u := s.URL + path
	if q != nil {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	res, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("GET %s: %s: %w", path, res.Status, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s", path, res.Status, env.Error)
	}
	return json.NewDecoder(bytes.NewReader(env.Data)).Decode(v)
}

// FindAlert returns the alert named name whose labels include want, if it is listed.
func FindAlert(alerts []Alert, name string, want map[string]string) (Alert, bool) {
	for _, a := range alerts {
		if a.Labels["alertname"] != name {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && a.Labels[k] == v
		}
		if ok {
			return a, true
		}
	}
	return Alert{}, false
}

// WaitAlert polls the alerts every 100 ms until cond says yes for the alert named name with
// labels want (listed or not), and returns the alert and when cond first held; after timeout
// it fails t.
func (s *Stack) WaitAlert(t *testing.T, timeout time.Duration, name string, want map[string]string, what string, cond func(a Alert, listed bool) bool) (Alert, time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		alerts, err := s.Alerts(ctx)
		if err == nil {
			if a, listed := FindAlert(alerts, name, want); cond(a, listed) {
				return a, time.Now()
			}
		} else if !errors.Is(err, context.DeadlineExceeded) {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waited %s for %s %v %s (last error: %v; alerts: %v)", timeout, name, want, what, last, alerts)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
