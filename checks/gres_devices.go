package checks

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
	"github.com/nodecheck/nodecheck/config/slurm"
)

const idGresDevices = "gres_devices"

// The ways gres_devices fails: its rows of the remedy table (Faults).
const (
	faultGresNoDriver  fault = "gres_devices/driver_files_missing"
	faultGresMissing   fault = "gres_devices/file_missing"
	faultGresWrongFile fault = "gres_devices/file_wrong"
)

// nvidiaMajor is the character major of /dev/nvidia[0-9]* and /dev/nvidiactl, fixed by the
// NVIDIA driver (see /proc/devices: "195 nvidia-frontend").
const nvidiaMajor = 195

// nvidiactlMinor is /dev/nvidiactl's minor: 255.
const nvidiactlMinor = 255

// gresDevices checks that the device files gres.conf lists for this node exist as character
// devices, with the NVIDIA major and the minor their name promises.
type gresDevices struct{}

func (gresDevices) ID() string { return idGresDevices }

func (gresDevices) Description() string {
	return "gres.conf File= devices for this node exist as character devices (nvidiaN: major 195, minor N)"
}

// gresDevicesConfig is [checks.gres_devices]: no keys of its own, gres.conf is the
// expectation.
type gresDevicesConfig struct {
	config.CheckCommon
}

func (gresDevices) Section() config.Section {
	return &gresDevicesConfig{config.CheckCommon{Enabled: true, Timeout: 2 * time.Second, Modes: config.ModeNames()}}
}

func (gresDevices) Run(ctx context.Context, env *Env) Result {
	gresPath, err := env.Slurm.GresPath(ctx)
	if err != nil {
		return Result{Status: StatusError, Summary: "cannot find slurm.conf: " + err.Error(), Err: err}
	}
	gc, err := env.Slurm.Gres(ctx)
	if isNotExist(err) {
		return Result{Status: StatusSkip, Summary: "no gres.conf at " + gresPath}
	}
	if err != nil {
		return Result{Status: StatusError, Summary: "read gres.conf: " + err.Error(), Err: err}
	}
	ng := gc.ForNode(env.Node)
	confErrs := gresConfErrors(gc.Problems, env.Node)
	wants := gresWants(ng)
	if len(wants) == 0 {
		return gresNothingToCheck(env.Node, gresPath, ng.AutoDetect, confErrs)
	}
	found := make([]devAnswer, len(wants))
	for i, w := range wants {
		dn, err := env.Facts.DevNode(ctx, w.file)
		if ctx.Err() != nil {
			return Result{Status: StatusFail, Summary: "timed out reading " + w.file, Err: ctx.Err(), Remedy: remedyOf(faultTimeout)}
		}
		found[i] = devAnswer{dn, err}
	}
	return judgeGresDevices(wants, found, confErrs)
}

// gresWant is one device file gres.conf lists for the node.
type gresWant struct {
	file  string
	where string // gres.conf:LINE
	minor int    // -1: no minor expected from the name
	// blockOK is true for a GRES other than gpu (a Name=nvme scratch disk): slurmd takes
	// block devices as well as character devices (src/interfaces/gres.c: S_ISBLK is
	// DEV_TYPE_BLOCK).
	blockOK bool
}

// devAnswer is what the node says of one device file.
type devAnswer struct {
	dn  node.DevNode
	err error
}

// gresConfErrors lists the gres.conf problems Slurm would refuse that may concern the node:
// without the line, the check cannot tell what should be there, so it says error, not ok.
func gresConfErrors(problems []slurm.Problem, nodeName string) []Detail {
	var out []Detail
	for _, p := range problems {
		if p.Severity == slurm.SeverityError && problemConcerns(p, nodeName) {
			out = append(out, Detail{Device: fmt.Sprintf("%s:%d", p.File, p.Line), Status: StatusError, Message: p.Message})
		}
	}
	return out
}

// gresWants lists the node's File= and MultipleFiles= device files, each once, and
// /dev/nvidiactl where GPU files are listed: every NVIDIA GPU needs it.
func gresWants(ng slurm.NodeGres) []gresWant {
	var wants []gresWant
	seen := map[string]bool{}
	gpuFiles := false
	for _, l := range ng.Lines {
		for _, f := range append(append([]string(nil), l.Files...), l.MultipleFiles...) {
			if seen[f] {
				continue
			}
			seen[f] = true
			wants = append(wants, gresWant{file: f, where: l.Pos.String(), minor: nvidiaMinorFromName(f),
				blockOK: !strings.EqualFold(l.Name, "gpu") && nvidiaMinorFromName(f) < 0})
			if strings.EqualFold(l.Name, "gpu") && nvidiaMinorFromName(f) >= 0 {
				gpuFiles = true
			}
		}
	}
	if gpuFiles && !seen["/dev/nvidiactl"] {
		wants = append(wants, gresWant{file: "/dev/nvidiactl", where: "needed by every NVIDIA GPU", minor: nvidiactlMinor})
	}
	return wants
}

// gresNothingToCheck is the result for a node gres.conf lists no device file for.
func gresNothingToCheck(nodeName, gresPath, autoDetect string, confErrs []Detail) Result {
	switch {
	case len(confErrs) > 0:
		return Result{Status: StatusError, Summary: "gres.conf: " + confErrs[0].Message + moreSuffix(len(confErrs)-1), Details: confErrs}
	case autoDetect != "" && autoDetect != "off":
		return Result{Status: StatusSkip, Summary: fmt.Sprintf("gres.conf uses AutoDetect=%s for %s: no File= entries to check", autoDetect, nodeName)}
	}
	return Result{Status: StatusSkip, Summary: fmt.Sprintf("no gres.conf entry with File= for node %s in %s", nodeName, gresPath)}
}

// judgeGresDevices judges each wanted device file by what the node said of it (found, in the
// same order), with the gres.conf lines that could not be read.
func judgeGresDevices(wants []gresWant, found []devAnswer, confErrs []Detail) Result {
	res := Result{Status: StatusOK}
	var bad []Detail
	for i, w := range wants {
		d := judgeDevice(w.file, w.minor, w.blockOK, found[i].dn, found[i].err)
		if d.Status == StatusFail {
			d.Remedy = remedyOf(gresFault(w, found[i].dn))
		}
		if d.Status != StatusOK {
			d.Message += " (" + w.where + ")"
			bad = append(bad, d)
		}
		res.Details = append(res.Details, d)
	}
	bad = append(bad, confErrs...)
	res.Details = append(res.Details, confErrs...)
	res.Expected = fmt.Sprintf("%d device files", len(wants))
	res.Observed = fmt.Sprintf("%d good", len(wants)-len(bad))
	if len(bad) > 0 {
		res.Status = worstOf(bad)
		first := bad[0]
		if first.Status == StatusError && res.Status == StatusFail {
			// Name a device that is really wrong before a line that could not be read.
			for _, d := range bad {
				if d.Status == StatusFail {
					first = d
					break
				}
			}
		}
		res.Summary, res.Subject = first.Device+" "+first.Message+moreSuffix(len(bad)-1), first.Subject
		return res
	}
	kind := "character devices"
	for _, d := range res.Details {
		if strings.HasPrefix(d.Observed, "block") {
			kind = "character or block devices"
			break
		}
	}
	res.Summary = fmt.Sprintf("%d device files from gres.conf present as %s (%s)", len(wants), kind, slurm.CompressHostlist(filesOf(wants, func(w gresWant) string { return w.file })))
	return res
}

// gresFault is why a device file failed: an NVIDIA file missing (the driver did not create
// it: a boot loads the driver, which makes one for every GPU it has), another file missing
// (a MIG capability or another GRES gres.conf names: configuration), or a file that is not
// what its name says.
func gresFault(w gresWant, dn node.DevNode) fault {
	switch {
	case dn.Missing && w.minor >= 0:
		return faultGresNoDriver
	case dn.Missing:
		return faultGresMissing
	}
	return faultGresWrongFile
}

// problemConcerns tells whether a gres.conf problem is about node: a problem without a node
// list is about a line whose nodes could not be read, so it may be about any node.
func problemConcerns(p slurm.Problem, node string) bool {
	if p.Nodes == "" {
		return true
	}
	hl, err := slurm.ParseHostlist(p.Nodes)
	return err != nil || hl.Contains(node)
}

// judgeDevice judges one device file by what stat said of it (dn, or err where it failed);
// a block device passes where blockOK (a disk GRES).
func judgeDevice(file string, wantMinor int, blockOK bool, dn node.DevNode, err error) Detail {
	d := Detail{Device: file, Status: StatusOK, Expected: "char device", Subject: Subject{File: file}}
	if wantMinor >= 0 {
		d.Expected = fmt.Sprintf("char %d:%d", nvidiaMajor, wantMinor)
	}
	switch {
	case err != nil:
		d.Status, d.Message = StatusError, "cannot stat: "+err.Error()
	case dn.Missing:
		d.Status, d.Message, d.Observed = StatusFail, "missing", "missing"
	case blockOK && dn.Type == "block":
		d.Expected = "char or block device"
		d.Observed = fmt.Sprintf("block %d:%d", dn.Major, dn.Minor)
		d.Message = "present (block device)"
	case dn.Type != "char":
		d.Status, d.Observed = StatusFail, dn.Type
		d.Message = fmt.Sprintf("is a %s, not a character device", typeName(dn.Type))
	default:
		d.Observed = fmt.Sprintf("char %d:%d", dn.Major, dn.Minor)
		if wantMinor >= 0 && (dn.Major != nvidiaMajor || int(dn.Minor) != wantMinor) {
			d.Status = StatusFail
			d.Message = fmt.Sprintf("is char %d:%d, want %d:%d", dn.Major, dn.Minor, nvidiaMajor, wantMinor)
		} else {
			d.Message = "present"
		}
	}
	return d
}

// nvidiaMinorFromName returns N for /dev/nvidiaN, 255 for /dev/nvidiactl, and -1 for any other
// file (MIG capability files under /dev/nvidia-caps have a dynamic major, so only their type
// is checked).
func nvidiaMinorFromName(file string) int {
	if path.Dir(file) != "/dev" {
		return -1
	}
	base := path.Base(file)
	if base == "nvidiactl" {
		return nvidiactlMinor
	}
	num, ok := strings.CutPrefix(base, "nvidia")
	if !ok || num == "" {
		return -1
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > 254 || strconv.Itoa(n) != num {
		return -1
	}
	return n
}

func typeName(t string) string {
	switch t {
	case "file":
		return "regular file"
	case "dir":
		return "directory"
	case "block":
		return "block device"
	case "symlink":
		return "symbolic link"
	}
	return t
}

func filesOf[T any](xs []T, f func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// worstOf is the worst status among details.
func worstOf(ds []Detail) Status {
	s := StatusOK
	for _, d := range ds {
		if d.Status.Worse(s) {
			s = d.Status
		}
	}
	return s
}

// moreSuffix is the " (+N more)" tail of a summary that names only the first problem.
func moreSuffix(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" (+%d more)", n)
}

// Faults declares the check's own rows of the remedy table, and the shared faults it
// gives (remedy.go).
func (gresDevices) Faults() Faults {
	return Faults{
		shared: []fault{faultSlurmTimeout},
		own: []remedyRow{
			{faultGresNoDriver, "an NVIDIA device file gres.conf lists (/dev/nvidiaN, /dev/nvidiactl) is missing: the driver did not create it", RemedyReboot,
				"the NVIDIA driver creates /dev/nvidiaN for every GPU it has and /dev/nvidiactl when it loads (nvidia-modprobe, udev, nvidia-persistenced at boot), in /dev, which a boot makes afresh"},
			{faultGresMissing, "another device file gres.conf lists is missing: a MIG capability under /dev/nvidia-caps, another GRES's file", RemedyAdmin,
				"gres.conf(5) File=: the files must exist on the node; set up MIG (nvidia-smi mig) or fix gres.conf"},
			{faultGresWrongFile, "a device file is not a character device, or has another major or minor than its name says", RemedyAdmin,
				"something other than the driver made it (a copy, a script): find it, remove the file and let the driver create it"},
		},
	}
}

// Explain is what `nodecheck explain gres_devices` says.
func (gresDevices) Explain() Explanation {
	return Explanation{
		Reads: []string{
			"slurm.conf, to find gres.conf beside it (--slurm-conf, slurm_conf, SLURM_CONF, slurmd's configless cache, /etc/slurm).",
			"gres.conf: the File= and MultipleFiles= device paths of the lines for this node, and AutoDetect.",
			"Each of those device files (stat only): its type and its major and minor numbers.",
		},
		Passes: "Every device file gres.conf lists for this node exists as a character device: /dev/nvidiaN as char 195:N, and /dev/nvidiactl, which every NVIDIA GPU needs and which is checked whenever GPU files are listed, as char 195:255. Other files (MIG capabilities under /dev/nvidia-caps) need only be character devices; the files of a GRES other than gpu (a Name=nvme scratch disk) may also be block devices, as slurmd takes them.",
		Fails:  "A listed device file is missing, is not a character device (a regular file left by a copy, a directory), or has another major or minor number than its name promises. Slurm would give jobs a GPU device that is not there, or the wrong GPU.",
		Skips:  "There is no gres.conf, gres.conf has no File= entry for this node, or it uses AutoDetect for this node so that there are no File= entries to check (gpu_count still compares the GPU counts).",
		Errors: "slurm.conf cannot be found, gres.conf cannot be read, a gres.conf line that Slurm would refuse may concern this node, or a device file cannot be examined.",
		Fix: []string{
			"ls -l /dev/nvidia*: are the files there, as character devices 195, N?",
			"If none are, check that the driver is loaded: lsmod | grep nvidia, dmesg | grep -i -e nvrm -e nvidia. Load it (modprobe nvidia) and create the device files: nvidia-modprobe -c N for each GPU N, or nvidia-smi once as root. udev rules or nvidia-persistenced normally do this at boot: find out why they did not.",
			"A device file that is a regular file or has the wrong numbers: remove it and create it again as above.",
			"If gres.conf is wrong (File= naming devices this node does not have, a NodeName= range that takes in the wrong nodes), fix it, check it with nodecheck lint and run scontrol reconfigure.",
		},
	}
}
