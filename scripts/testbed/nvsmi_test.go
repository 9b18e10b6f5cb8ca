package testbed

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// inUseParagraph is the paragraph nvidia-smi prints after a refusal for a device in use, as
// ComputeCanada/puppet-magic_castle#387 quotes it byte for byte.
const inUseParagraph = "1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, graphics application such as an X server, or a monitoring application such as another instance of nvidia-smi). Please first kill all processes using this device and all compute applications running in the system.\n"

func runStandin(t *testing.T, s *NvidiaSMIStandin, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Path, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"} // as nodecheck runs programs: no NVIDIA_SMI_STANDIN_STATE
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%s %v: %v", s.Path, args, err)
	}
	return out.String(), errb.String(), code
}

// TestNvidiaSMIStandin runs every answer of the nvidia-smi stand-in: the captured text with the
// GPU's bus id, the exit status, the "simulated" notice on stderr, and the call log.
func TestNvidiaSMIStandin(t *testing.T) {
	for _, tc := range []struct {
		mode string
		args []string
		want string
		code int
	}{
		{ResetSuccess, []string{"--gpu-reset", "-i", "0"}, "GPU 00000000:19:00.0 was successfully reset.\n", 0},
		{ResetSuccess, []string{"-r", "-i", "GPU-b0fe4996-1f7c-91f6-0ccd-08ae3b7e23c5,0000:3b:00.0"},
			"GPU 00000000:DB:00.0 was successfully reset.\nGPU 00000000:3B:00.0 was successfully reset.\nAll done.\n", 0},
		{ResetInUse, []string{"-r", "-i", "9B:00.0"},
			"\nThe following GPUs could not be reset:\n  GPU 00000000:9B:00.0: In use by another client\n\n" + inUseParagraph, 255},
		{ResetInUseProcess, []string{"-r", "-i", "4"},
			"GPU 00000000:9B:00.0 is currently in use by another process.\n\n" + inUseParagraph + "\n", 255},
		{ResetPrimaryGPU, []string{"-r", "-i", "1"}, "GPU Reset couldn't run because GPU 00000000:3B:00.0 is the primary GPU.\n", 3},
		{ResetNoPermission, []string{"-r", "-i", "1"}, "\nThe following GPUs could not be reset:\n  GPU 00000000:3B:00.0: Insufficient Permissions\n", 4},
		{ResetNotSupported, []string{"-r", "-i", "1"}, "\nThe following GPUs could not be reset:\n  GPU 00000000:3B:00.0: Not Supported\n", 3},
		{ResetSuccess, []string{"-r", "-i", "8"}, "No devices were found\n", 6},
	} {
		t.Run(tc.mode+"/"+strings.Join(tc.args, " "), func(t *testing.T) {
			s := InstallNvidiaSMIStandin(t, "../..", t.TempDir())
			s.SetResets(t, []string{tc.mode})
			out, errOut, code := runStandin(t, s, tc.args...)
			if out != tc.want || code != tc.code {
				t.Errorf("stdout %q exit %d\nwant   %q exit %d", out, code, tc.want, tc.code)
			}
			if !strings.Contains(errOut, "SIMULATED nvidia-smi") {
				t.Errorf("stderr %q does not say it is simulated", errOut)
			}
			if calls := s.Calls(t); len(calls) != 1 || !strings.HasPrefix(calls[0], "call 1: -r -i ") {
				t.Errorf("call log %q, want one call", calls)
			}
		})
	}
}

// TestNvidiaSMIStandinSequence: answers are used up one a call, the last one stays; a node's
// own GPU table replaces the default; no state file or an unknown mode is an error, never a
// success.
func TestNvidiaSMIStandinSequence(t *testing.T) {
	s := InstallNvidiaSMIStandin(t, "../..", t.TempDir())
	if out, errOut, code := runStandin(t, s, "-r", "-i", "0"); code != 255 || out != "" || !strings.Contains(errOut, "no state file") {
		t.Errorf("without a state file: %q %q exit %d, want exit 255 naming the state file", out, errOut, code)
	}
	s.SetResets(t, []string{ResetInUse, ResetInUse, ResetSuccess}, "0 00000000:07:00.0 GPU-0000aaaa-0000-0000-0000-000000000000")
	var codes []int
	for range 4 {
		_, _, code := runStandin(t, s, "-r", "-i", "GPU-0000aaaa-0000-0000-0000-000000000000")
		codes = append(codes, code)
	}
	if want := []int{255, 255, 0, 0}; !slices.Equal(codes, want) {
		t.Errorf("exit codes %v, want %v", codes, want)
	}
	calls := s.Calls(t)
	if len(calls) != 4 || !strings.HasSuffix(calls[0], "-> 00000000:07:00.0: in-use exit 255") || !strings.HasSuffix(calls[3], "success exit 0") {
		t.Errorf("calls:\n%s", strings.Join(calls, "\n"))
	}
	out, _, code := runStandin(t, s, "-r")
	if out != "GPU 00000000:07:00.0 was successfully reset.\n" || code != 0 {
		t.Errorf("reset of all GPUs with one in the table: %q exit %d", out, code)
	}
	if err := os.WriteFile(s.Path+".state", []byte("reboot-please\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runStandin(t, s, "-r", "-i", "0"); code != 255 || !strings.Contains(errOut, "unknown mode reboot-please") {
		t.Errorf("unknown mode: %q exit %d", errOut, code)
	}
	if _, errOut, code := runStandin(t, s, "-q"); code != 255 || !strings.Contains(errOut, "simulates only --gpu-reset") {
		t.Errorf("-q: %q exit %d", errOut, code)
	}
}
