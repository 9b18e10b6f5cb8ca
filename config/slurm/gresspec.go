package slurm

// slurm.conf's Gres= value (gpu:h100:8) and GRES counts with their K/M/G/T/P suffixes, which
// gres.conf's Count= shares.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// GresSpec is one element of a slurm.conf Gres= value: gpu:h100:8, mps:400,
// bandwidth:lustre:no_consume:4G.
type GresSpec struct {
	Name      string `json:"name"`
	Type      string `json:"type"`  // empty when not given
	Count     uint64 `json:"count"` // K, M, G, T and P suffixes already applied (1024-based)
	NoConsume bool   `json:"no_consume,omitempty"`
}

// String returns the spec in slurm.conf syntax, counts that are a whole number of KiB, MiB,
// ... written with their suffix (4G, not 4294967296).
func (g GresSpec) String() string {
	var b strings.Builder
	b.WriteString(g.Name)
	if g.Type != "" {
		b.WriteString(":" + g.Type)
	}
	if g.NoConsume {
		b.WriteString(":no_consume")
	}
	b.WriteString(":" + formatGresCount(g.Count))
	return b.String()
}

// ParseGresSpec parses a slurm.conf Gres= value: a comma-separated list of
// name[:type][:no_consume][:count], as in "gpu:h100:8,gpu:a100:2", "gpu:8",
// "gpu:tesla:2,mps:400,bandwidth:lustre:no_consume:4G" or MIG types like
// "gpu:a100_3g.20gb:2". A missing count is 1. A second field that is a number is the count,
// as Slurm reads it ("gpu:2" is two untyped GPUs). Counts take K, M, G, T or P (powers of 1024).
func ParseGresSpec(s string) ([]GresSpec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []GresSpec
	for _, item := range strings.Split(s, ",") {
		// Gres="gpu:8, mps:400" (quoted, with a blank) reads as Slurm would without it.
		g, err := parseOneGres(strings.TrimSpace(item))
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

func parseOneGres(item string) (GresSpec, error) {
	if item == "" {
		return GresSpec{}, fmt.Errorf("parse Gres=: empty element; remove the extra ','")
	}
	// scontrol prints socket affinity as gpu:h100:8(S:0-1); slurm.conf has no such form, but
	// it is what an admin copies from `scontrol show node`, so say what to do with it.
	if i := strings.IndexByte(item, '('); i >= 0 {
		return GresSpec{}, fmt.Errorf("parse Gres=%q: %q is scontrol's socket notation; write %q in slurm.conf and put Cores= in gres.conf", item, item[i:], item[:i])
	}
	fields := strings.Split(item, ":")
	g := GresSpec{Name: fields[0], Count: 1}
	if g.Name == "" {
		return GresSpec{}, fmt.Errorf("parse Gres=%q: missing GRES name before ':'", item)
	}
	rest := fields[1:]
	kept := rest[:0:0]
	for _, f := range rest {
		if strings.EqualFold(f, "no_consume") {
			g.NoConsume = true
			continue
		}
		kept = append(kept, f)
	}
	switch len(kept) {
	case 0:
	case 1:
		if n, err := parseGresCount(kept[0]); err == nil {
			g.Count = n
		} else if confStartsWithDigit(kept[0]) {
			return GresSpec{}, fmt.Errorf("parse Gres=%q: count %q: %v", item, kept[0], err)
		} else if kept[0] == "" {
			return GresSpec{}, fmt.Errorf("parse Gres=%q: empty field after ':'", item)
		} else {
			g.Type = kept[0]
		}
	case 2:
		if kept[0] == "" {
			return GresSpec{}, fmt.Errorf("parse Gres=%q: empty type between ':'", item)
		}
		g.Type = kept[0]
		n, err := parseGresCount(kept[1])
		if err != nil {
			return GresSpec{}, fmt.Errorf("parse Gres=%q: count %q: %v; write name:type:count, e.g. gpu:h100:8", item, kept[1], err)
		}
		g.Count = n
	default:
		return GresSpec{}, fmt.Errorf("parse Gres=%q: too many ':' fields; write name[:type][:no_consume]:count, e.g. gpu:h100:8", item)
	}
	return g, nil
}

func confStartsWithDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

// parseGresCount reads a GRES count: decimal digits and an optional K, M, G, T or P suffix that
// multiplies by 1024, 1024², ... as Slurm's gres.c does (gres.conf "Count=10G" is 10737418240,
// test39.18 test 2.22).
func parseGresCount(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty count")
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, errors.New("not a number")
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil {
		return 0, errors.New("number too large")
	}
	var shift uint
	switch strings.ToLower(s[i:]) {
	case "":
	case "k":
		shift = 10
	case "m":
		shift = 20
	case "g":
		shift = 30
	case "t":
		shift = 40
	case "p":
		shift = 50
	default:
		return 0, fmt.Errorf("unknown suffix %q; use K, M, G, T or P", s[i:])
	}
	if shift > 0 && n > (^uint64(0))>>shift {
		return 0, errors.New("number too large")
	}
	return n << shift, nil
}

// formatGresCount writes a count with the largest exact 1024-based suffix: 4294967296 is "4G".
func formatGresCount(n uint64) string {
	suffixes := []string{"", "K", "M", "G", "T", "P"}
	i := 0
	for n != 0 && n%1024 == 0 && i < len(suffixes)-1 {
		n /= 1024
		i++
	}
	return strconv.FormatUint(n, 10) + suffixes[i]
}
