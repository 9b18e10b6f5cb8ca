package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/nodecheck/nodecheck/config/files"
	"github.com/nodecheck/nodecheck/config/slurm"
	"github.com/nodecheck/nodecheck/config/text"
)

// DefaultConfigPath is where nodecheck looks for its own configuration.
const DefaultConfigPath = "/etc/nodecheck/nodecheck.toml"

// Config is nodecheck.toml. Decoding starts from Default(), so a key absent from the file keeps
// its built-in default.
type Config struct {
	// Path is the file the config was read from; empty for the built-in defaults.
	Path string `toml:"-"`

	FailClosed         bool   `toml:"fail_closed"`           // an invalid config fails prolog/epilog instead of passing
	StopOnFirstFailure bool   `toml:"stop_on_first_failure"` // skip the remaining checks after the first fail
	ErrorIsFailure     bool   `toml:"error_is_failure"`      // a check that could not decide (status error) makes the node unhealthy
	SlurmConf          string `toml:"slurm_conf"`            // slurm.conf path; empty: found as Slurm does
	PromFile           string `toml:"prom_file"`             // Prometheus textfile written after every run; empty: none

	Budget Budget       `toml:"budget"`
	Log    LogConfig    `toml:"log"`
	Drain  DrainConfig  `toml:"drain"`
	Repair RepairConfig `toml:"repair"`
	State  StateConfig  `toml:"state"`
	// Validate is [validate]: `nodecheck validate`'s tools, level budgets, floors and expiry.
	Validation ValidateConfig `toml:"validate"`
	// Checks holds one section per check, in its schema's order (see Schema).
	Checks Checks  `toml:"checks,omitempty"`
	Groups []Group `toml:"group"`
	// SiteChecks are the site's own commands ([[site_check]]), run by the check site_checks.
	SiteChecks []SiteCheck `toml:"site_check,omitempty"`
}

// Budget is the wall-clock limit of a whole run per mode; zero means none.
type Budget struct {
	Prolog time.Duration `toml:"prolog"`
	Epilog time.Duration `toml:"epilog"`
	Health time.Duration `toml:"health"`
	Manual time.Duration `toml:"manual"`
}

// LogConfig says where structured logs go.
type LogConfig struct {
	Level    string `toml:"level"`    // debug, info, warn, error
	File     string `toml:"file"`     // append JSON lines to this file as well as stderr
	Journald bool   `toml:"journald"` // also send to the systemd journal
}

// Group overrides check settings for the nodes its Slurm hostlist matches.
type Group struct {
	Nodes string `toml:"nodes"` // Slurm hostlist, e.g. "gpu[01-32]"
	// Checks holds only the keys the group sets, by check id then key, as TOML values
	// ("30s" for a duration): a key the group leaves out must not override the base, which a
	// decoded Checks struct could not tell from a zero. ForNode applies them.
	Checks map[string]map[string]any `toml:"checks"`
}

// configLogLevels are the levels zerolog is configured with.
var configLogLevels = []string{"debug", "info", "warn", "error"}

// DefaultBudget is the built-in budget of each mode: what a run has before its config is
// read (the process watchdog's first arming), and what a config that sets none gets.
func DefaultBudget() Budget {
	return Budget{Prolog: 5 * time.Second, Epilog: 30 * time.Second, Health: 50 * time.Second}
}

// Default is the configuration built into nodecheck, with the sections of schema holding
// their checks' defaults (checks.Schema() for nodecheck's checks).
func Default(schema Schema) *Config {
	return &Config{
		Budget:     DefaultBudget(),
		Log:        LogConfig{Level: "info"},
		Drain:      defaultDrain(),
		Repair:     defaultRepair(),
		State:      defaultState(),
		Validation: defaultValidate(),
		Checks:     newChecks(schema),
	}
}

// maxConfigSize bounds what LoadConfig reads: a real nodecheck.toml is a few KiB, and a
// file of megabytes is a wrong --config (a log, a core file) better refused than parsed.
const maxConfigSize = 1 << 20

// LoadConfig is LoadConfigData without a deadline, for callers that need only the config.
// schema is the [checks] table the file may have (checks.Schema()).
func LoadConfig(path string, schema Schema) (*Config, error) {
	cfg, _, err := LoadConfigData(context.Background(), path, schema)
	return cfg, err
}

// LoadConfigData reads (ReadConfigFile), checks and decodes the nodecheck.toml at path. A
// missing file is an error that wraps fs.ErrNotExist, so the caller can tell "no config" (run
// with Default) from "bad config". When the file was read but does not parse or validate,
// it also returns its bytes, for PeekFailClosed and PeekPromFile; a file refused before
// reading gives none. schema is the [checks] table the file may have (checks.Schema()).
func LoadConfigData(ctx context.Context, path string, schema Schema) (*Config, []byte, error) {
	data, err := ReadConfigFile(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := ParseConfig(data, path, schema)
	if err != nil {
		return nil, data, err
	}
	cfg.Path = path
	return cfg, nil, nil
}

// ReadConfigFile reads the nodecheck.toml at path through files.Read: a regular file only (a
// FIFO, /dev/zero or a directory is refused at once, without blocking on it or reading it),
// at most maxConfigSize bytes, and given up when ctx is done (a config on a hung NFS mount).
// Running as root, it opens the file without following a symlink and refuses one that
// someone other than root could change (CheckConfigFilePerms, applied to the opened file).
func ReadConfigFile(ctx context.Context, path string) ([]byte, error) {
	euid := os.Geteuid()
	data, err := files.Read(ctx, path, files.Limits{
		MaxBytes: maxConfigSize,
		// O_NOFOLLOW as root: check and read the very inode opened, not whatever a link
		// points at by then.
		FollowSymlinks: euid != 0,
		Check:          func(fi fs.FileInfo) error { return CheckConfigFilePerms(path, fi, euid) },
	})
	if err != nil {
		return nil, configReadError(path, err)
	}
	return data, nil
}

// configReadError says why the config at path could not be read, with the fix where there
// is one. CheckConfigFilePerms's own errors pass as they are.
func configReadError(path string, err error) error {
	pe, ok := err.(*fs.PathError)
	switch {
	case !ok:
		return err
	case errors.Is(err, files.ErrSymlink):
		return configSymlinkError(path)
	case errors.Is(err, files.ErrNotRegular):
		return fmt.Errorf("read nodecheck config %s: %w; give the path of the file", path, pe.Err)
	}
	return fmt.Errorf("read nodecheck config %s: %w", path, pe.Err)
}

// CheckConfigFilePerms refuses, when euid is 0, a config file that anyone but root could
// have written: one not owned by root, one writable by group or others, a symlink (whose
// target and the directories on the way are not checked) or anything but a regular file.
// nodecheck runs as root and the config names programs it runs and files it writes, so such
// a file would hand root to whoever can edit it. For any other euid it returns nil: the
// process has no privilege a config could borrow. fi comes from Lstat or from Stat on the
// opened file; for the owner it must carry a *syscall.Stat_t (any os.FileInfo on Linux does).
func CheckConfigFilePerms(path string, fi os.FileInfo, euid int) error {
	if euid != 0 {
		return nil
	}
	mode := fi.Mode()
	if mode&os.ModeSymlink != 0 {
		return configSymlinkError(path)
	}
	if !mode.IsRegular() && !mode.IsDir() { // a directory gets its own message from LoadConfig
		return fmt.Errorf("check nodecheck config %s: mode %s is not a regular file; as root nodecheck reads its config only from a plain file", path, mode)
	}
	problems, fixes, ok := files.RootOnly(path, fi)
	if !ok {
		return fmt.Errorf("check nodecheck config %s: the file's owner is unknown (%T); as root nodecheck reads only a config owned by root", path, fi.Sys())
	}
	if len(problems) > 0 {
		return fmt.Errorf("check nodecheck config %s: %s, and nodecheck runs as root; run: %s",
			path, strings.Join(problems, " and "), strings.Join(fixes, " && "))
	}
	return nil
}

func configSymlinkError(path string) error {
	fix := "give --config the link's target"
	if target, err := os.Readlink(path); err == nil {
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		fix = "give --config " + files.ShellQuote(target)
	}
	return fmt.Errorf("check nodecheck config %s: it is a symlink, which nodecheck does not follow as root (the link and its target could be changed separately); %s, or replace the link with the file", path, fix)
}

// ParseConfig decodes nodecheck.toml from data; name (the path, or "nodecheck.toml") starts
// every error message, followed by the line; schema is the [checks] table the file may have
// (checks.Schema()). It works in three steps: a strict decode onto Default(schema), where an
// unknown key, a wrong type or an integer where a duration belongs is an error;
// applyDefaults; then Validate's cross-field rules, including each group's overrides. All
// problems found in a step are reported together, in file order, one per line.
func ParseConfig(data []byte, name string, schema Schema) (*Config, error) {
	if name == "" {
		name = "nodecheck.toml"
	}
	src := string(data)
	var raw map[string]any
	if _, err := toml.Decode(src, &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s", name, pe.Position.Line, text.EscapeLine(pe.Message))
		}
		return nil, fmt.Errorf("%s: parse TOML: %s", name, text.EscapeLine(err.Error()))
	}
	lines := scanTOMLKeyLines(src)

	// The raw table is checked against the Go types before decoding so that every mistake is
	// known by its key, and thus its line: the decoder's own type errors carry the line only
	// inside their text, and it would take `timeout = 5` as five nanoseconds.
	cfg := Default(schema)
	var errs []tomlKeyError
	shapeOf(cfg.Checks).checkTable(raw, tomlConfigType, nil, &errs)
	if len(errs) > 0 {
		return nil, tomlErrors(name, lines, errs)
	}

	md, err := toml.Decode(src, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: decode: %s", name, text.EscapeLine(err.Error()))
	}
	// Unreachable while tomlCheckTable mirrors the decoder; kept so that strictness never rests
	// on one mechanism alone.
	for _, k := range md.Undecoded() {
		errs = append(errs, tomlKeyError{path: k, msg: tomlUnknownHint(k[len(k)-1], nil), unknown: true})
	}
	if len(errs) > 0 {
		return nil, tomlErrors(name, lines, errs)
	}

	cfg.applyDefaults()
	if errs := cfg.validate(); len(errs) > 0 {
		return nil, tomlErrors(name, lines, errs)
	}
	return cfg, nil
}

// applyDefaults fills in what the file set to an empty value that means "the default".
// Keys absent from the file already hold their defaults, as decoding starts from Default().
// An empty list is stored as nil, as in Default(), so that a config compares equal to another
// however its empty lists were written.
func (c *Config) applyDefaults() {
	if c.Log.Level == "" {
		c.Log.Level = Default(nil).Log.Level
	}
	emptySlicesToNil(reflect.ValueOf(c).Elem())
}

func emptySlicesToNil(v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			emptySlicesToNil(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				emptySlicesToNil(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 && !v.IsNil() {
			v.Set(reflect.Zero(v.Type()))
		}
		for i := range v.Len() {
			emptySlicesToNil(v.Index(i))
		}
	}
}

// ForNode returns the effective config for the node called name: the base, then the
// overrides of every group whose hostlist contains name, in file order, so a later group
// wins. The result has no groups (they are applied) and shares nothing with c. It is
// validated again, as overrides of several groups can combine into something invalid.
func (c *Config) ForNode(name string) (*Config, error) {
	out := tomlClone(*c)
	out.Groups = nil
	var applied []string
	for i, g := range c.Groups {
		hl, err := slurm.ParseHostlist(g.Nodes)
		if err != nil {
			return nil, fmt.Errorf("config for node %s: group[%d].nodes: %w", name, i, err)
		}
		if !hl.Contains(name) {
			continue
		}
		if errs := applyGroupChecks(out.Checks, g.Checks, []string{"group", tomlIndex(i), "checks"}); len(errs) > 0 {
			return nil, fmt.Errorf("config for node %s: %w", name, tomlErrors(c.Path, nil, errs))
		}
		applied = append(applied, fmt.Sprintf("group[%d] (nodes = %q)", i, g.Nodes))
	}
	if errs := out.validate(); len(errs) > 0 {
		with := ""
		if len(applied) > 0 {
			with = ", with " + strings.Join(applied, " and ") + " applied"
		}
		return nil, fmt.Errorf("config for node %s%s: %w", name, with, tomlErrors(c.Path, nil, errs))
	}
	return &out, nil
}

// WithChecks returns c with the check keys of ov set over it, as a [[group]] that matches
// every node would set them (the same rules: strict keys, durations as strings), validated
// again. from names where ov came from, for the errors. c is left as it was.
func (c *Config) WithChecks(ov map[string]map[string]any, from string) (*Config, error) {
	out := tomlClone(*c)
	if errs := applyGroupChecks(out.Checks, ov, []string{"checks"}); len(errs) > 0 {
		return nil, tomlErrors(from, nil, errs)
	}
	if errs := out.validate(); len(errs) > 0 {
		return nil, tomlErrors(from, nil, errs)
	}
	return &out, nil
}

// applyGroupChecks decodes a group's check keys onto dst. The overrides go through TOML text so
// they follow the same rules as the base (durations as strings, strict keys) whether they
// came from a file or were built in Go.
func applyGroupChecks(dst Checks, ov map[string]map[string]any, prefix []string) []tomlKeyError {
	if len(ov) == 0 {
		return nil
	}
	text, err := toml.Marshal(ov)
	if err != nil {
		return []tomlKeyError{{path: prefix, msg: fmt.Sprintf(": encode the overrides as TOML: %v", err)}}
	}
	var raw map[string]any
	if _, err := toml.Decode(string(text), &raw); err != nil {
		return []tomlKeyError{{path: prefix, msg: fmt.Sprintf(": decode the overrides: %v", err)}}
	}
	var errs []tomlKeyError
	shapeOf(dst).checkTable(raw, tomlChecksType, prefix, &errs)
	if len(errs) > 0 {
		return errs
	}
	if err := dst.UnmarshalTOML(raw); err != nil {
		return []tomlKeyError{{path: prefix, msg: fmt.Sprintf(": decode the overrides: %v", err)}}
	}
	return nil
}

// Encode writes c as TOML that LoadConfig reads back to an equal Config: every key is
// written (an empty list as []), durations as strings ("5s"), the check sections in their
// schema's order, and each group with only the keys it sets.
func (c *Config) Encode(w io.Writer) error {
	out := tomlClone(*c)
	// A nil list would be left out, and reading the output back would then bring the
	// default in its place.
	fillNilStringSlices(reflect.ValueOf(&out).Elem())
	// The encoder writes a struct's fields in order but a map's keys sorted: the sections,
	// whose order is the schema's, are written one by one between the tables before them
	// and the groups, as the encoder would write a struct of them.
	sections, groups := out.Checks, out.Groups
	out.Checks, out.Groups = nil, nil
	var buf bytes.Buffer
	if err := tomlEncode(&buf, out); err != nil {
		return err
	}
	buf.WriteString("\n[checks]\n")
	for _, s := range sections {
		buf.WriteString("[checks." + tomlKeyString([]string{s.ID}) + "]\n")
		if err := tomlEncode(&buf, s.Section); err != nil {
			return err
		}
	}
	if len(groups) > 0 {
		buf.WriteString("\n")
		if err := tomlEncode(&buf, struct {
			Groups []Group `toml:"group"`
		}{groups}); err != nil {
			return err
		}
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// tomlEncode writes v as TOML without indentation.
func tomlEncode(w io.Writer, v any) error {
	enc := toml.NewEncoder(w)
	enc.Indent = ""
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode config as TOML: %w", err)
	}
	return nil
}

func fillNilStringSlices(v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			fillNilStringSlices(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillNilStringSlices(v.Field(i))
			}
		}
	case reflect.Slice:
		if k := v.Type().Elem().Kind(); v.IsNil() && (k == reflect.String || k == reflect.Int) {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		}
		for i := range v.Len() {
			fillNilStringSlices(v.Index(i))
		}
	}
}

// PeekFailClosed reads only fail_closed from a config that may be invalid, for the one
// decision that must be made without a valid config: whether a prolog or epilog fails or
// passes on a config error (docs/output.md). If the file parses as TOML, it is the
// top-level fail_closed when that is the boolean true. If it does not parse, it is true only
// when a line `fail_closed = true` comes before the first table header, so a typo elsewhere
// does not undo an admin's choice to fail closed. Anything else (nil data, no key, a
// non-boolean) is false, the default: a broken config must not drain the fleet unless the
// admin asked for that in words nodecheck can still read.
func PeekFailClosed(data []byte) bool {
	var v struct {
		FailClosed any `toml:"fail_closed"`
	}
	if _, err := toml.Decode(string(data), &v); err == nil {
		b, _ := v.FailClosed.(bool)
		return b
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			return false
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(key) != "fail_closed" {
			continue
		}
		val, _, _ = strings.Cut(val, "#")
		return strings.TrimSpace(val) == "true"
	}
	return false
}

// promFileProblem says what is wrong with a prom_file value, or "" when it is empty or usable.
// Hooks run in slurmd's working directory, so the path must be absolute; node_exporter's
// textfile collector reads only files named *.prom, so any other name would never be scraped.
func promFileProblem(p string) string {
	switch {
	case p == "":
		return ""
	case !strings.HasPrefix(p, "/"):
		return "give an absolute path: Slurm hooks run in slurmd's working directory"
	case !strings.HasSuffix(p, ".prom") || strings.HasSuffix(p, "/.prom"):
		return "give a file name ending in .prom, such as \"/var/lib/node_exporter/textfile_collector/nodecheck.prom\": node_exporter's textfile collector reads only those"
	}
	return ""
}

// PeekPromFile reads only prom_file from a config that may be invalid, so that a run that
// cannot use its config can still write nodecheck_config_error = 1 where node_exporter looks
// (docs/output.md). It reads the file as PeekFailClosed does: the top-level key when
// the file parses as TOML, else a line `prom_file = "..."` before the first table header.
// It returns "" when there is no such key or its value is not a usable prom_file.
func PeekPromFile(data []byte) string {
	var v struct {
		PromFile any `toml:"prom_file"`
	}
	if _, err := toml.Decode(string(data), &v); err != nil {
		v.PromFile = nil
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "[") {
				break
			}
			if key, _, ok := strings.Cut(line, "="); !ok || strings.TrimSpace(key) != "prom_file" {
				continue
			}
			// The line alone is valid TOML when the value is; a broken value gives nothing.
			_, _ = toml.Decode(line, &v)
			break
		}
	}
	p, _ := v.PromFile.(string)
	if p == "" || promFileProblem(p) != "" {
		return ""
	}
	return p
}

// tomlClone returns a deep copy of a config value (slices, maps and interfaces copied), so that
// decoding onto the copy, which reuses slices in place, cannot reach the original.
func tomlClone[T any](v T) T {
	return tomlCloneValue(reflect.ValueOf(v)).Interface().(T)
}

func tomlCloneValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			if n.Field(i).CanSet() {
				n.Field(i).Set(tomlCloneValue(v.Field(i)))
			}
		}
		return n
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(tomlCloneValue(v.Index(i)))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			n.SetMapIndex(it.Key(), tomlCloneValue(it.Value()))
		}
		return n
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type()).Elem()
		n.Set(tomlCloneValue(v.Elem()))
		return n
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(tomlCloneValue(v.Elem()))
		return n
	}
	return v
}
