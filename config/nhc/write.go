package nhc

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Checks is the translation as the [checks] keys it sets, every key an NHC line can set
// (importKeys), as WriteTOML writes them: an empty list, "", 0 or false where nhc.conf sets none, so
// that the generic checks judge what NHC judges, no more. The nhc drop-in applies it over
// nodecheck.toml (config.Config.WithChecks).
func (t Translation) Checks() (map[string]map[string]any, error) {
	byKey := t.byKey()
	out := map[string]map[string]any{}
	for _, k := range importKeys {
		if out[k.sec] == nil {
			out[k.sec] = map[string]any{}
		}
		es := byKey[k.sec+"."+k.key]
		switch {
		case k.kind == 'l':
			vals := []string{}
			for _, e := range es {
				vals = append(vals, e.Value)
			}
			out[k.sec][k.key] = vals
		case k.kind == 'b':
			out[k.sec][k.key] = len(es) > 0 && es[0].Value == "true"
		case len(es) == 0 && k.kind == 'n':
			out[k.sec][k.key] = int64(0)
		case len(es) == 0:
			out[k.sec][k.key] = ""
		case es[0].Number:
			n, err := strconv.ParseInt(es[0].Value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %s.%s = %q: %w", es[0].From.Where(), k.sec, k.key, es[0].Value, err)
			}
			out[k.sec][k.key] = n
		default:
			out[k.sec][k.key] = es[0].Value
		}
	}
	return out, nil
}

func (t Translation) byKey() map[string][]Entry {
	byKey := map[string][]Entry{}
	for _, e := range t.Entries {
		byKey[e.Section+"."+e.Key] = append(byKey[e.Section+"."+e.Key], e)
	}
	return byKey
}

// importKey is one key the import writes: every key of the generic checks that an NHC
// line can set, so that the checks do what nhc.conf says and nothing more.
type importKey struct {
	sec, key string
	kind     byte // 'l' a list of strings, 's' a string, 'n' a whole number, 'b' a boolean, false where no line sets it
}

// importKeys are written in this order, each section whole.
var importKeys = []importKey{
	{"fs_mounts", "mounts", 'l'},
	{"fs_usage", "limits", 'l'},
	{"memory", "physmem", 's'}, {"memory", "swap", 's'}, {"memory", "total_mem", 's'},
	{"memory", "mem_free", 's'}, {"memory", "physmem_free", 's'}, {"memory", "swap_free", 's'},
	{"services", "processes", 'l'},
	{"interfaces", "present", 'l'},
	{"load_average", "max_1m", 'n'}, {"load_average", "max_5m", 'n'}, {"load_average", "max_15m", 'n'},
	{"kernel_log", "patterns", 'l'},
	{"file_tests", "tests", 'l'},
	{"file_contents", "files", 'l'},
	{"machine_checks", "enabled", 'b'},
	{"node_inventory", "sockets", 'n'}, {"node_inventory", "cores", 'n'}, {"node_inventory", "threads", 'n'},
	{"stray_processes", "enabled", 'b'}, {"stray_processes", "fail", 'b'},
	{"stray_processes", "allow_users", 'l'}, {"stray_processes", "ignore_commands", 'l'},
}

// WriteTOML writes the translation as nodecheck.toml: every key of the generic checks an
// NHC line can set (importKeys), as nhc.conf sets it (an empty list, "", 0 or false where it sets
// none), each value followed by the line it came from; then the lines not translated as
// comments. So the generic checks judge what NHC judged, no more: a key written replaces
// nodecheck's built-in default, which defaults gives ("services.processes": the default
// daemons) so that a comment can say what an admin may want to add back. source names the
// input; when rest is not "", the lines not translated are to be kept in NHC's file rest,
// and a [[site_check]] running NHC on it is written too.
func (t Translation) WriteTOML(w io.Writer, source string, total int, rest string, defaults map[string][]string) error {
	var b strings.Builder
	if len(t.Skipped) == 0 {
		fmt.Fprintf(&b, "# Written by nodecheck import-nhc from %s: all %d check lines translated.\n# Review before use.\n", source, total)
	} else {
		fmt.Fprintf(&b, "# Written by nodecheck import-nhc from %s: %d of %d check lines translated,\n# %d not (listed at the end). Review before use.\n", source, total-len(t.Skipped), total, len(t.Skipped))
	}
	b.WriteString("# Each check below is set as nhc.conf sets it, replacing nodecheck's own defaults for it.\n")
	byKey := t.byKey()
	sec := ""
	for _, k := range importKeys {
		if k.sec != sec {
			sec = k.sec
			fmt.Fprintf(&b, "\n[checks.%s]\n", sec)
		}
		es := byKey[k.sec+"."+k.key]
		if def := defaults[k.sec+"."+k.key]; len(def) > 0 {
			quoted := make([]string, len(def))
			for i, d := range def {
				quoted[i] = tomlQuote(d)
			}
			fmt.Fprintf(&b, "# nodecheck's default, replaced: %s = [%s]\n", k.key, strings.Join(quoted, ", "))
		}
		switch {
		case k.kind == 'l' && len(es) == 0:
			fmt.Fprintf(&b, "%s = []\n", k.key)
		case k.kind == 'l':
			fmt.Fprintf(&b, "%s = [\n", k.key)
			for _, e := range es {
				fmt.Fprintf(&b, "  %s, # %s: %s\n", tomlQuote(e.Value), e.From.Where(), oneLine(e.From.Raw))
			}
			b.WriteString("]\n")
		case k.kind == 'b' && len(es) == 0:
			fmt.Fprintf(&b, "%s = false\n", k.key)
		case k.kind == 'b':
			fmt.Fprintf(&b, "%s = %s # %s: %s\n", k.key, es[0].Value, es[0].From.Where(), oneLine(es[0].From.Raw))
		case len(es) == 0 && k.kind == 'n':
			fmt.Fprintf(&b, "%s = 0\n", k.key)
		case len(es) == 0:
			fmt.Fprintf(&b, "%s = \"\"\n", k.key)
		default:
			v := tomlQuote(es[0].Value)
			if es[0].Number {
				v = es[0].Value
			}
			fmt.Fprintf(&b, "%s = %s # %s: %s\n", k.key, v, es[0].From.Where(), oneLine(es[0].From.Raw))
		}
	}
	if rest != "" && len(t.Skipped) > 0 {
		fmt.Fprintf(&b, "\n# The %d lines not translated, kept in NHC: it runs them and reports by exit status\n# (MARK_OFFLINE=0: nodecheck drains, not NHC; -t 25: NHC ends itself before the 28 s).\n", len(t.Skipped))
		b.WriteString("[checks.site_checks]\ntimeout = \"28s\" # the default 3 s bounds every site check: NHC needs more\n")
		fmt.Fprintf(&b, "[[site_check]]\nname = \"nhc\"\ncommand = \"/usr/sbin/nhc\"\nargs = [\"-c\", %s, \"-t\", \"25\", \"MARK_OFFLINE=0\"]\nmodes = [\"health\"]\ntimeout = \"28s\"\nremedy = \"admin\"\n", tomlQuote(rest))
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n# Translated with a difference:\n")
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "#   %s: %s\n", n.Line.Where(), oneLine(n.Why))
		}
	}
	if len(t.Skipped) > 0 {
		b.WriteString("\n# Not translated:\n")
		for _, s := range t.Skipped {
			fmt.Fprintf(&b, "#   %s: %s\n#     %s\n", s.Line.Where(), oneLine(s.Line.Raw), oneLine(s.Why))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRest writes the lines not translated as an nhc.conf of their own, for NHC to keep
// running them as one site check.
func (t Translation) WriteRest(w io.Writer, source string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# The lines of %s that nodecheck import-nhc did not translate, for NHC to run\n# as a nodecheck site check (MARK_OFFLINE=0: nodecheck drains, not NHC).\n", source)
	for _, s := range t.Skipped {
		fmt.Fprintf(&b, "# %s: %s\n%s\n", s.Line.Where(), oneLine(s.Why), s.Line.Raw)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tomlQuote writes s as a TOML basic string: TOML has no \x escape, so control characters
// are written \uXXXX (strconv.Quote would write \x01, which TOML refuses).
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// oneLine keeps a text on one comment line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r < 0x20 && r != '\t' {
			return ' '
		}
		return r
	}, s)
}
