package slurm

// cgroup.conf: the keys lint needs to tell whether jobs sharing a node are fenced from each
// other's GPUs (ConstrainDevices), read with the syntax of confscan.go. cgroup.conf(5):
// "ConstrainDevices=<yes|no> If configured to "yes" then constrain the job's allowed devices
// based on GRES allocated resources ... The default value is "no"."

import (
	"fmt"
	"strings"
)

// CgroupConf is what nodecheck reads from cgroup.conf.
type CgroupConf struct {
	Path string // the file named to LoadCgroupConf or ParseCgroupConf
	// Settings holds every key by its lower-case name, with its last value (Slurm keeps the
	// last of a key given twice).
	Settings map[string]Setting
	// Problems lists syntax and value errors, in file order.
	Problems []Problem
}

// LoadCgroupConf reads and parses cgroup.conf at path through read. The error is only for a
// file (or Include) that cannot be read; a missing file satisfies errors.Is(err,
// fs.ErrNotExist), which callers take as Slurm does: every key at its default.
func LoadCgroupConf(path string, read ReadFileFunc) (*CgroupConf, error) {
	data, err := read(path)
	if err != nil {
		return nil, fmt.Errorf("read cgroup.conf: %w", err)
	}
	return ParseCgroupConf(data, path, read)
}

// ParseCgroupConf parses cgroup.conf data read from file; read serves Include lines (nil
// when there are none). Its error is only for an Include that cannot be read.
func ParseCgroupConf(data []byte, file string, read ReadFileFunc) (*CgroupConf, error) {
	c := &CgroupConf{Path: file, Settings: map[string]Setting{}}
	r := &confReader{read: read, problems: &c.Problems}
	err := r.parse(data, file, func(l confLine) {
		for _, f := range l.Fields {
			if !f.HasEq {
				r.problem(SeverityError, l.Pos, "%q is not Key=Value: Slurm refuses the file", f.Key)
				continue
			}
			c.Settings[strings.ToLower(f.Key)] = Setting{Key: f.Key, Value: f.Value, Pos: l.Pos}
		}
	})
	if err != nil {
		return nil, err
	}
	if s, ok := c.Setting("ConstrainDevices"); ok {
		if _, valid := parseSlurmBool(s.Value); !valid {
			r.problem(SeverityError, s.Pos, "ConstrainDevices=%s is not yes or no: slurmd refuses the file (\"%s\" is not a valid option for \"ConstrainDevices\")", s.Value, s.Value)
		}
	}
	return c, nil
}

// Setting returns the key (any case) as last written, and whether it was.
func (c *CgroupConf) Setting(key string) (Setting, bool) {
	if c == nil {
		return Setting{}, false
	}
	s, ok := c.Settings[strings.ToLower(key)]
	return s, ok
}

// ConstrainDevices reports whether cgroup.conf constrains devices: ConstrainDevices set to a
// true value. Unset, a false value, an invalid value and no cgroup.conf (c nil) are all
// false: Slurm's default is "no".
func (c *CgroupConf) ConstrainDevices() bool {
	s, ok := c.Setting("ConstrainDevices")
	if !ok {
		return false
	}
	v, _ := parseSlurmBool(s.Value)
	return v
}

// parseSlurmBool reads a boolean as Slurm's s_p_handle_boolean does (src/common/
// parse_value.c): yes, up, true, 1 and no, down, false, 0, in any case.
func parseSlurmBool(v string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "up", "true", "1":
		return true, true
	case "no", "down", "false", "0":
		return false, true
	}
	return false, false
}
