package main

import (
	"fmt"
	"strings"
)

// maxNodeName bounds a node name: NAME.json (the longest file the sweep names after a node)
// must fit a file name's 255 bytes (NAME_MAX, limits.h). Linux host names are at most 64
// (HOST_NAME_MAX), so no real node comes near it.
const maxNodeName = 250

// checkNodeName refuses a node name that is not a plain host name, before it becomes a path
// (OUT/NAME.json, OUT/NAME.err, OUT/NAME.sh, sbatch --output) or an argument: letters, digits,
// '-', '_' and '.', as in RFC 1123 host names plus the underscore slurm.conf(5) NodeName
// allows; dot-separated labels of 1 to 63 characters, so no "..", no leading or trailing dot;
// no leading '-', which a program would read as an option; at most maxNodeName characters.
// A name from sinfo is Slurm's, but a controller's configuration is not this host's to trust:
// "../../x" would write outside --out.
func checkNodeName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty")
	case len(name) > maxNodeName:
		return fmt.Errorf("%d characters, more than %d", len(name), maxNodeName)
	case name[0] == '-':
		return fmt.Errorf("starts with '-'")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("character %q at %d: want letters, digits, '-', '_' and '.'", c, i+1)
		}
	}
	for _, label := range strings.Split(name, ".") {
		switch {
		case label == "":
			return fmt.Errorf("an empty label (a leading, trailing or doubled '.')")
		case len(label) > 63:
			return fmt.Errorf("a label of %d characters, more than 63", len(label))
		}
	}
	return nil
}
