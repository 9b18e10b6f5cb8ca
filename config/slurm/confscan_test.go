package slurm

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The reference below follows Slurm 22.05's src/common/parse_config.c step by step
// (_get_next_line with _strip_comments, _strip_continuation and _strip_escapes; then
// keyvalue_pattern applied until it stops matching, as s_p_parse_line does), so that the
// scanner is tested against Slurm's reading rather than against itself. Read the C, not copied:
// it works on bytes, as C does, and stops nowhere at NUL (inputs with NUL are skipped).

// slurmKeyValue is keyvalue_pattern, a POSIX extended expression.
var slurmKeyValue = regexp.MustCompilePOSIX(`^[[:space:]]*([[:alnum:]_.]+)[[:space:]]*([-*+/]?)=[[:space:]]*(("([^"]*)")|([^[:space:]]+))([[:space:]]|$)`)

// refLines returns the logical lines Slurm reads from data (empty ones skipped), with the
// 1-based physical line each starts on.
func refLines(data []byte) (lines []string, starts []int) {
	phys := bytes.SplitAfter(data, []byte("\n"))
	if n := len(phys); n > 0 && len(phys[n-1]) == 0 {
		phys = phys[:n-1]
	}
	lineNo := 0
	for i := 0; i < len(phys); {
		start := lineNo + 1
		var buf []byte
		for i < len(phys) {
			p := phys[i]
			i++
			lineNo++
			// _strip_comments: a '#' after an even number of '\'.
			bs := 0
			for k, c := range p {
				if c == '#' && bs%2 == 0 {
					p = p[:k]
					break
				} else if c == '\\' {
					bs++
				} else {
					bs = 0
				}
			}
			// _strip_continuation.
			n, k := len(p), len(p)-1
			bs = 0
			for ; k >= 0; k-- {
				if p[k] == '\\' {
					bs++
				} else if confIsSpace(p[k]) && bs == 0 {
					continue
				} else {
					break
				}
			}
			if n > 0 && bs%2 == 1 {
				buf = append(buf, p[:k+bs]...)
				continue
			}
			buf = append(buf, p...)
			break
		}
		// _strip_escapes.
		var out []byte
		for k := 0; k < len(buf); k++ {
			if buf[k] == '\\' {
				k++
				if k == len(buf) {
					break
				}
			}
			out = append(out, buf[k])
		}
		if len(out) == 0 {
			continue
		}
		lines = append(lines, string(out))
		starts = append(starts, start)
	}
	return lines, starts
}

// refFields applies keyvalue_pattern until it stops matching; ok is false when something
// other than blanks is left (Slurm's "Parse error").
func refFields(line string) (kv [][2]string, ok bool) {
	rest := line
	for {
		m := slurmKeyValue.FindStringSubmatchIndex(rest)
		if m == nil {
			break
		}
		v := ""
		switch {
		case m[10] >= 0:
			v = rest[m[10]:m[11]]
		case m[12] >= 0:
			v = rest[m[12]:m[13]]
		}
		kv = append(kv, [2]string{rest[m[2]:m[3]], v})
		rest = rest[m[7]:]
	}
	return kv, strings.TrimLeft(rest, " \t\n\v\f\r") == ""
}

// scanAll runs the scanner over data and returns its logical lines and problems.
func scanAll(data []byte) (lines []confLine, problems []Problem) {
	r := &confReader{problems: &problems}
	scanConf(data, "x.conf", r, func(l confLine) bool {
		lines = append(lines, l)
		return true
	})
	return lines, problems
}

func TestScanConfAgainstSlurm(t *testing.T) {
	// Each input is one that slurmctld 22.05.8 read on this machine (see slurmconf_test.go's
	// TestParseSlurmConfSyntax for what it made of them), plus the cases around them.
	tests := []struct {
		name      string
		in        string
		want      []string // key=value fields of each line, "|" between lines
		wantProbs []string
	}{
		{name: "blanks around equals", in: "NodeName = n1 CPUs = 4 RealMemory =100 Weight= 7\n", want: []string{"NodeName=n1 CPUs=4 RealMemory=100 Weight=7"}},
		{name: "blanks after the continuing backslash", in: "NodeName=n2 \\   \n   CPUs=2\n", want: []string{"NodeName=n2 CPUs=2"}},
		{name: "comment after the continuing backslash", in: "NodeName=n3 \\ # a comment\n   CPUs=3\n", want: []string{"NodeName=n3 CPUs=3"}},
		{name: "joined without a blank", in: "Weight=7\\\n7\n", want: []string{"Weight=77"}},
		{name: "escapes", in: `Features=p\,q Other=r\#s Third=x\\#y` + "\n", want: []string{`Features=p,q Other=r#s Third=x\`}},
		{name: "three backslashes continue, two do not", in: "A=x\\\\\\\nB=y\nC=z\\\\\nD=w\n", want: []string{`A=x\B=y`, `C=z\`, "D=w"}},
		{name: "quoted with blanks", in: `Features = "u v" Reason="a=b, c"` + "\n", want: []string{"Features=u v Reason=a=b, c"}},
		{name: "empty quoted value", in: `Name="" File=/dev/x` + "\n", want: []string{"Name= File=/dev/x"}},
		{name: "a blank after equals takes the next word", in: "Features= CPUs=6\n", want: []string{"Features=CPUs=6"},
			wantProbs: []string{"warning x.conf:1: Features= is followed by a blank"}},
		{name: "hash in quotes", in: `Features="a#b" CPUs=4` + "\n", want: []string{`Features="a`}, wantProbs: []string{"error x.conf:1: the '#' in"}},
		{name: "comment ending in a backslash", in: "A=1 # note \\\nB=2\n", want: []string{"A=1", "B=2"}},
		{name: "continued last line", in: "A=1 \\", want: []string{"A=1"}},
		{name: "CRLF", in: "A=1\r\nB=2 \\\r\nC=3\r\n", want: []string{"A=1", "B=2 C=3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines, probs := scanAll([]byte(tc.in))
			var got []string
			for _, l := range lines {
				var fs []string
				for _, f := range l.Fields {
					fs = append(fs, f.Key+"="+f.Value)
				}
				got = append(got, strings.Join(fs, " "))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			refs, _ := refLines([]byte(tc.in))
			for i, l := range refs {
				kv, _ := refFields(l)
				var fs []string
				for _, p := range kv {
					fs = append(fs, p[0]+"="+p[1])
				}
				if i < len(got) && strings.Join(fs, " ") != got[i] && len(tc.wantProbs) == 0 {
					t.Errorf("line %d: reference reads %q, scanner %q", i+1, strings.Join(fs, " "), got[i])
				}
			}
			if len(probs) != len(tc.wantProbs) {
				t.Fatalf("problems %v, want %d", probs, len(tc.wantProbs))
			}
			for i, p := range probs {
				if s := p.Severity + " " + p.Message; !strings.HasPrefix(s, tc.wantProbs[i]) {
					t.Errorf("problem %q, want it to start with %q", s, tc.wantProbs[i])
				}
			}
		})
	}
}

var plainKey = regexp.MustCompile(`^[[:alnum:]_.]+$`)

// FuzzScanConf compares the scanner with Slurm's reading (the reference above): the same
// logical lines at the same positions and, where Slurm reads a line without a parse error,
// the same keys and values; where Slurm stops with one, the scanner leaves something a
// parser refuses (a problem, a bare word, or a key Slurm's expression would not take).
func FuzzScanConf(f *testing.F) {
	for _, s := range []string{
		"NodeName = n1 CPUs = 4\nNodeName=n2 \\  \n CPUs=2\n", "A=1 \\ # c\nB=2\n", `F="a#b" C=4`, `F=p\,q G=x\\#y`,
		"F= C=6\n", "F=\nG=\"a b\"c\nH=a\"b c\"\n", "Include other.conf\n", "A=1\\", "x\r\n=\t\"\"\\\\\\\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.IndexByte(data, 0) >= 0 {
			return // C strings end at NUL; Slurm would read less
		}
		lines, probs := scanAll(data)
		refs, starts := refLines(data)
		var nonEmpty []int
		for i, l := range refs {
			if strings.TrimLeft(l, " \t\n\v\f\r") != "" {
				nonEmpty = append(nonEmpty, i)
			}
		}
		if len(lines) != len(nonEmpty) {
			t.Fatalf("%d lines, Slurm reads %d: %q", len(lines), len(nonEmpty), refs)
		}
		hasProblem := map[int]bool{}
		for _, p := range probs {
			hasProblem[p.Line] = true
		}
		for k, i := range nonEmpty {
			l := lines[k]
			if l.Pos.Line != starts[i] {
				t.Fatalf("line %q at %d, Slurm's starts at %d", l.Text, l.Pos.Line, starts[i])
			}
			kv, ok := refFields(refs[i])
			var got [][2]string
			flagged := hasProblem[l.Pos.Line]
			for _, fl := range l.Fields {
				got = append(got, [2]string{fl.Key, fl.Value})
				if !fl.HasEq || !plainKey.MatchString(fl.Key) {
					flagged = true
				}
			}
			if ok && fmt.Sprint(got) != fmt.Sprint(kv) {
				t.Fatalf("line %q: fields %q, Slurm reads %q", refs[i], got, kv)
			}
			if !ok && !flagged {
				t.Fatalf("line %q: Slurm stops with a parse error (after %q) but the scanner found nothing wrong: %q", refs[i], kv, got)
			}
		}
	})
}
