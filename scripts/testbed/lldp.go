package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// LLDPFabric is a RoCE fabric made of network namespaces on this machine: a namespace per
// leaf switch running the real lldpd with the switch's system name, a namespace per node
// running lldpd on its ports, joined by veth pairs, so that real LLDP frames tell each
// node's lldpd which switch port it is cabled to. Each lldpd has its own control socket
// (Socket): a capture selects its node's daemon with `--lldpd-socket`, where a real node
// would ask its one lldpd on the default socket.
type LLDPFabric struct {
	t      *testing.T
	prefix string
	Dir    string // the sockets, configurations and logs
	procs  []*exec.Cmd
	netns  []string
	cables int
}

// NewLLDPFabric makes an empty fabric, torn down (every lldpd stopped, every namespace and
// with it every veth removed) when t ends. It skips t where the fabric cannot be built: not
// root, or no lldpd, ip or unshare.
func NewLLDPFabric(t *testing.T) *LLDPFabric {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates network namespaces and runs lldpd")
	}
	for _, p := range []string{"/usr/sbin/lldpd", "/usr/sbin/lldpcli", "/usr/sbin/ip", "/usr/bin/unshare"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is not installed (apt-get install lldpd iproute2 util-linux): %v", p, err)
		}
	}
	f := &LLDPFabric{t: t, prefix: fmt.Sprintf("nc%d", os.Getpid()%10000), Dir: t.TempDir()}
	// lldpd's monitor drops to its own user: it must reach its socket's directory.
	for _, d := range []string{filepath.Dir(f.Dir), f.Dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(f.stop)
	return f
}

func (f *LLDPFabric) run(args ...string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
		f.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// AddNS creates the namespace of a switch or node called name.
func (f *LLDPFabric) AddNS(name string) {
	ns := f.prefix + name
	f.run("/usr/sbin/ip", "netns", "add", ns)
	f.netns = append(f.netns, ns)
	f.run("/usr/sbin/ip", "-n", ns, "link", "set", "lo", "up")
}

// Socket is the control socket of name's lldpd.
func (f *LLDPFabric) Socket(name string) string { return filepath.Join(f.Dir, name+".sock") }

// StartLLDPd starts lldpd in name's namespace on the ports matching iface, with its own
// control socket and runtime directory, configured by the lldpcli commands in conf before it
// resumes (commands sent after it starts race its resume: a switch configured that way was
// seen to send one frame in 20 s); it returns the socket.
func (f *LLDPFabric) StartLLDPd(name, iface, descr string, conf ...string) string {
	f.t.Helper()
	ns := f.prefix + name
	sock := f.Socket(name)
	confFile := filepath.Join(f.Dir, name+".conf")
	if err := os.WriteFile(confFile, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
	// The private /run gives lldpd the chroot it was built with (/run/lldpd) where no
	// service made it, and keeps it off the host's.
	args := []string{"netns", "exec", ns, "/usr/bin/unshare", "-m", "/bin/sh", "-c",
		`mount -t tmpfs none /run && mkdir /run/lldpd && exec /usr/sbin/lldpd -d -u "$0" -I "$1" -S "$2" -O "$3"`,
		sock, iface, descr, confFile}
	cmd := exec.Command("/usr/sbin/ip", args...)
	log, err := os.Create(filepath.Join(f.Dir, name+".log"))
	if err != nil {
		f.t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.procs = append(f.procs, cmd)
	// lldpd creates its socket once it runs.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(end) {
			b, _ := os.ReadFile(filepath.Join(f.Dir, name+".log"))
			f.t.Fatalf("lldpd in %s did not create %s: %s", ns, sock, b)
		}
	}
	return sock
}

// StartSwitch starts a leaf switch's lldpd: on its swp* ports, with the system name sysName,
// port ids by interface name, a frame every second.
func (f *LLDPFabric) StartSwitch(name, sysName string) string {
	f.t.Helper()
	return f.StartLLDPd(name, "swp*", sysName+" switch", "configure system hostname "+sysName,
		"configure lldp portidsubtype ifname", "configure lldp tx-interval 1")
}

// Cable joins node's port iface to port swpN of leaf, both up.
func (f *LLDPFabric) Cable(node, iface, leaf string, port int) {
	f.t.Helper()
	f.cables++
	a, b := fmt.Sprintf("%sv%da", f.prefix, f.cables), fmt.Sprintf("%sv%db", f.prefix, f.cables)
	swp := fmt.Sprintf("swp%d", port)
	f.run("/usr/sbin/ip", "link", "add", a, "type", "veth", "peer", "name", b)
	f.run("/usr/sbin/ip", "link", "set", a, "netns", f.prefix+node)
	f.run("/usr/sbin/ip", "link", "set", b, "netns", f.prefix+leaf)
	f.run("/usr/sbin/ip", "-n", f.prefix+node, "link", "set", a, "name", iface)
	f.run("/usr/sbin/ip", "-n", f.prefix+leaf, "link", "set", b, "name", swp)
	f.run("/usr/sbin/ip", "-n", f.prefix+node, "link", "set", iface, "up")
	f.run("/usr/sbin/ip", "-n", f.prefix+leaf, "link", "set", swp, "up")
}

// WaitNeighbours waits up to timeout until name's lldpd knows n neighbours, and fails t
// otherwise, with what the daemons named in also see.
func (f *LLDPFabric) WaitNeighbours(name string, n int, timeout time.Duration, also ...string) {
	f.t.Helper()
	for end := time.Now().Add(timeout); ; time.Sleep(250 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := exec.CommandContext(ctx, "/usr/sbin/lldpcli", "-u", f.Socket(name), "-f", "keyvalue", "show", "neighbors").Output()
		cancel()
		if err == nil && strings.Count(string(out), ".via=") >= n {
			return
		}
		if time.Now().After(end) {
			f.t.Fatalf("lldpd of %s: fewer than %d neighbours after %s:\n%s", name, n, timeout, f.Describe(append([]string{name}, also...)...))
		}
	}
}

// Describe says what the lldpd of each name sees, and what they logged, for a failure
// message.
func (f *LLDPFabric) Describe(names ...string) string {
	var b strings.Builder
	for _, name := range names {
		for _, what := range []string{"interfaces", "neighbors", "statistics"} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			out, err := exec.CommandContext(ctx, "/usr/sbin/lldpcli", "-u", f.Socket(name), "show", what).CombinedOutput()
			cancel()
			fmt.Fprintf(&b, "--- %s: lldpcli show %s (%v)\n%s", name, what, err, out)
		}
		log, err := os.ReadFile(filepath.Join(f.Dir, name+".log"))
		fmt.Fprintf(&b, "--- %s: lldpd's log (%v)\n%s", name, err, log)
	}
	return b.String()
}

// stop ends every lldpd (SIGTERM to its process group, then SIGKILL) and removes the
// namespaces, and with them the veth pairs.
func (f *LLDPFabric) stop() {
	for _, c := range f.procs {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	for _, ns := range f.netns {
		if out, err := exec.Command("/usr/sbin/ip", "netns", "del", ns).CombinedOutput(); err != nil {
			f.t.Errorf("ip netns del %s: %v: %s", ns, err, out)
		}
	}
}
