// Package serviceowner is the services owner: the one process per host store
// that does the control plane's and the node's Service work while any pod or
// Service exists. It serves the cluster DNS on the kube-dns ClusterIP, a local
// address of the host while it runs, watches the store, and on every change computes the
// EndpointSlices (the EndpointSlice controller), the data plane's ports
// (kube-proxy) and the DNS snapshot (CoreDNS's kubernetes plugin). Commands
// start it on demand (Ensure) as they start pod supervisors; it exits, after
// removing the Service rules, once the last pod and Service are gone.
package serviceowner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"reflect"
	"sort"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/dns"
	"github.com/podrun/podrun/internal/ownerproc"
	"github.com/podrun/podrun/network"
	"github.com/podrun/podrun/services"
	"github.com/podrun/podrun/store"
)

// resyncEvery is the level-triggered fallback: the owner recomputes this
// often even when no change was seen, kube-proxy's --sync-period (30 s by
// default). A resync whose rules equal the last ones applied only checks that
// the table is still there (fullSyncEvery bounds how long it trusts that).
const resyncEvery = 30 * time.Second

// fullSyncEvery is how long the owner goes without rewriting rules that did
// not change, kube-proxy's proxyutil.FullSyncPeriod (1 hour).
const fullSyncEvery = time.Hour

// state is what the owner computes from the store in one pass.
type state struct {
	services []*corev1.Service
	pods     []*corev1.Pod
	slices   []*discoveryv1.EndpointSlice
	empty    bool
}

func read(l store.Layout) state {
	var st state
	st.services = l.Services("")
	recs, _ := store.ListPods(l, "")
	for _, r := range recs {
		if r.Broken != nil {
			continue
		}
		st.pods = append(st.pods, r.View())
	}
	st.empty = len(st.services) == 0 && len(recs) == 0
	for _, s := range st.services {
		st.slices = append(st.slices, services.EndpointSlices(s, st.pods)...)
	}
	return st
}

// Owner is a running services owner.
type Owner struct {
	l       store.Layout
	set     store.ServiceSettings
	net     network.Config
	dnsIP   netip.Addr
	cidr    netip.Prefix
	gateway netip.Addr
	srv     *dns.Server
	log     *slog.Logger

	// rules writes the Service rules (network.SyncServices) and tableExists
	// checks over netlink that their table is there
	// (network.ServicesTableExists); tests replace them.
	rules       func(ctx context.Context, ports []network.ServicePort) error
	tableExists func() (bool, error)
	// applied are the ports last written, at lastFull; valid says they are.
	applied  []network.ServicePort
	lastFull time.Time
	valid    bool
}

// syncRules writes ports unless they equal the ports last written and the
// table is as they left it, as kube-proxy's nftables syncProxyRules skips the
// services that did not change and does a full sync only when needFullSync
// or FullSyncPeriod says so: a resync with nothing new runs no nft process.
// Ports that make no rule leave no table (network.HasServiceRules): its
// absence is then what the last write left, not a table to restore.
func (o *Owner) syncRules(ctx context.Context, ports []network.ServicePort) error {
	if o.valid && time.Since(o.lastFull) < fullSyncEvery && reflect.DeepEqual(ports, o.applied) {
		ok, err := o.tableExists()
		if err == nil && ok == network.HasServiceRules(ports) {
			return nil
		}
		if err != nil {
			o.log.Warn("checking the Service rules' table", "err", err)
		}
	}
	o.valid = false
	if err := o.rules(ctx, ports); err != nil {
		return err
	}
	o.applied, o.lastFull, o.valid = ports, time.Now(), true
	return nil
}

// hostState is what an owner keeps on the host for a store, from its
// recorded settings: the network its Service rules' table belongs to, and
// its addresses on lo.
type hostState struct {
	net   network.Config
	dnsIP netip.Addr
	cidr  netip.Prefix
}

func readHostState(l store.Layout, set store.ServiceSettings) (hostState, error) {
	h := hostState{net: network.Config{RunRoot: l.RunRoot, StateDir: l.NetworkDir(), Bridge: set.Bridge, Subnet: set.Subnet}}
	var err error
	if h.dnsIP, err = netip.ParseAddr(set.ClusterDNS); err != nil {
		return h, fmt.Errorf("the recorded cluster DNS address: %w", err)
	}
	if h.cidr, err = netip.ParsePrefix(set.ServiceCIDR); err != nil {
		return h, fmt.Errorf("the recorded service range: %w", err)
	}
	return h, nil
}

// addresses are the owner's addresses on lo: the kube-dns ClusterIP and the
// kubernetes Service's.
func (h hostState) addresses() []netip.Addr {
	return []netip.Addr{h.dnsIP, services.KubernetesServiceIP(h.cidr)}
}

// removeAddresses takes an owner's addresses off lo.
func removeAddresses(ips []netip.Addr) error {
	var errs []error
	for _, ip := range ips {
		errs = append(errs, network.RemoveServiceAddress(ip))
	}
	return errors.Join(errs...)
}

// withKubernetes adds the kubernetes Service to a store's Services unless
// one of that name is stored in the default namespace.
func (o *Owner) withKubernetes(svcs []*corev1.Service) []*corev1.Service {
	for _, s := range svcs {
		if s.Namespace == metav1.NamespaceDefault && s.Name == "kubernetes" {
			return svcs
		}
	}
	return append(append([]*corev1.Service(nil), svcs...), services.KubernetesService(o.cidr))
}

// sync makes the rules and the DNS snapshot match st.
func (o *Owner) sync(ctx context.Context, st state) error {
	ports := services.ProxyPorts(st.services, st.slices)
	if err := o.syncRules(ctx, ports); err != nil {
		return err
	}
	nss := map[string]bool{"default": true, "kube-system": true}
	for _, s := range st.services {
		nss[s.Namespace] = true
	}
	for _, p := range st.pods {
		nss[p.Namespace] = true
	}
	var list []string
	for ns := range nss {
		list = append(list, ns)
	}
	sort.Strings(list)
	o.srv.Update(dns.Snapshot{Namespaces: list, Services: o.withKubernetes(st.services), EndpointSlices: st.slices})
	return nil
}

// Run is the body of `podrun-shim services-owner`. ready is
// written to and closed once the cluster DNS answers and the rules are in
// place.
func Run(l store.Layout, ready *os.File) error {
	// One owner at a time: a new one waits for the one that is exiting.
	release, err := process(l, "").Hold()
	if err != nil {
		return err
	}
	defer release()
	set, err := l.ReadServiceSettings()
	if err != nil {
		return fmt.Errorf("reading the service settings: %w", err)
	}
	o := &Owner{l: l, set: set, log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	host, err := readHostState(l, set)
	if err != nil {
		return err
	}
	o.net, o.dnsIP, o.cidr = host.net, host.dnsIP, host.cidr
	o.rules = func(ctx context.Context, ports []network.ServicePort) error {
		return network.SyncServices(ctx, o.net, ports)
	}
	o.tableExists = func() (bool, error) { return network.ServicesTableExists(o.net) }
	if o.gateway, err = o.net.Gateway(); err != nil {
		return err
	}
	hostConf := set.ResolvConf // the kubelet's --resolv-conf, else the host's
	if hostConf == "" {
		if hostConf, err = network.HostResolvConf(); err != nil {
			return err
		}
	}
	upstreams, err := dns.UpstreamsFromResolvConf(hostConf, o.dnsIP.String(), o.gateway.String())
	if err != nil {
		o.log.Warn("no upstream resolvers: names outside the cluster domain fail", "err", err)
	}
	// The kube-dns ClusterIP and the kubernetes Service's are local
	// addresses while the owner runs (on lo): the DNS server listens on the
	// first, and a pod's query goes to its gateway, the host, and is
	// delivered here with no DNAT rule, so a store's first pod needs no nft
	// run; a connection to the second is refused at once (no API server).
	// The owner that exits removes them; one that crashed leaves them to the
	// next owner, and the leak check names them.
	defer func() {
		if err := removeAddresses(host.addresses()); err != nil {
			o.log.Error("removing the Service addresses", "err", err)
		}
	}()
	for _, ip := range host.addresses() {
		if err := network.AddServiceAddress(ip); err != nil {
			return err
		}
	}
	o.srv = dns.New(dns.Config{Upstreams: upstreams, NameserverIP: o.dnsIP.String()})
	if err := o.srv.StartFreeBind(net.JoinHostPort(o.dnsIP.String(), "53")); err != nil {
		return err
	}
	defer o.srv.Shutdown()
	ctx := context.Background()

	for _, d := range []string{l.PodsDir(), l.ObjectsDir()} {
		_ = os.MkdirAll(d, 0o700)
	}
	watcher, err := ownerproc.NewWatcher(func() []string { return ownerproc.StoreDirs(l, "services") })
	if err != nil {
		return err
	}
	defer watcher.Close()
	// SIGTERM or SIGINT (a host shutting down, a user's kill): the owner
	// stops as a crashed one would be replaced (the next command starts
	// another), but its addresses leave lo with it and the DNS server's
	// sockets close (the defers above); the Service rules stay for the pods'
	// traffic until the last object goes.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	go func() {
		if sig, ok := <-sigs; ok {
			o.log.Warn("stopping on a signal; the next podrun command starts another services owner", "signal", sig.String())
			watcher.Close()
		}
	}()
	st := read(l)
	if err := o.sync(ctx, st); err != nil {
		return err
	}
	if err := process(l, "").Serving(ready); err != nil {
		return err
	}
	for {
		// Empty already (the last object went while the owner started), or
		// after a change: exit when it still is under the start lock.
		if st.empty {
			if o.exit(ctx) {
				return nil
			}
			// An object came back under the start lock: serve it.
			st = read(l)
			if err := o.sync(ctx, st); err != nil {
				o.log.Error("syncing Services", "err", err)
			}
		}
		if !watcher.Wait(resyncEvery, func(err error) { o.log.Warn("watching the store", "err", err) }) {
			return nil
		}
		st = read(l)
		if st.empty {
			continue
		}
		if err := o.sync(ctx, st); err != nil {
			o.log.Error("syncing Services", "err", err)
		}
	}
}

// exit ends the owner when the store is still empty under the start lock (so
// that a command recording a new object either is seen here or finds no
// owner and starts one): the Service rules go, then the owner's record.
func (o *Owner) exit(ctx context.Context) bool {
	return process(o.l, "").ExitIfIdle(func() {
		if err := network.SyncServices(ctx, o.net, nil); err != nil {
			o.log.Error("removing the Service rules", "err", err)
		}
		_ = o.srv.Shutdown()
	})
}
