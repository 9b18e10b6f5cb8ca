package config

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

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

	Budget Budget      `toml:"budget"`
	Log    LogConfig   `toml:"log"`
	Drain  DrainConfig `toml:"drain"`
	State  StateConfig `toml:"state"`
	Checks Checks      `toml:"checks"`
	Groups []Group     `toml:"group"`
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

// CheckCommon holds the keys every check has.
type CheckCommon struct {
	Enabled bool          `toml:"enabled"`
	Timeout time.Duration `toml:"timeout"`
	// Modes lists the modes the check runs in, by name (Modes); in the others it skips.
	Modes []string `toml:"modes"`
}

// Checks holds one section per check, named after its id. Every section embeds CheckCommon;
// Validate finds the sections by reflection, so a new check only adds its field here (and,
// for rules of its own, a validateSection method like IBPortsConfig's).
type Checks struct {
	GresDevices     GresDevicesConfig     `toml:"gres_devices"`
	GPUCount        GPUCountConfig        `toml:"gpu_count"`
	PCIeLink        PCIeLinkConfig        `toml:"pcie_link"`
	FabricManager   FabricManagerConfig   `toml:"fabric_manager"`
	IBPorts         IBPortsConfig         `toml:"ib_ports"`
	NCCLAllReduce   NCCLAllReduceConfig   `toml:"nccl_allreduce"`
	GPUModels       GPUModelsConfig       `toml:"gpu_models"`
	XIDErrors       XIDErrorsConfig       `toml:"xid_errors"`
	NodeInventory   NodeInventoryConfig   `toml:"node_inventory"`
	GPUMemoryErrors GPUMemoryErrorsConfig `toml:"gpu_memory_errors"`
	NVLink          NVLinkConfig          `toml:"nvlink"`
	JobLeftovers    JobLeftoversConfig    `toml:"job_leftovers"`
}

// GresDevicesConfig configures the gres_devices check.
type GresDevicesConfig struct {
	CheckCommon
}

// IBPortsConfig configures the ib_ports check.
type IBPortsConfig struct {
	CheckCommon
	MinRateGbps       float64  `toml:"min_rate_gbps"`       // 0: no minimum
	ExpectedPorts     int      `toml:"expected_ports"`      // 0: no expectation on the count
	Devices           []string `toml:"devices"`             // judge only these devices (mlx5_0) or ports (mlx5_0/1); empty: all
	ExcludeDevices    []string `toml:"exclude_devices"`     // never judge these devices or ports
	ExcludeLinkLayers []string `toml:"exclude_link_layers"` // e.g. ["Ethernet"] to leave RoCE ports out
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

// Default is the configuration built into nodecheck.
func Default() *Config {
	// Each check gets its own Modes slice: the TOML decoder reuses a slice's backing array
	// when the new value fits, so a shared slice would let one check's modes rewrite another's.
	all := allModes
	return &Config{
		Budget: Budget{Prolog: 5 * time.Second, Epilog: 30 * time.Second, Health: 50 * time.Second},
		Log:    LogConfig{Level: "info"},
		Drain:  defaultDrain(),
		State:  defaultState(),
		Checks: Checks{
			GresDevices:     GresDevicesConfig{CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: all()}},
			GPUCount:        defaultGPUCount(),
			PCIeLink:        defaultPCIeLink(),
			FabricManager:   defaultFabricManager(),
			IBPorts:         IBPortsConfig{CheckCommon: CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: all()}},
			NCCLAllReduce:   defaultNCCLAllReduce(),
			GPUModels:       defaultGPUModels(),
			XIDErrors:       defaultXIDErrors(),
			NodeInventory:   defaultNodeInventory(),
			GPUMemoryErrors: defaultGPUMemoryErrors(),
			NVLink:          defaultNVLink(),
			JobLeftovers:    defaultJobLeftovers(),
		},
	}
}

// allModes is a fresh slice of every mode for each check's default.
func allModes() []string { return modeNames() }

// maxConfigSize bounds what LoadConfig reads: a real nodecheck.toml is a few KiB, and a
// file of megabytes is a wrong --config (a log, a core file) better refused than parsed.
const maxConfigSize = 1 << 20

// LoadConfig reads, checks and decodes the nodecheck.toml at path. Running as root, it opens
// the file without following a symlink and refuses one that someone other than root could
// change (see CheckConfigFilePerms). A missing file is an error that wraps fs.ErrNotExist,
// so the caller can tell "no config" (run with Default()) from "bad config".
func LoadConfig(path string) (*Config, error) {
	euid := os.Geteuid()
	flags := os.O_RDONLY
	if euid == 0 {
		// O_NOFOLLOW: check and read the very inode opened, not whatever a link points at
		// by then. O_NONBLOCK: opening a FIFO must not hang a prolog; the type is refused below.
		flags |= syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, configSymlinkError(path)
		}
		return nil, fmt.Errorf("read nodecheck config: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read nodecheck config: %w", err)
	}
	if err := CheckConfigFilePerms(path, fi, euid); err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("read nodecheck config %s: it is a directory; give the path of the file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("read nodecheck config: %w", err)
	}
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("read nodecheck config %s: larger than %d bytes; is it the right file?", path, maxConfigSize)
	}
	cfg, err := ParseConfig(data, path)
	if err != nil {
		return nil, err
	}
	cfg.Path = path
	return cfg, nil
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
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("check nodecheck config %s: the file's owner is unknown (%T); as root nodecheck reads only a config owned by root", path, fi.Sys())
	}
	var problems, fixes []string
	if st.Uid != 0 {
		problems = append(problems, fmt.Sprintf("owned by uid %d, not root", st.Uid))
		fixes = append(fixes, "chown root "+tomlShellQuote(path))
	}
	if mode.Perm()&0o022 != 0 {
		problems = append(problems, fmt.Sprintf("mode %s lets group or others write it", mode.Perm()))
		fixes = append(fixes, "chmod go-w "+tomlShellQuote(path))
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
		fix = "give --config " + tomlShellQuote(target)
	}
	return fmt.Errorf("check nodecheck config %s: it is a symlink, which nodecheck does not follow as root (the link and its target could be changed separately); %s, or replace the link with the file", path, fix)
}

// tomlShellQuote quotes s for a command line the admin copies from an error message.
func tomlShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ParseConfig decodes nodecheck.toml from data; name (the path, or "nodecheck.toml") starts
// every error message, followed by the line. It works in three steps: a strict decode onto
// Default(), where an unknown key, a wrong type or an integer where a duration belongs is an
// error; applyDefaults; then Validate's cross-field rules, including each group's overrides.
// All problems found in a step are reported together, in file order, one per line.
func ParseConfig(data []byte, name string) (*Config, error) {
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
	var errs []tomlKeyError
	tomlCheckTable(raw, tomlConfigType, nil, &errs)
	if len(errs) > 0 {
		return nil, tomlErrors(name, lines, errs)
	}

	cfg := Default()
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
		c.Log.Level = Default().Log.Level
	}
	emptySlicesToNil(reflect.ValueOf(c).Elem())
}

func emptySlicesToNil(v reflect.Value) {
	switch v.Kind() {
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

// Validate checks the rules that span keys: the log level; absolute paths (hooks run in
// slurmd's working directory); for each check, a positive timeout when enabled, known modes,
// and a timeout no longer than the budget of any mode the check runs in; each check's own
// ranges; and for each group a valid, non-empty Slurm hostlist and overrides that are valid
// on top of the base config on their own (so a group meant to stack on another must still
// make sense alone). Errors name the keys; ParseConfig adds file and line.
func (c *Config) Validate() error {
	name := c.Path
	return tomlErrors(name, nil, c.validate())
}

func (c *Config) validate() []tomlKeyError {
	var errs []tomlKeyError
	add := func(path []string, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: path, msg: fmt.Sprintf(format, args...)})
	}
	if c.SlurmConf != "" && !strings.HasPrefix(c.SlurmConf, "/") {
		add([]string{"slurm_conf"}, " = %q: give an absolute path: Slurm hooks run in slurmd's working directory", c.SlurmConf)
	}
	if msg := promFileProblem(c.PromFile); msg != "" {
		add([]string{"prom_file"}, " = %q: %s", c.PromFile, msg)
	}
	if !slices.Contains(configLogLevels, c.Log.Level) {
		add([]string{"log", "level"}, " = %q: use %s%s", c.Log.Level, tomlOrList(configLogLevels), tomlDidYouMean(c.Log.Level, configLogLevels))
	}
	if c.Log.File != "" && !strings.HasPrefix(c.Log.File, "/") {
		add([]string{"log", "file"}, " = %q: give an absolute path: Slurm hooks run in slurmd's working directory", c.Log.File)
	}
	for _, m := range Modes() {
		if b := c.Budget.For(m); b < 0 {
			add([]string{"budget", string(m)}, " = %q: must not be negative; \"0s\" means no limit", b)
		}
	}

	errs = append(errs, c.validateDrain()...)

	base := validateChecks(&c.Checks, c.Budget, []string{"checks"})
	errs = append(errs, base...)

	for i, g := range c.Groups {
		gp := []string{"group", tomlIndex(i)}
		if strings.TrimSpace(g.Nodes) == "" {
			add(gp, ": no nodes; set nodes to the Slurm hostlist the group applies to, such as \"gpu[01-32]\"")
		} else if hl, err := slurm.ParseHostlist(g.Nodes); err != nil {
			add(append(slices.Clip(gp), "nodes"), ": %v", err)
		} else if hl.Len() == 0 {
			add(append(slices.Clip(gp), "nodes"), " = %q names no node; give a Slurm hostlist such as \"gpu[01-32]\"", g.Nodes)
		}
		merged := tomlClone(c.Checks)
		cp := append(slices.Clip(gp), "checks")
		if ge := applyGroupChecks(&merged, g.Checks, cp); len(ge) > 0 {
			errs = append(errs, ge...)
			continue
		}
		// A problem the base already has is reported once, at the base.
		for _, e := range validateChecks(&merged, c.Budget, cp) {
			if !slices.ContainsFunc(base, func(b tomlKeyError) bool {
				return b.msg == e.msg && slices.Equal(b.path[1:], e.path[len(cp):])
			}) {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// commoner is implemented by every check section through its embedded CheckCommon.
type commoner interface{ common() *CheckCommon }

func (cc *CheckCommon) common() *CheckCommon { return cc }

// sectionValidator is implemented by check sections with rules beyond CheckCommon's.
type sectionValidator interface {
	validateSection(path []string) []tomlKeyError
}

func validateChecks(cs *Checks, b Budget, prefix []string) []tomlKeyError {
	var errs []tomlKeyError
	rv := reflect.ValueOf(cs).Elem()
	for i := range rv.NumField() {
		p := append(slices.Clip(prefix), tomlKey(rv.Type().Field(i)))
		sec := rv.Field(i).Addr().Interface()
		if c, ok := sec.(commoner); ok {
			errs = append(errs, c.common().validateCommon(p, b)...)
		}
		if v, ok := sec.(sectionValidator); ok {
			errs = append(errs, v.validateSection(p)...)
		}
	}
	return errs
}

func (cc *CheckCommon) validateCommon(p []string, b Budget) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case cc.Timeout < 0:
		add("timeout", " = %q: must not be negative", cc.Timeout)
	case cc.Enabled && cc.Timeout == 0:
		add("timeout", " = \"0s\": an enabled check needs a time limit, such as \"2s\"; to turn the check off set enabled = false")
	}
	if cc.Enabled && len(cc.Modes) == 0 {
		add("modes", " is empty: list the modes the check runs in, such as [\"health\", \"manual\"]; to turn the check off set enabled = false")
	}
	names := modeNames()
	seen := map[string]bool{}
	for _, m := range cc.Modes {
		switch budget := b.For(Mode(m)); {
		case !slices.Contains(names, m):
			add("modes", ": %q is not a mode; use %s%s", m, tomlOrList(names), tomlDidYouMean(m, names))
		case seen[m]:
			add("modes", ": %q is listed twice", m)
		case cc.Enabled && budget > 0 && cc.Timeout > budget:
			add("timeout", " = %q is longer than budget.%s = %q, and the check runs in %s; lower the timeout or take %q out of modes",
				cc.Timeout, m, budget, m, m)
		}
		seen[m] = true
	}
	return errs
}

func (ib *IBPortsConfig) validateSection(p []string) []tomlKeyError {
	var errs []tomlKeyError
	add := func(key, format string, args ...any) {
		errs = append(errs, tomlKeyError{path: append(slices.Clip(p), key), msg: fmt.Sprintf(format, args...)})
	}
	if r := ib.MinRateGbps; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		add("min_rate_gbps", " = %v: give a rate in Gb/s of 0 (no minimum) or more, such as 200 for HDR or 400 for NDR", r)
	}
	if ib.ExpectedPorts < 0 {
		add("expected_ports", " = %d: give a count of 0 (no expectation) or more", ib.ExpectedPorts)
	}
	for key, list := range map[string][]string{"devices": ib.Devices, "exclude_devices": ib.ExcludeDevices} {
		for _, d := range list {
			if !validIBSelector(d) {
				add(key, ": %q is neither a device (mlx5_0) nor a port (mlx5_0/1)", d)
			}
		}
	}
	for _, ll := range ib.ExcludeLinkLayers {
		// The check compares with sysfs link_layer ignoring case, so "ethernet" works too.
		if !strings.EqualFold(ll, "InfiniBand") && !strings.EqualFold(ll, "Ethernet") {
			add("exclude_link_layers", ": %q is not a link layer; use \"InfiniBand\" or \"Ethernet\" (as in /sys/class/infiniband/*/ports/*/link_layer)", ll)
		}
	}
	// The map above has no order; errors are sorted by line later, but keep equal lines stable.
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].path[len(p)] < errs[j].path[len(p)] })
	return errs
}

// validIBSelector accepts "mlx5_0" or "mlx5_0/1": a device name under /sys/class/infiniband,
// optionally with a port number.
func validIBSelector(s string) bool {
	dev, port, hasPort := strings.Cut(s, "/")
	if dev == "" || strings.ContainsAny(dev, " \t\n") {
		return false
	}
	if hasPort {
		n, err := strconv.Atoi(port)
		return err == nil && n > 0 && !strings.HasPrefix(port, "+")
	}
	return true
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
		if errs := applyGroupChecks(&out.Checks, g.Checks, []string{"group", tomlIndex(i), "checks"}); len(errs) > 0 {
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

// applyGroupChecks decodes a group's check keys onto dst. The overrides go through TOML text so
// they follow the same rules as the base (durations as strings, strict keys) whether they
// came from a file or were built in Go.
func applyGroupChecks(dst *Checks, ov map[string]map[string]any, prefix []string) []tomlKeyError {
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
	tomlCheckTable(raw, tomlChecksType, prefix, &errs)
	if len(errs) > 0 {
		return errs
	}
	if _, err := toml.Decode(string(text), dst); err != nil {
		return []tomlKeyError{{path: prefix, msg: fmt.Sprintf(": decode the overrides: %v", err)}}
	}
	return nil
}

// Encode writes c as TOML that LoadConfig reads back to an equal Config: every key is
// written (an empty list as []), durations as strings ("5s"), and each group with only the
// keys it sets.
func (c *Config) Encode(w io.Writer) error {
	out := tomlClone(*c)
	// A nil list would be left out, and reading the output back would then bring the
	// default in its place.
	fillNilStringSlices(reflect.ValueOf(&out).Elem())
	enc := toml.NewEncoder(w)
	enc.Indent = ""
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("encode config as TOML: %w", err)
	}
	return nil
}

func fillNilStringSlices(v reflect.Value) {
	switch v.Kind() {
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
// passes on a config error (DESIGN.md section 5). If the file parses as TOML, it is the
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
// (DESIGN.md section 5). It reads the file as PeekFailClosed does: the top-level key when
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
	}
	return v
}

// ---- strict schema check ----

var (
	tomlConfigType   = reflect.TypeOf(Config{})
	tomlChecksType   = reflect.TypeOf(Checks{})
	tomlGroupType    = reflect.TypeOf(Group{})
	tomlDurationType = reflect.TypeOf(time.Duration(0))
)

type tomlField struct {
	key string
	typ reflect.Type
}

// tomlFieldsOf lists the TOML keys of a struct as the decoder sees them: tag names, embedded
// structs flattened. Group's checks are raw maps in Go but follow the Checks schema.
func tomlFieldsOf(t reflect.Type) []tomlField {
	if t == tomlGroupType {
		return []tomlField{{"nodes", reflect.TypeOf("")}, {"checks", tomlChecksType}}
	}
	var out []tomlField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("toml") == "-" {
			continue
		}
		if f.Anonymous && f.Tag.Get("toml") == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, tomlFieldsOf(f.Type)...)
			continue
		}
		out = append(out, tomlField{tomlKey(f), f.Type})
	}
	return out
}

func tomlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// tomlCheckTable compares a decoded TOML table with the struct type t and appends one tomlKeyError
// per unknown key or wrong type. Keys are visited in sorted order, so errors are stable.
func tomlCheckTable(raw map[string]any, t reflect.Type, path []string, errs *[]tomlKeyError) {
	fields := tomlFieldsOf(t)
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := append(slices.Clip(path), k)
		i := slices.IndexFunc(fields, func(f tomlField) bool { return f.key == k })
		if i < 0 {
			known := make([]string, len(fields))
			for j, f := range fields {
				known[j] = f.key
			}
			*errs = append(*errs, tomlKeyError{path: p, msg: tomlUnknownHint(k, known), unknown: true})
			continue
		}
		tomlCheckValue(raw[k], fields[i].typ, p, errs)
	}
}

func tomlCheckValue(v any, t reflect.Type, p []string, errs *[]tomlKeyError) {
	bad := func(want string) {
		*errs = append(*errs, tomlKeyError{path: p, msg: fmt.Sprintf(": want %s, got %s", want, tomlDescribe(v))})
	}
	switch {
	case t == tomlDurationType:
		switch v := v.(type) {
		case string:
			if _, err := time.ParseDuration(v); err != nil {
				*errs = append(*errs, tomlKeyError{path: p, msg: fmt.Sprintf(" = %q is not a duration; write it like \"30s\", \"1m30s\" or \"500ms\"", v)})
			}
		case int64:
			*errs = append(*errs, tomlKeyError{path: p, msg: fmt.Sprintf(" = %d: a bare number is not a duration (it would mean nanoseconds); write it as a string with a unit, such as \"%ds\"", v, v)})
		default:
			bad(`a duration string such as "30s"`)
		}
	case t.Kind() == reflect.String:
		if _, ok := v.(string); !ok {
			bad("a string")
		}
	case t.Kind() == reflect.Bool:
		if _, ok := v.(bool); !ok {
			bad("true or false")
		}
	case t.Kind() == reflect.Int:
		if _, ok := v.(int64); !ok {
			bad("a whole number")
		}
	case t.Kind() == reflect.Float64:
		switch v.(type) {
		case int64, float64:
		default:
			bad("a number")
		}
	case t.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			bad("a table")
			return
		}
		tomlCheckTable(m, t, p, errs)
	case t.Kind() == reflect.Slice:
		var elems []any
		switch v := v.(type) {
		case []any:
			elems = v
		case []map[string]any: // [[name]] tables
			for _, m := range v {
				elems = append(elems, m)
			}
		default:
			if t.Elem().Kind() == reflect.Struct {
				bad("[[" + p[len(p)-1] + "]] tables")
			} else {
				bad(`an array such as ["a", "b"]`)
			}
			return
		}
		for i, e := range elems {
			tomlCheckValue(e, t.Elem(), append(slices.Clip(p), tomlIndex(i)), errs)
		}
	default:
		// A field type the schema check does not know: a bug in this file, not in the config.
		bad("a value nodecheck cannot decode (" + t.String() + "); report this as a nodecheck bug")
	}
}

// describe names a decoded TOML value's type and shows it, cut short, for an error message.
func tomlDescribe(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("the string %q", v)
	case int64:
		return fmt.Sprintf("the integer %d", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case time.Time:
		return "a date-time"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

// tomlUnknownHint says what an unknown key was probably meant to be, or lists the keys allowed.
func tomlUnknownHint(key string, known []string) string {
	if s := tomlDidYouMean(key, known); s != "" {
		return s
	}
	if len(known) == 0 {
		return ""
	}
	return " (keys allowed here: " + strings.Join(known, ", ") + ")"
}

// tomlDidYouMean returns ` (did you mean "x"?)` for the candidate s is probably a typo of
// (text.DidYouMean), or "".
func tomlDidYouMean(s string, candidates []string) string {
	if best := text.DidYouMean(s, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

func tomlOrList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = strconv.Quote(w)
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// ---- errors with lines ----

// tomlKeyError is one problem with one key. msg follows the key: ": want ..." or " = ...",
// except for an unknown key, where it is the hint after `unknown key "K"`.
type tomlKeyError struct {
	path    []string // TOML key path; an element of an array of tables is "[N]"
	msg     string
	unknown bool
}

func (e tomlKeyError) text() string {
	if e.unknown {
		return fmt.Sprintf("unknown key %q%s", tomlKeyString(e.path), e.msg)
	}
	return tomlKeyString(e.path) + e.msg
}

// tomlMaxErrors bounds how many problems one message lists; the first ones are the useful ones.
const tomlMaxErrors = 20

// tomlErrors makes one error of errs, one problem per line, each as "name:line: text" in
// file order (or "name: text" when the line is unknown). It returns nil for no errs.
func tomlErrors(name string, lines tomlKeyLines, errs []tomlKeyError) error {
	if len(errs) == 0 {
		return nil
	}
	type located struct {
		line int
		text string
	}
	ls := make([]located, len(errs))
	for i, e := range errs {
		ls[i] = located{lines.lineOf(e.path), e.text()}
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].line < ls[j].line })
	var out []error
	for i, l := range ls {
		if i == tomlMaxErrors {
			out = append(out, fmt.Errorf("%s: and %d more problems", name, len(ls)-tomlMaxErrors))
			break
		}
		text := text.EscapeLine(l.text)
		switch {
		case name == "":
			out = append(out, errors.New(text))
		case l.line > 0:
			out = append(out, fmt.Errorf("%s:%d: %s", name, l.line, text))
		default:
			out = append(out, fmt.Errorf("%s: %s", name, text))
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

func tomlIndex(i int) string { return "[" + strconv.Itoa(i) + "]" }

// tomlKeyString writes a key path as TOML would, with array elements as [N]:
// group[1].checks.ib_ports.timeout.
func tomlKeyString(path []string) string {
	var b strings.Builder
	for i, k := range path {
		switch {
		case strings.HasPrefix(k, "[") && strings.HasSuffix(k, "]") && i > 0:
			b.WriteString(k)
			continue
		case i > 0:
			b.WriteByte('.')
		}
		if k != "" && strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "" {
			b.WriteString(k)
		} else {
			b.WriteString(strconv.Quote(k))
		}
	}
	return b.String()
}

// ---- key lines ----

// tomlKeyLines maps a key path, joined with tomlKeySep, to the line where the file first names it.
// The TOML decoder keeps key positions to itself, hence this small scanner.
type tomlKeyLines map[string]int

const tomlKeySep = "\x00"

// lineOf returns the line of path, or of its nearest enclosing table or key (a key inside
// an inline table is found at its table's line); 0 when unknown.
func (kl tomlKeyLines) lineOf(path []string) int {
	for n := len(path); n > 0; n-- {
		if l, ok := kl[strings.Join(path[:n], tomlKeySep)]; ok {
			return l
		}
	}
	return 0
}

// scanTOMLKeyLines finds the line of every table header and key in src, which is expected to
// be valid TOML (it runs after the decoder accepted it) but must not fail on anything.
// Array-of-tables elements get an "[N]" path element, counted per parent element.
func scanTOMLKeyLines(src string) tomlKeyLines {
	s := &tomlLineScanner{src: src, line: 1, lines: tomlKeyLines{}, aot: map[string]int{}}
	for s.more() {
		switch c := s.src[s.pos]; c {
		case '\n':
			s.line++
			s.pos++
		case ' ', '\t', '\r':
			s.pos++
		case '#':
			s.skipLine()
		case '[':
			s.header()
		default:
			s.keyValue()
		}
	}
	return s.lines
}

type tomlLineScanner struct {
	src   string
	pos   int
	line  int
	table []string
	lines tomlKeyLines
	aot   map[string]int // array-of-tables path -> elements seen so far
}

func (s *tomlLineScanner) more() bool { return s.pos < len(s.src) }

func (s *tomlLineScanner) record(path []string, line int) {
	k := strings.Join(path, tomlKeySep)
	if _, ok := s.lines[k]; !ok {
		s.lines[k] = line
	}
}

func (s *tomlLineScanner) skipLine() {
	for s.more() && s.src[s.pos] != '\n' {
		s.pos++
	}
}

func (s *tomlLineScanner) skipBlanks() {
	for s.more() && (s.src[s.pos] == ' ' || s.src[s.pos] == '\t') {
		s.pos++
	}
}

func (s *tomlLineScanner) header() {
	line := s.line
	s.pos++ // [
	array := s.more() && s.src[s.pos] == '['
	if array {
		s.pos++
	}
	keys, ok := s.key()
	s.skipLine() // ] or ]], and any comment
	if !ok {
		return
	}
	var path []string
	for i, k := range keys {
		path = append(path, k)
		s.record(path, line)
		name := strings.Join(path, tomlKeySep)
		if array && i == len(keys)-1 {
			n := s.aot[name]
			s.aot[name] = n + 1
			path = append(path, tomlIndex(n))
			s.record(path, line)
		} else if n, ok := s.aot[name]; ok && n > 0 {
			path = append(path, tomlIndex(n-1))
		}
	}
	s.table = path
}

func (s *tomlLineScanner) keyValue() {
	line := s.line
	keys, ok := s.key()
	if !ok || !s.more() || s.src[s.pos] != '=' {
		s.skipLine()
		return
	}
	s.pos++
	path := slices.Clip(s.table)
	for _, k := range keys {
		path = append(path, k)
		s.record(path, line)
	}
	s.skipValue()
}

// key reads a dotted key (bare, "basic" or 'literal' parts) and the blanks after it.
func (s *tomlLineScanner) key() ([]string, bool) {
	var keys []string
	for {
		s.skipBlanks()
		k, ok := s.simpleKey()
		if !ok {
			return nil, false
		}
		keys = append(keys, k)
		s.skipBlanks()
		if s.more() && s.src[s.pos] == '.' {
			s.pos++
			continue
		}
		return keys, true
	}
}

func (s *tomlLineScanner) simpleKey() (string, bool) {
	if !s.more() {
		return "", false
	}
	switch s.src[s.pos] {
	case '"':
		s.pos++
		var b strings.Builder
		for s.more() {
			c := s.src[s.pos]
			switch {
			case c == '"':
				s.pos++
				return b.String(), true
			case c == '\n':
				return "", false
			case c == '\\':
				r, _, tail, err := strconv.UnquoteChar(s.src[s.pos:], '"')
				if err != nil {
					return "", false
				}
				b.WriteRune(r)
				s.pos = len(s.src) - len(tail)
			default:
				b.WriteByte(c)
				s.pos++
			}
		}
		return "", false
	case '\'':
		end := strings.IndexAny(s.src[s.pos+1:], "'\n")
		if end < 0 || s.src[s.pos+1+end] != '\'' {
			return "", false
		}
		k := s.src[s.pos+1 : s.pos+1+end]
		s.pos += end + 2
		return k, true
	}
	start := s.pos
	for s.more() {
		c := s.src[s.pos]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			break
		}
		s.pos++
	}
	return s.src[start:s.pos], s.pos > start
}

// skipValue moves past a value, which can span lines inside brackets, braces (TOML 1.1
// inline tables) and multi-line strings, and stops at the newline that ends it.
func (s *tomlLineScanner) skipValue() {
	depth := 0
	for s.more() {
		switch c := s.src[s.pos]; c {
		case '\n':
			if depth <= 0 {
				return
			}
			s.line++
			s.pos++
		case '#':
			s.skipLine()
		case '"', '\'':
			s.skipString(c)
		case '[', '{':
			depth++
			s.pos++
		case ']', '}':
			depth--
			s.pos++
		default:
			s.pos++
		}
	}
}

func (s *tomlLineScanner) skipString(q byte) {
	triple := strings.Repeat(string(q), 3)
	if strings.HasPrefix(s.src[s.pos:], triple) {
		s.pos += 3
		for s.more() {
			c := s.src[s.pos]
			switch {
			case c == '\\' && q == '"':
				s.pos++ // the escaped byte is looked at next, so a newline after \ is counted
				if s.more() && s.src[s.pos] != '\n' {
					s.pos++
				}
			case c == '\n':
				s.line++
				s.pos++
			case strings.HasPrefix(s.src[s.pos:], triple):
				s.pos += 3
				// Up to two more quotes belong to the string: """a""""" ends in two quotes.
				for i := 0; i < 2 && s.more() && s.src[s.pos] == q; i++ {
					s.pos++
				}
				return
			default:
				s.pos++
			}
		}
		return
	}
	s.pos++
	for s.more() {
		c := s.src[s.pos]
		switch {
		case c == '\n':
			return // unterminated: the caller counts the newline
		case c == '\\' && q == '"':
			s.pos++
			if s.more() && s.src[s.pos] != '\n' {
				s.pos++
			}
		case c == q:
			s.pos++
			return
		default:
			s.pos++
		}
	}
}
