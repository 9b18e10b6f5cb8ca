package checks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config"
)

// fmVersionOut is `nv-fabricmanager --version` byte for byte as gpud captured it (corpus
// fabricmanager/gpud-nv-fabricmanager-version-535.161.08.txt): three blank lines, a TAB.
const fmVersionOut = "\n\n\n\tFabric Manager version is : 535.161.08\n\n"

const (
	fmVersionCmd = "/usr/bin/nv-fabricmanager --version"
	fmActiveCmd  = "/usr/bin/systemctl is-active nvidia-fabricmanager"
	dpkgCmd      = "/usr/bin/dpkg-query -W -f=${db:Status-Abbrev}\t${Package}\t${Version}\n nvidia-fabricmanager-535 nvidia-fabricmanager"
	rpmCmd       = "/usr/bin/rpm -q --qf ii\t%{NAME}\t%{VERSION}\n nvidia-fabric-manager nvidia-fabricmanager-535"
)

// h100Commands are the two commands of testdata/snapshots/h100-healthy.
func h100Commands() map[string]node.CmdResult {
	return map[string]node.CmdResult{
		fmVersionCmd: {Stdout: fmVersionOut},
		fmActiveCmd:  {Stdout: "active\n"},
	}
}

func TestFabricManager(t *testing.T) {
	with := func(key string, r node.CmdResult) map[string]node.CmdResult {
		m := h100Commands()
		m[key] = r
		return m
	}
	without := func(keys ...string) map[string]node.CmdResult {
		m := h100Commands()
		for _, k := range keys {
			delete(m, k)
		}
		return m
	}
	pkgOnly := func(key string, r node.CmdResult) map[string]node.CmdResult {
		m := without(fmVersionCmd)
		m[key] = r
		return m
	}
	fabric := func(state, status string, idx ...int) node.GPUInventory {
		inv := h100NVML()
		for _, i := range idx {
			inv.Devices[i].Fabric = &node.Fabric{State: state, Status: status}
		}
		return inv
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	a100 := func() node.GPUInventory { // no fabric state before Hopper
		inv := h100NVML()
		for i := range inv.Devices {
			inv.Devices[i].Name, inv.Devices[i].Fabric = "NVIDIA A100-SXM4-80GB", nil
		}
		return inv
	}
	lost := func() node.GPUInventory {
		inv := h100NVML()
		inv.Devices[4] = node.GPU{Index: 4, Error: "ERROR_GPU_IS_LOST"}
		return inv
	}
	// gb200 is a GB200 compute tray's 4 GPUs (bus ids of a GB200 tray as dcgm-exporter
	// printed them, NVIDIA/dcgm-exporter#581), each changed by change.
	gb200 := func(change func(g *node.GPU)) node.GPUInventory {
		inv := node.GPUInventory{Init: node.InitSuccess, DriverVersion: "570.133.20", DeviceCount: 4}
		for i, bus := range []string{"00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"} {
			g := node.GPU{Index: i, MinorNumber: i, Name: "NVIDIA GB200", PCIBusID: bus, Fabric: &node.Fabric{State: "COMPLETED", Status: "SUCCESS"}}
			change(&g)
			inv.Devices = append(inv.Devices, g)
		}
		return inv
	}
	var noSwitch []node.PCIDevice
	for _, d := range h100PCI() {
		if !isNVSwitch(d) {
			noSwitch = append(noSwitch, d)
		}
	}

	tests := []struct {
		name        string
		pci         []node.PCIDevice
		gpus        node.GPUInventory
		gpuErr      error
		cmds        map[string]node.CmdResult
		force       bool
		wantStatus  Status
		wantSummary string
	}{
		{"healthy H100", h100PCI(), h100NVML(), nil, h100Commands(), false, StatusOK,
			"driver and Fabric Manager 535.161.08, nvidia-fabricmanager active, fabric COMPLETED on 8 GPUs (4 NVSwitches)"},
		{"A100: no fabric state is fine", h100PCI(), a100(), nil, h100Commands(), false, StatusOK,
			"driver and Fabric Manager 535.161.08, nvidia-fabricmanager active, no GPU reports fabric state (before Hopper) (4 NVSwitches)"},
		// Without NVSwitches on the bus, GPUs on a fabric (a VM whose host keeps the NVSwitches,
		// a GB200 tray) have their registration judged, and Fabric Manager is expected off.
		{"no NVSwitch, GPUs on a fabric, systemctl absent", noSwitch, h100NVML(), nil, map[string]node.CmdResult{}, false, StatusOK,
			"NVLink fabric without NVSwitch on this node: fabric COMPLETED on 8 GPUs, Fabric Manager not running here (it runs where the NVSwitches are)"},
		{"no NVSwitch, GPUs on a fabric, FM inactive", noSwitch, h100NVML(), nil, with(fmActiveCmd, node.CmdResult{Stdout: "inactive\n", ExitCode: 3}), false, StatusOK,
			"NVLink fabric without NVSwitch on this node: fabric COMPLETED on 8 GPUs, Fabric Manager not running here (it runs where the NVSwitches are)"},
		{"no NVSwitch, GPUs on a fabric, FM active", noSwitch, h100NVML(), nil, h100Commands(), false, StatusWarn,
			"nvidia-fabricmanager active on a node without NVSwitch: Fabric Manager runs where the NVSwitches are (NVLink switch trays, or the VM's host); systemctl disable --now nvidia-fabricmanager"},
		// The Fabric block of a GB200 tray quoted in Azure/azhpc-images#506 (corpus:
		// gb200/azhpcimages-506-fabric-insufficient-resources-clique0.txt): "State : Completed",
		// "Status : Insufficient Resources", as import-nvidia-smi records them.
		{"GB200 tray, fabric completed with insufficient resources", noSwitch, gb200(func(g *node.GPU) {
			g.Fabric = &node.Fabric{State: "COMPLETED", Status: "Insufficient Resources"}
		}), nil, with(fmActiveCmd, node.CmdResult{Stdout: "inactive\n", ExitCode: 3}), false, StatusFail,
			"fabric registration failed or not completed on 4 of 4 GPUs: gpu 0 (0008:01:00.0) COMPLETED with Insufficient Resources, gpu 1 (0009:01:00.0) COMPLETED with Insufficient Resources (+2 more)"},
		{"no NVSwitch, no fabric state", noSwitch, fabric("NOT_SUPPORTED", "SUCCESS", all...), nil, nil, false, StatusSkip,
			"no NVSwitch on the PCI bus, and no GPU reports an NVLink fabric state"},
		{"no NVSwitch, NVML unavailable", noSwitch, node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}, nil, nil, false, StatusSkip,
			"no NVSwitch on the PCI bus, and NVML is unavailable (ERROR_DRIVER_NOT_LOADED) to tell GPUs on an NVLink fabric"},
		{"no NVSwitch, no GPU", nil, node.GPUInventory{Init: "ERROR_LIBRARY_NOT_FOUND"}, nil, nil, false, StatusSkip,
			"no NVSwitch and no NVIDIA GPU on the PCI bus"},
		{"no NVSwitch, forced", noSwitch, h100NVML(), nil, h100Commands(), true, StatusOK,
			"driver and Fabric Manager 535.161.08, nvidia-fabricmanager active, fabric COMPLETED on 8 GPUs (no NVSwitch on the PCI bus, forced by config)"},
		{"version mismatch", h100PCI(), h100NVML(), nil, with(fmVersionCmd, node.CmdResult{Stdout: "\n\n\n\tFabric Manager version is : 535.154.05\n\n"}), false, StatusFail,
			"driver 535.161.08 but Fabric Manager 535.154.05: install nvidia-fabricmanager 535.161.08 and restart it (a mismatch gives CUDA error 802)"},
		{"mismatch stops FM: the mismatch is named first", h100PCI(), fabric("NOT_STARTED", "SUCCESS", all...),
			nil, with(fmActiveCmd, node.CmdResult{Stdout: "failed\n", ExitCode: 3}), false, StatusFail,
			"nvidia-fabricmanager service failed, want active: see journalctl -u nvidia-fabricmanager, then systemctl restart nvidia-fabricmanager (+1 more)"},
		{"service inactive", h100PCI(), h100NVML(), nil, with(fmActiveCmd, node.CmdResult{Stdout: "inactive\n", ExitCode: 3}), false, StatusFail,
			"nvidia-fabricmanager service inactive, want active: see journalctl -u nvidia-fabricmanager, then systemctl restart nvidia-fabricmanager"},
		// Issue 12: systemctl that prints no state could not ask systemd: not looked at.
		{"service state without output", h100PCI(), h100NVML(), nil, with(fmActiveCmd, node.CmdResult{Stderr: "Failed to connect to bus: No such file or directory\n", ExitCode: 1}), false, StatusError,
			"cannot ask systemd whether nvidia-fabricmanager runs: /usr/bin/systemctl is-active exited 1: Failed to connect to bus: No such file or directory"},
		{"no systemctl", h100PCI(), h100NVML(), nil, without(fmActiveCmd), false, StatusError,
			"cannot ask systemd whether nvidia-fabricmanager runs: /usr/bin/systemctl not found; set systemctl in [checks.fabric_manager]"},
		{"one GPU in progress", h100PCI(), fabric("IN_PROGRESS", "N/A", 5), nil, h100Commands(), false, StatusFail,
			"fabric not completed on 1 of 8 GPUs: gpu 5 (0000:bb:00.0) IN_PROGRESS"},
		{"all GPUs in progress", h100PCI(), fabric("IN_PROGRESS", "N/A", all...), nil, h100Commands(), false, StatusFail,
			"fabric not completed on 8 of 8 GPUs: gpu 0 (0000:19:00.0) IN_PROGRESS, gpu 1 (0000:3b:00.0) IN_PROGRESS (+6 more)"},
		{"completed with an error", h100PCI(), fabric("COMPLETED", "ERROR_NOT_READY", 2), nil, h100Commands(), false, StatusFail,
			"fabric registration failed or not completed on 1 of 8 GPUs: gpu 2 (0000:4c:00.0) COMPLETED with ERROR_NOT_READY"},
		// Issue 12: an H100 on an NVSwitch node always has a fabric state; one NVML does not
		// report, or could not read, was not looked at.
		{"fabric not supported on H100: not read", h100PCI(), fabric("NOT_SUPPORTED", "SUCCESS", all...), nil, h100Commands(), false, StatusError,
			"fabric state not read on 8 GPUs: gpu 0 (0000:19:00.0), gpu 1 (0000:3b:00.0) (+6 more)"},
		{"fabric state absent on one H100", h100PCI(), changeGPU(h100NVML(), 3, func(g *node.GPU) { g.Fabric = nil }), nil, h100Commands(), false, StatusError,
			"fabric state not read on 1 GPU: gpu 3 (0000:5d:00.0)"},
		{"fabric query failed", h100PCI(), fabric("UNKNOWN", "ERROR_UNKNOWN", 6), nil, h100Commands(), false, StatusError,
			"fabric state not read on 1 GPU: gpu 6 (0000:cb:00.0) ERROR_UNKNOWN"},
		{"fabric absent on one, in progress on another: fail", h100PCI(), changeGPU(fabric("IN_PROGRESS", "N/A", 5), 3, func(g *node.GPU) { g.Fabric = nil }), nil, h100Commands(), false, StatusFail,
			"fabric not completed on 1 of 7 GPUs: gpu 5 (0000:bb:00.0) IN_PROGRESS (+1 more)"},
		{"forced without NVSwitch: no fabric state is fine", noSwitch, fabric("NOT_SUPPORTED", "SUCCESS", all...), nil, h100Commands(), true, StatusOK,
			"driver and Fabric Manager 535.161.08, nvidia-fabricmanager active, no GPU reports fabric state (before Hopper) (no NVSwitch on the PCI bus, forced by config)"},
		{"lost GPU: its fabric not read", h100PCI(), lost(), nil, h100Commands(), false, StatusError,
			"fabric state not read on 1 GPU: gpu 4 ERROR_GPU_IS_LOST"},
		{"driver not loaded", h100PCI(), node.GPUInventory{Init: "ERROR_DRIVER_NOT_LOADED"}, nil, h100Commands(), false, StatusFail,
			"NVML init: ERROR_DRIVER_NOT_LOADED: cannot read the driver version to compare with Fabric Manager (4 NVSwitches)"},
		{"NVML call fails", h100PCI(), node.GPUInventory{}, errors.New("nvml helper: exit status 127"), h100Commands(), false, StatusError,
			"query NVML: nvml helper: exit status 127"},
		{"binary absent, Debian package", h100PCI(), h100NVML(), nil,
			pkgOnly(dpkgCmd, node.CmdResult{Stdout: "ii \tnvidia-fabricmanager-535\t535.161.08-1\n", Stderr: "dpkg-query: no packages found matching nvidia-fabricmanager\n", ExitCode: 1}),
			false, StatusOK, "driver and Fabric Manager 535.161.08, nvidia-fabricmanager active, fabric COMPLETED on 8 GPUs (4 NVSwitches)"},
		{"binary absent, older Debian package", h100PCI(), h100NVML(), nil,
			pkgOnly(dpkgCmd, node.CmdResult{Stdout: "ii \tnvidia-fabricmanager-535\t535.154.05-1\n"}), false, StatusFail,
			"driver 535.161.08 but Fabric Manager 535.154.05: install nvidia-fabricmanager 535.161.08 and restart it (a mismatch gives CUDA error 802)"},
		{"binary absent, package removed", h100PCI(), h100NVML(), nil,
			pkgOnly(dpkgCmd, node.CmdResult{Stdout: "rc \tnvidia-fabricmanager-535\t535.161.08-1\n"}), false, StatusFail,
			"Fabric Manager not installed (no /usr/bin/nv-fabricmanager, no nvidia-fabricmanager package): install nvidia-fabricmanager-535 for driver 535.161.08"},
		{"binary absent, RHEL package", h100PCI(), h100NVML(), nil,
			pkgOnly(rpmCmd, node.CmdResult{Stdout: "ii\tnvidia-fabric-manager\t535.161.08\npackage nvidia-fabricmanager-535 is not installed\n", ExitCode: 1}),
			false, StatusOK, "driver and Fabric Manager 535.161.08, nvidia-fabricmanager active, fabric COMPLETED on 8 GPUs (4 NVSwitches)"},
		{"not installed at all", h100PCI(), h100NVML(), nil, without(fmVersionCmd), false, StatusFail,
			"Fabric Manager not installed (no /usr/bin/nv-fabricmanager, no nvidia-fabricmanager package): install nvidia-fabricmanager-535 for driver 535.161.08"},
		{"version output unreadable", h100PCI(), h100NVML(), nil, with(fmVersionCmd, node.CmdResult{Stdout: "Segmentation fault\n", ExitCode: 139}), false, StatusError,
			"read the version from /usr/bin/nv-fabricmanager --version (exit 139): no \"Fabric Manager version\" in \"Segmentation fault\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default(Schema())
			settings[*fabricManagerConfig](cfg, idFabricManager).Force = tc.force
			f := &execFacts{fakeFacts: &fakeFacts{pci: tc.pci, gpus: tc.gpus, gpuErr: tc.gpuErr}, cmds: tc.cmds}
			got := fabricManager{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", cfg))
			assertRemedies(t, got)
			if diff := cmp.Diff(brief{"", string(tc.wantStatus), tc.wantSummary}, brief{"", string(got.Status), got.Summary}); diff != "" {
				t.Errorf("(-want +got):\n%s\nran: %q\ndetails: %+v", diff, f.ran, got.Details)
			}
		})
	}
}

// TestFabricManagerCommands: the commands run are absolute, in order, and the package
// managers are asked only when the binary is absent.
func TestFabricManagerCommands(t *testing.T) {
	tests := []struct {
		name string
		cmds map[string]node.CmdResult
		want []string
	}{
		{"binary present", h100Commands(), []string{fmVersionCmd, fmActiveCmd}},
		{"binary absent", map[string]node.CmdResult{fmActiveCmd: {Stdout: "active\n"}}, []string{fmVersionCmd, dpkgCmd, rpmCmd, fmActiveCmd}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &execFacts{fakeFacts: &fakeFacts{pci: h100PCI(), gpus: h100NVML()}, cmds: tc.cmds}
			fabricManager{}.Run(context.Background(), gpuEnv(f, "gpu-h100-01", nil))
			if diff := cmp.Diff(tc.want, f.ran); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFabricManagerVersion(t *testing.T) {
	tests := []struct {
		name, out, want, wantErr string
	}{
		{"nv-fabricmanager --version (gpud capture)", fmVersionOut, "535.161.08", ""},
		{"Fabric Manager log line", "[Dec 19 2024 22:08:53] [INFO] [tid 1570] Fabric Manager version 535.161.08 is running with the following configuration options\n", "535.161.08", ""},
		{"colon without is", "Fabric Manager version: 570.86.15\n", "570.86.15", ""},
		{"other case, CRLF", "FABRIC MANAGER VERSION IS : 550.54.15\r\n", "550.54.15", ""},
		{"bare version", "\n535.154.05\n", "535.154.05", ""},
		{"version on the next line", "Fabric Manager version is :\n\t535.161.08\n", "535.161.08", ""},
		{"empty", "", "", `no "Fabric Manager version" in ""`},
		{"usage text", "Usage: nv-fabricmanager [options]\n", "", `no "Fabric Manager version" in "Usage: nv-fabricmanager [options]"`},
		{"no number", "Fabric Manager version is : unknown\n", "", `no "Fabric Manager version" in "Fabric Manager version is : unknown"`},
		// Found by FuzzParseFabricManagerVersion: binary output must not blow up the error.
		{"binary garbage", "0\xa0000000000\x18000000\xbf\xfe\x850\xaa00\xb5\x90\xfe0\xe90\xac\xa20\x9d\xdb0\xf3\xe5\xec00\xd100\x880\x8a\xb8\xf3\xda0\xbb0\xcc0\xc40\xcd\xd8\xf7\x05\x88\xa4\x87\x98", "",
			`no "Fabric Manager version" in "0?000000000?000000?0?00?0?0?0?0?00?00?0?0?0?0?0???"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFabricManagerVersion(tc.out)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff([2]string{tc.want, tc.wantErr}, [2]string{got, gotErr}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseFabricManagerVersion: a version found is a dotted number that occurs in the input;
// otherwise the error quotes the input on one bounded line.
func FuzzParseFabricManagerVersion(f *testing.F) {
	for _, s := range []string{fmVersionOut, "Fabric Manager version 535.161.08 is running", "535.154.05", "", "Fabric Manager version is : \n", "fabricmanager version 1.2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseFabricManagerVersion(s)
		if err != nil {
			if v != "" || strings.ContainsAny(err.Error(), "\n\r") || len(err.Error()) > 200 {
				t.Errorf("error %q with version %q", err, v)
			}
			return
		}
		if versionRE().FindString(v) != v || !strings.Contains(s, v) {
			t.Errorf("version %q from %q", v, s)
		}
	})
}

func TestParsePackageQuery(t *testing.T) {
	tests := []struct {
		name, out        string
		wantPkg, wantVer string
		wantOK           bool
	}{
		{"dpkg installed", "ii \tnvidia-fabricmanager-535\t535.161.08-1\n", "nvidia-fabricmanager-535", "535.161.08", true},
		{"dpkg epoch and ubuntu revision", "ii \tnvidia-fabricmanager-550\t1:550.54.15-0ubuntu1\n", "nvidia-fabricmanager-550", "550.54.15", true},
		{"dpkg removed, config kept", "rc \tnvidia-fabricmanager-535\t535.161.08-1\n", "", "", false},
		{"dpkg held, installed", "hi \tnvidia-fabricmanager-535\t535.161.08-1\n", "nvidia-fabricmanager-535", "535.161.08", true},
		{"second line installed", "un \tnvidia-fabricmanager-535\t\nii \tnvidia-fabricmanager\t570.86.15-1\n", "nvidia-fabricmanager", "570.86.15", true},
		{"rpm", "ii\tnvidia-fabric-manager\t535.161.08\n", "nvidia-fabric-manager", "535.161.08", true},
		{"rpm not installed", "package nvidia-fabric-manager is not installed\n", "", "", false},
		{"no version", "ii \tnvidia-fabricmanager-535\t\n", "", "", false},
		{"not a version", "ii \tnvidia-fabricmanager-535\tlatest\n", "", "", false},
		{"empty", "", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pkg, v, ok := parsePackageQuery(tc.out)
			if diff := cmp.Diff([]any{tc.wantPkg, tc.wantVer, tc.wantOK}, []any{pkg, v, ok}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParsePackageQuery: a version found is a dotted number, and the package is named.
func FuzzParsePackageQuery(f *testing.F) {
	for _, s := range []string{"ii \tnvidia-fabricmanager-535\t535.161.08-1\n", "ii\tnvidia-fabric-manager\t535.161.08\n", "rc \ta\t1.2-3\n", "ii \tx\t1:2.3-4-5\n", "\t\t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pkg, v, ok := parsePackageQuery(s)
		if !ok {
			if pkg != "" || v != "" {
				t.Errorf("not ok but %q %q", pkg, v)
			}
			return
		}
		if v == "" || versionRE().FindString(v) != v || strings.ContainsAny(pkg, "\t\n") {
			t.Errorf("package %q version %q from %q", pkg, v, s)
		}
	})
}

// TestFabricManagerConfig: the keys of [checks.fabric_manager] have their defaults, decode, reach a node
// through a group, and bad values name their line and the fix.
func TestFabricManagerConfig(t *testing.T) {
	tests := []sectionCase{
		{
			name: "fabric_manager keys",
			toml: "[checks.fabric_manager]\nforce = true\nbinary = \"/opt/nvidia/bin/nv-fabricmanager\"\nservice = \"nvidia-fabricmanager.service\"\n",
			want: func(c *config.Config) any {
				return []any{settings[*fabricManagerConfig](c, idFabricManager).Force, settings[*fabricManagerConfig](c, idFabricManager).Binary, settings[*fabricManagerConfig](c, idFabricManager).Systemctl, settings[*fabricManagerConfig](c, idFabricManager).Service}
			},
			wantVal: []any{true, "/opt/nvidia/bin/nv-fabricmanager", "/usr/bin/systemctl", "nvidia-fabricmanager.service"},
		},
		{
			name:    "relative binary",
			toml:    "[checks.fabric_manager]\nbinary = \"nv-fabricmanager\"\n",
			wantErr: `nodecheck.toml:2: checks.fabric_manager.binary = "nv-fabricmanager": give an absolute path: Slurm starts prologs and health checks without PATH`,
		},
		{
			name:    "empty service",
			toml:    "[checks.fabric_manager]\nservice = \"\"\n",
			wantErr: `nodecheck.toml:2: checks.fabric_manager.service = "": give the systemd unit of Fabric Manager, such as "nvidia-fabricmanager"`,
		},
	}
	runSectionCases(t, tests)
}

// TestJudgeFabric feeds the fabric judge literal NVML readings.
func TestJudgeFabric(t *testing.T) {
	gpu := func(name string, f *node.Fabric) node.GPU {
		return node.GPU{Index: 0, Name: name, PCIBusID: "00000000:19:00.0", Fabric: f}
	}
	done := &node.Fabric{State: "COMPLETED", Status: "SUCCESS"}
	tests := []struct {
		name         string
		gpus         []node.GPU
		switches     bool
		wantProblems []Detail
		wantWith     int
	}{
		{"H100 completed", []node.GPU{gpu(nameH100, done)}, true, nil, 1},
		{"H100 in progress", []node.GPU{gpu(nameH100, &node.Fabric{State: "IN_PROGRESS", Status: "N/A"})}, true,
			[]Detail{{Device: "fabric", Status: StatusFail, Message: "fabric not completed on 1 of 1 GPUs: gpu 0 (0000:19:00.0) IN_PROGRESS", Remedy: RemedyReboot}}, 1},
		{"H100 without state on an NVSwitch node", []node.GPU{gpu(nameH100, nil)}, true,
			[]Detail{{Device: "fabric", Status: StatusError, Message: "fabric state not read on 1 GPU: gpu 0 (0000:19:00.0)", Subject: subjectGPU(0, "0000:19:00.0")}}, 0},
		{"two H100s without state: the fabric's detail names neither", []node.GPU{gpu(nameH100, nil), gpu(nameH100, nil)}, true,
			[]Detail{{Device: "fabric", Status: StatusError, Message: "fabric state not read on 2 GPUs: gpu 0 (0000:19:00.0), gpu 0 (0000:19:00.0)"}}, 0},
		{"H100 without state, no NVSwitch", []node.GPU{gpu(nameH100, nil)}, false, nil, 0},
		{"A100 without state", []node.GPU{gpu(nameA100, nil)}, true, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, problems, with := judgeFabric(tc.gpus, tc.switches)
			if diff := cmp.Diff(tc.wantProblems, problems); diff != "" || with != tc.wantWith {
				t.Errorf("with fabric %d, want %d; problems (-want +got):\n%s", with, tc.wantWith, diff)
			}
		})
	}
}
