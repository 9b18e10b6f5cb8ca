package drill

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// maxTextfile bounds the drill's own textfile when it reads it back: a few hundred lines.
const maxTextfile = 4 << 20

// checkTextfile reads the drill's textfile back: it must say the node is drained for the
// replay's check with its remedy, unhealthy, and that check failing, all under drill="1".
func (d *drill) checkTextfile() (string, error) {
	f, err := os.Open(d.o.PromFile)
	if err != nil {
		return "", fmt.Errorf("read the drill's metrics: %w", err)
	}
	defer f.Close()
	want := []sample{
		{"nodecheck_drained", map[string]string{"check": d.res.Check, "drill": "1", "node": d.o.Node, "remedy": d.res.Remedy}, 1},
		{"nodecheck_verdict", map[string]string{"drill": "1", "node": d.o.Node, "verdict": "unhealthy"}, 1},
		{"nodecheck_check_status", map[string]string{"check": d.res.Check, "drill": "1", "node": d.o.Node, "status": "fail"}, 1},
	}
	if d.res.Remedy == "" {
		delete(want[0].labels, "remedy")
	}
	found := make([]bool, len(want))
	sc := bufio.NewScanner(io.LimitReader(f, maxTextfile))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		s, ok := parseSample(sc.Text())
		for i, w := range want {
			found[i] = found[i] || ok && s.equal(w)
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", d.o.PromFile, err)
	}
	for i, w := range want {
		if !found[i] {
			return "", fmt.Errorf("%s has no %s", d.o.PromFile, w)
		}
	}
	return fmt.Sprintf("%s: %s", d.o.PromFile, want[0]), nil
}

// alertSteps asks Prometheus for the drill's series, then waits for its alert to be pending
// and firing, all within AlertTimeout from now.
func (d *drill) alertSteps(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, d.o.AlertTimeout)
	defer cancel()
	expr := fmt.Sprintf("nodecheck_drained{node=%s,drill=\"1\"} == 1", quote(d.o.Node))
	if !d.step("series scraped", func() (string, error) {
		return expr, d.poll(ctx, "the drill's series in Prometheus ("+expr+")", func() (bool, error) {
			n, err := d.prom.query(ctx, expr)
			return n > 0, err
		})
	}) {
		return
	}
	for _, state := range []string{"pending", "firing"} {
		if !d.step("alert "+state, func() (string, error) {
			what := fmt.Sprintf("%s{node=%q,drill=\"1\"} %s", d.o.Alert, d.o.Node, state)
			return what, d.poll(ctx, what, func() (bool, error) {
				a, listed, err := d.findAlert(ctx)
				return listed && (state == "pending" || a.State == "firing"), err
			})
		}) {
			return
		}
	}
}

// waitResolved waits until the drill's alert is no longer listed (the series went stale).
func (d *drill) waitResolved(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, d.o.AlertTimeout)
	defer cancel()
	what := fmt.Sprintf("%s{node=%q,drill=\"1\"} gone", d.o.Alert, d.o.Node)
	return what, d.poll(ctx, what, func() (bool, error) {
		_, listed, err := d.findAlert(ctx)
		return !listed, err
	})
}

// findAlert looks for the drill's alert among Prometheus's pending and firing ones.
func (d *drill) findAlert(ctx context.Context) (promAlert, bool, error) {
	alerts, err := d.prom.alerts(ctx)
	if err != nil {
		return promAlert{}, false, err
	}
	for _, a := range alerts {
		if a.Labels["alertname"] == d.o.Alert && a.Labels["node"] == d.o.Node && a.Labels["drill"] == "1" {
			return a, true, nil
		}
	}
	return promAlert{}, false, nil
}

// poll calls cond every Poll until it holds, or ctx ends: then the error says what was
// awaited, and the last error Prometheus gave.
func (d *drill) poll(ctx context.Context, what string, cond func() (bool, error)) error {
	var last error
	for {
		ok, err := cond()
		if err == nil && ok {
			return nil
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("no %s after %s (last error: %v)", what, d.o.AlertTimeout, last)
			}
			return fmt.Errorf("no %s after %s", what, d.o.AlertTimeout)
		case <-time.After(d.o.Poll):
		}
	}
}

// sample is one line of the text exposition format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

func (s sample) equal(o sample) bool {
	if s.name != o.name || s.value != o.value || len(s.labels) != len(o.labels) {
		return false
	}
	for k, v := range o.labels {
		if s.labels[k] != v {
			return false
		}
	}
	return true
}

func (s sample) String() string {
	var b strings.Builder
	b.WriteString(s.name + "{")
	first := true
	for _, k := range []string{"check", "drill", "node", "remedy", "status", "verdict"} {
		if v, ok := s.labels[k]; ok {
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(k + "=" + quote(v))
		}
	}
	b.WriteString("} " + strconv.FormatFloat(s.value, 'f', -1, 64))
	return b.String()
}

// parseSample reads `name{label="value",...} value` as nodecheck's writer writes it (label
// values escaped: \\, \" and \n); a comment or anything else is not a sample.
func parseSample(line string) (sample, bool) {
	open := strings.IndexByte(line, '{')
	if open <= 0 || strings.HasPrefix(line, "#") {
		return sample{}, false
	}
	s := sample{name: line[:open], labels: map[string]string{}}
	rest := line[open+1:]
	for !strings.HasPrefix(rest, "}") {
		eq := strings.Index(rest, `="`)
		if eq <= 0 {
			return sample{}, false
		}
		key := rest[:eq]
		val, n, ok := unescapeLabel(rest[eq+2:])
		if !ok {
			return sample{}, false
		}
		s.labels[key] = val
		rest = strings.TrimPrefix(rest[eq+2+n:], ",")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(rest[1:]), 64)
	if err != nil {
		return sample{}, false
	}
	s.value = v
	return s, true
}

// unescapeLabel reads a label value up to its closing quote; n counts the bytes read, the
// quote included.
func unescapeLabel(s string) (val string, n int, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, true
		case '\\':
			if i+1 == len(s) {
				return "", 0, false
			}
			i++
			if s[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}
