package drill

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseSample(t *testing.T) {
	tests := []struct {
		line string
		want sample
		ok   bool
	}{
		{`nodecheck_drained{check="ib_ports",drill="1",node="n1",remedy="admin"} 1`,
			sample{"nodecheck_drained", map[string]string{"check": "ib_ports", "drill": "1", "node": "n1", "remedy": "admin"}, 1}, true},
		{`nodecheck_run_info{mode="manual",node="odd\"node\\name\nx",version="1"} 1`,
			sample{"nodecheck_run_info", map[string]string{"mode": "manual", "node": "odd\"node\\name\nx", "version": "1"}, 1}, true},
		{`nodecheck_last_run_timestamp_seconds{node="n1"} 1741964966.535`,
			sample{"nodecheck_last_run_timestamp_seconds", map[string]string{"node": "n1"}, 1741964966.535}, true},
		{`# HELP nodecheck_drained 1 while {x="y"} 1`, sample{}, false},
		{`nodecheck_drained{node="n1} 1`, sample{}, false},
		{`nodecheck_drained{node="n1"} one`, sample{}, false},
		{`nodecheck_drained 1`, sample{}, false},
	}
	for _, tc := range tests {
		got, ok := parseSample(tc.line)
		if ok != tc.ok || ok && !got.equal(tc.want) {
			t.Errorf("parseSample(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestNewPromClient(t *testing.T) {
	tests := []struct{ url, host, base, err string }{
		{"http://prometheus:9090", "prometheus:9090", "", ""},
		{"http://127.0.0.1:9090/prometheus/", "127.0.0.1:9090", "/prometheus", ""},
		{"http://prometheus", "prometheus:80", "", ""},
		{"https://prometheus:9090", "", "", "speaks no TLS"},
		{"prometheus:9090", "", "", "want http://"},
		{"http://user:pw@prometheus:9090", "", "", "want http://"},
	}
	for _, tc := range tests {
		p, err := newPromClient(tc.url)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("newPromClient(%q): %v, want an error with %q", tc.url, err, tc.err)
			}
		case err != nil || p.host != tc.host || p.base != tc.base:
			t.Errorf("newPromClient(%q) = %+v, %v; want host %q, base %q", tc.url, p, err, tc.host, tc.base)
		}
	}
}

// TestPromClient asks a stand-in of Prometheus's API (the answers' shape from
// https://prometheus.io/docs/prometheus/latest/querying/api/) through the drill's own HTTP/1.0
// client: alerts, a query, an error answer, and something that is not the API.
func TestPromClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/p/api/v1/alerts":
			w.Write([]byte(`{"status":"success","data":{"alerts":[{"labels":{"alertname":"NodecheckNodeUnhealthy","node":"n1","drill":"1"},"state":"firing","activeAt":"2026-12-05T16:00:00Z","value":"1e+00"}]}}`))
		case r.URL.Path == "/p/api/v1/query" && r.URL.Query().Get("query") == `up == 1`:
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]},{"metric":{},"value":[1,"1"]}]}}`))
		case r.URL.Path == "/p/api/v1/query":
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	p, err := newPromClient(srv.URL + "/p")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	alerts, err := p.alerts(ctx)
	if err != nil || len(alerts) != 1 || alerts[0].State != "firing" || alerts[0].Labels["node"] != "n1" {
		t.Errorf("alerts: %+v, %v", alerts, err)
	}
	if n, err := p.query(ctx, `up == 1`); n != 2 || err != nil {
		t.Errorf("query: %d series, %v; want 2", n, err)
	}
	if _, err := p.query(ctx, `up ==`); err == nil || !strings.Contains(err.Error(), "HTTP 400: parse error") {
		t.Errorf("a bad query: %v", err)
	}
	q, _ := newPromClient(srv.URL + "/elsewhere")
	if _, err := q.alerts(ctx); err == nil || !strings.Contains(err.Error(), "HTTP 404, not Prometheus's API") {
		t.Errorf("not the API: %v", err)
	}
	closed, _ := newPromClient(srv.URL)
	srv.Close()
	if _, err := closed.alerts(ctx); err == nil || !strings.Contains(err.Error(), "connect to Prometheus") {
		t.Errorf("nothing listening: %v", err)
	}
}

func TestReadResponse(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{}", ""},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", "chunked"},
		{"SSH-2.0-OpenSSH_9.2\r\n", "not an HTTP answer"},
		{"HTTP/1.0 200 OK\r\nContent-Type: appl", "read the headers"},
	} {
		_, body, err := readResponse(strings.NewReader(tc.in))
		if tc.err == "" && (err != nil || string(body) != "{}") || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("readResponse(%q): %q, %v; want error %q", tc.in, body, err, tc.err)
		}
	}
}
