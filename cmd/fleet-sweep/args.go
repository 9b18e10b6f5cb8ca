package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nodecheck/nodecheck/config/slurm"
)

// splitArgs splits s into words the way a POSIX shell splits a command line, without any
// expansion: blanks separate words; single quotes keep everything up to the next single quote;
// double quotes keep everything but \" \\ \$ and \` , which lose their backslash; outside
// quotes a backslash keeps the next character. So --args "--snapshot '/data/my node'" passes
// one path with a space.
func splitArgs(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // a word has started (an empty quoted word counts)
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("%q: unterminated single quote", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("%q: unterminated double quote", s)
			}
			in = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("%q: backslash at the end", s)
			}
			i++
			cur.WriteByte(s[i])
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// shellQuote quotes one word for /bin/sh when it needs it: in single quotes, each single quote
// inside closed, escaped and reopened.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// nodeArgs is one --args-for NODES=ARGS: extra nodecheck arguments for some nodes.
type nodeArgs struct {
	expr  string   // NODES as given: a hostlist expression
	nodes []string // NODES expanded
	args  []string // ARGS split
}

// parseNodeArgs reads "NODES=ARGS"; NODES is a hostlist expression ("n1", "gpu[01-04]"), which
// never contains '=', so the first '=' ends it.
func parseNodeArgs(v string) (nodeArgs, error) {
	expr, rest, ok := strings.Cut(v, "=")
	expr = strings.TrimSpace(expr)
	if !ok || expr == "" {
		return nodeArgs{}, fmt.Errorf("%q: want NODES=ARGS, e.g. n1='--snapshot /data/n1'", v)
	}
	nodes, err := slurm.ExpandHostlist(expr)
	if err != nil {
		return nodeArgs{}, err
	}
	if len(nodes) == 0 {
		return nodeArgs{}, fmt.Errorf("%q: no node names before '='", v)
	}
	args, err := splitArgs(rest)
	if err != nil {
		return nodeArgs{}, err
	}
	return nodeArgs{expr: expr, nodes: nodes, args: args}, nil
}

// errUsage marks an error in the command line: exit 2 with a hint to -h.
var errUsage = errors.New("usage")

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
func (e usageError) Is(t error) bool {
	return t == errUsage
}

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }
