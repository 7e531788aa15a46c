package serviceowner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/network"
	"github.com/podrun/podrun/services"
	"github.com/podrun/podrun/store"
)

// Settings returns the host's Service settings, recording them on first use:
// the service range is flag when given, else services.ChooseServiceCIDR's
// choice clear of the host's routes; the cluster DNS address is its tenth
// address; the pod network is the command's; resolvConf (the kubelet's
// --resolv-conf, "" for the host's) is where the cluster DNS finds its
// upstream resolvers. A range or resolv.conf given later that differs from
// the recorded one is refused while pods or Services exist.
func Settings(l store.Layout, flag, resolvConf string) (store.ServiceSettings, error) {
	paths := l.ServicesOwner()
	if err := os.MkdirAll(paths.Dir, 0o700); err != nil {
		return store.ServiceSettings{}, err
	}
	start := flock.New(paths.StartLockFile())
	if err := start.Lock(); err != nil {
		return store.ServiceSettings{}, err
	}
	defer start.Unlock()
	set, err := l.ReadServiceSettings()
	if err == nil {
		sameCIDR := flag == "" || flag == set.ServiceCIDR
		sameConf := resolvConf == set.ResolvConf
		if (sameCIDR && sameConf) || store.HasObjectsForOwner(l) {
			if !sameCIDR {
				return set, fmt.Errorf("--service-cidr %s: this host's service range is %s while pods or Services exist; delete them all to change it", flag, set.ServiceCIDR)
			}
			if !sameConf && resolvConf != "" {
				return set, fmt.Errorf("--resolv-conf %s: the cluster DNS forwards to the resolvers of %s while pods or Services exist; delete them all to change it", resolvConf, orHost(set.ResolvConf))
			}
			return set, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return set, err
	}
	routes, err := network.HostRoutes()
	if err != nil {
		return set, fmt.Errorf("listing host routes for the service range: %w", err)
	}
	// The pod subnet's own route is not in the way when the bridge exists.
	cidr, err := services.ChooseServiceCIDR(flag, routes)
	if err != nil {
		return set, err
	}
	set = store.ServiceSettings{ServiceCIDR: cidr.String(), ClusterDNS: services.DNSServiceIP(cidr).String(), Bridge: l.Bridge, Subnet: l.Subnet, ResolvConf: resolvConf}
	return set, l.WriteServiceSettings(set)
}

func orHost(path string) string {
	if path == "" {
		return "the host's resolv.conf"
	}
	return path
}

// Allocator is the allocator of the recorded service range.
func Allocator(set store.ServiceSettings) (services.Allocator, error) {
	cidr, err := netip.ParsePrefix(set.ServiceCIDR)
	if err != nil {
		return services.Allocator{}, err
	}
	return services.Allocator{CIDR: cidr, Reserved: []netip.Addr{services.DNSServiceIP(cidr)}}, nil
}

// AllocationLock serialises the allocation of ClusterIPs and node ports
// between commands applying Services.
func AllocationLock(l store.Layout) (unlock func(), err error) {
	paths := l.ServicesOwner()
	if err := os.MkdirAll(paths.Dir, 0o700); err != nil {
		return nil, err
	}
	f := flock.New(filepath.Join(paths.Dir, "alloc.lock"))
	if err := f.Lock(); err != nil {
		return nil, err
	}
	return func() { _ = f.Unlock() }, nil
}

// Ensure starts the services owner when a pod or Service exists and no
// owner runs (none yet, or the last one crashed), and waits until it
// serves. exe is this binary, re-executed as `exe --root R --run-root RR
// services-owner`.
func Ensure(l store.Layout, exe, logLevel string) error {
	paths := l.ServicesOwner()
	if store.OwnerPid(paths) != 0 {
		return nil
	}
	if err := os.MkdirAll(paths.Dir, 0o700); err != nil {
		return err
	}
	start := flock.New(paths.StartLockFile())
	if err := start.Lock(); err != nil {
		return err
	}
	defer start.Unlock()
	if store.OwnerPid(paths) != 0 || !store.HasObjectsForOwner(l) {
		return nil
	}
	if _, err := l.ReadServiceSettings(); err != nil {
		return nil // nothing was applied by a podrun that records them
	}
	if err := os.MkdirAll(l.ServicesDir(), 0o700); err != nil {
		return err
	}
	logPath := filepath.Join(l.ServicesDir(), "owner.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	args := []string{"--root", l.Root, "--run-root", l.RunRoot}
	if logLevel != "" {
		args = append(args, "--log-level", logLevel)
	}
	cmd := exec.Command(exe, append(args, "services-owner")...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("starting the services owner: %w", err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 64))
		got <- string(b)
	}()
	select {
	case s := <-got:
		if strings.HasPrefix(s, "ok") {
			return nil
		}
		err := <-exited
		return fmt.Errorf("the services owner exited (%v): %s", err, tail(logPath))
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("the services owner did not start within 30s: %s", tail(logPath))
	}
}

func tail(path string) string {
	data, _ := os.ReadFile(path)
	if len(data) > 2048 {
		data = data[len(data)-2048:]
	}
	return strings.TrimSpace(string(data))
}

// WaitGone waits, once no pod or Service is left, until the services owner
// has removed the Service rules and exited, so that the command that deleted
// the last object leaves the host as it was.
func WaitGone(l store.Layout, timeout time.Duration) error {
	paths := l.ServicesOwner()
	// An owner being started (Ensure holds the start lock until it serves)
	// is waited for too.
	if _, err := os.Stat(paths.StartLockFile()); err == nil {
		start := flock.New(paths.StartLockFile())
		if err := start.Lock(); err == nil {
			_ = start.Unlock()
		}
	}
	deadline := time.Now().Add(timeout)
	// The owner removes its pid record before its last steps (the DNS
	// server's shutdown, its lock): hold the process itself through a pidfd,
	// taken while the record shows it alive, and wait for its exit too.
	pidfd := -1
	if pid := store.OwnerPid(paths); pid != 0 {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			if store.OwnerPid(paths) == pid {
				pidfd = fd
			} else {
				unix.Close(fd) // the pid was reused before we held it
			}
		}
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	for store.OwnerPid(paths) != 0 {
		if store.HasObjectsForOwner(l) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the services owner (pid %d) did not exit within %s after the last pod and Service were deleted", store.OwnerPid(paths), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for pidfd >= 0 && !store.HasObjectsForOwner(l) {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("the services owner did not exit within %s after the last pod and Service were deleted", timeout)
		}
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(min(left, 100*time.Millisecond).Milliseconds())+1)
		if err == nil && n > 0 {
			return nil // exited
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return nil
		}
	}
	return nil
}
