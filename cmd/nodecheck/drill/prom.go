package drill

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// promClient asks Prometheus's HTTP API (https://prometheus.io/docs/prometheus/latest/querying/api/)
// with one plain HTTP/1.0 GET per call over a TCP connection: nodecheck links no HTTP or TLS
// library (docs/speed.md: every linked package's initialisation runs in every prolog), so the
// drill speaks http:// only; reach a Prometheus behind TLS or authentication through a local
// tunnel or proxy.
type promClient struct {
	host    string // host:port
	base    string // path prefix, "" or "/prometheus"
	timeout time.Duration
}

// maxAPIResponse bounds an answer: the alerts of a large fleet fit many times over.
const maxAPIResponse = 16 << 20

// newPromClient reads the base URL: http://HOST[:PORT][/PREFIX].
func newPromClient(raw string) (*promClient, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("--prometheus %q: %w", raw, err)
	}
	switch {
	case u.Scheme == "https":
		return nil, fmt.Errorf("--prometheus %q: nodecheck speaks no TLS; give a plain http:// address (a tunnel: ssh -L 9090:localhost:9090 PROMETHEUS_HOST)", raw)
	case u.Scheme != "http" || u.Host == "" || u.User != nil || u.RawQuery != "":
		return nil, fmt.Errorf("--prometheus %q: want http://HOST:PORT, with an optional path prefix", raw)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	return &promClient{host: host, base: strings.TrimSuffix(u.EscapedPath(), "/"), timeout: 10 * time.Second}, nil
}

// get sends GET path?query and decodes the answer's "data" into v.
func (p *promClient) get(ctx context.Context, path string, query url.Values, v any) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", p.host)
	if err != nil {
		return fmt.Errorf("connect to Prometheus at %s: %w", p.host, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	target := p.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req := "GET " + target + " HTTP/1.0\r\nHost: " + p.host + "\r\nAccept: application/json\r\nUser-Agent: nodecheck-drill\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	status, body, err := readResponse(conn)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return decodeAPI(path, status, body, v)
}

// readResponse reads an HTTP/1.0 answer (the server closes the connection after it, and
// sends no chunked body to a 1.0 request): the status code and the body, at most
// maxAPIResponse bytes.
func readResponse(r io.Reader) (int, []byte, error) {
	br := bufio.NewReader(io.LimitReader(r, maxAPIResponse+64<<10))
	line, err := br.ReadString('\n')
	if err != nil {
		return 0, nil, fmt.Errorf("read the status line: %w", err)
	}
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") {
		return 0, nil, fmt.Errorf("not an HTTP answer: %q", strings.TrimSpace(line))
	}
	code, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, nil, fmt.Errorf("status line %q: %w", strings.TrimSpace(line), err)
	}
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			return 0, nil, fmt.Errorf("read the headers: %w", err)
		}
		if strings.EqualFold(strings.TrimSpace(h), "Transfer-Encoding: chunked") {
			return 0, nil, errors.New("a chunked answer to an HTTP/1.0 request")
		}
		if strings.TrimSpace(h) == "" {
			break
		}
	}
	body, err := io.ReadAll(br)
	if err != nil {
		return 0, nil, fmt.Errorf("read the body: %w", err)
	}
	if len(body) > maxAPIResponse {
		return 0, nil, fmt.Errorf("the answer is over %d bytes", maxAPIResponse)
	}
	return code, body, nil
}

// decodeAPI reads Prometheus's envelope: {"status": "success", "data": ...} or
// {"status": "error", "errorType": ..., "error": ...}.
func decodeAPI(path string, status int, body []byte, v any) error {
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("GET %s: HTTP %d, not Prometheus's API (%v): %.200q", path, status, err, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("GET %s: HTTP %d: %s", path, status, env.Error)
	}
	return json.NewDecoder(bytes.NewReader(env.Data)).Decode(v)
}

// promAlert is an alert as /api/v1/alerts lists it.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

func (p *promClient) alerts(ctx context.Context) ([]promAlert, error) {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	err := p.get(ctx, "/api/v1/alerts", nil, &data)
	return data.Alerts, err
}

// query runs an instant query and returns how many series it gave.
func (p *promClient) query(ctx context.Context, expr string) (int, error) {
	var data struct {
		Result []json.RawMessage `json:"result"`
	}
	err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data)
	return len(data.Result), err
}
