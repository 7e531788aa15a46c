package serviceowner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/podrun/podrun/internal/ownerproc"
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
	// Nor, for a range podrun chooses, the addresses another store's
	// services owner holds on lo.
	if flag == "" {
		held, err := network.ServiceAddresses()
		if err != nil {
			return set, err
		}
		routes = append(routes, held...)
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

// process is the services owner as an on-demand process of the store.
func process(l store.Layout, logLevel string) ownerproc.Process {
	args := []string{"--root", l.Root, "--run-root", l.RunRoot}
	if logLevel != "" {
		args = append(args, "--log-level", logLevel)
	}
	return ownerproc.Process{
		Paths: l.ServicesOwner(), What: "the services owner",
		Needed: func() bool {
			if !store.HasObjectsForOwner(l) {
				return false
			}
			_, err := l.ReadServiceSettings() // else nothing was applied by a podrun that records them
			return err == nil
		},
		Args:    append(args, "services-owner"),
		LogPath: filepath.Join(l.ServicesDir(), "owner.log"),
	}
}

// Ensure starts the services owner when a pod or Service exists and no
// owner runs (none yet, or the last one crashed), and waits until it
// serves. shim is podrun-shim, run as `shim --root R --run-root RR
// services-owner`: the owner starts beside a store's first pod, and the lean
// binary starts several times cheaper than the CLI.
func Ensure(l store.Layout, shim, logLevel string) error {
	if store.OwnerPid(l.ServicesOwner()) != 0 {
		return nil
	}
	if err := os.MkdirAll(l.ServicesDir(), 0o700); err != nil {
		return err
	}
	return process(l, logLevel).Ensure(shim)
}

// WaitGone waits, once no pod or Service is left, until the services owner
// has removed the Service rules and exited, so that the command that deleted
// the last object leaves the host as it was.
func WaitGone(l store.Layout, timeout time.Duration) error {
	if err := process(l, "").WaitGone(timeout); err != nil {
		return err
	}
	return reclaim(l)
}

// reclaim removes what a services owner that crashed left on the host (the
// Service rules' table, its addresses on lo) once no object needs them and
// no owner runs, so that a delete after a crash still leaves the host as it
// was; the next owner would otherwise have done it, and none is started for
// an empty store.
func reclaim(l store.Layout) error {
	set, err := l.ReadServiceSettings()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	host, err := readHostState(l, set)
	if err != nil {
		return err
	}
	var cleanupErr error
	process(l, "").ReclaimIfIdle(func() {
		cleanupErr = errors.Join(network.SyncServices(context.Background(), host.net, nil), removeAddresses(host.addresses()))
	})
	return cleanupErr
}
