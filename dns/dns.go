// Package dns is podrun's cluster DNS: a DNS server (github.com/miekg/dns,
// the library CoreDNS is built on) that answers the cluster domain exactly as
// CoreDNS's kubernetes plugin does with kubeadm's Corefile
//
//	kubernetes cluster.local in-addr.arpa ip6.arpa {
//	   pods insecure
//	   fallthrough in-addr.arpa ip6.arpa
//	   ttl 30
//	}
//	forward . /etc/resolv.conf
//
// and forwards every other question to the host's resolvers. It serves from
// an in-memory Snapshot of Services, EndpointSlices and namespaces that its
// owner replaces (Server.Update) whenever the host's objects change; the
// owner process and the store that fills the snapshot are not built yet.
package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

const (
	// DefaultZone is the cluster domain.
	DefaultZone = "cluster.local."
	// DefaultTTL is the ttl kubeadm's Corefile gives the kubernetes plugin
	// (the plugin's own default is 5).
	DefaultTTL = 30
	// defaultUpstreamTimeout bounds one forwarded exchange (CoreDNS forward
	// gives up on an upstream after a few seconds as well).
	defaultUpstreamTimeout = 2 * time.Second
)

// Snapshot is what the cluster DNS answers from: the objects CoreDNS's
// kubernetes plugin watches.
type Snapshot struct {
	// Namespaces that exist; names in other namespaces are NXDOMAIN.
	Namespaces []string
	Services   []*corev1.Service
	// EndpointSlices of the Services (as services.EndpointSlices makes them);
	// only ready endpoints are answered, as CoreDNS does.
	EndpointSlices []*discoveryv1.EndpointSlice
}

// Config configures a Server.
type Config struct {
	// Zone is the cluster domain, DefaultZone when empty.
	Zone string
	// TTL of the answers from the cluster domain; DefaultTTL when 0.
	TTL uint32
	// Upstreams are host:port resolvers for everything outside the zone
	// (UpstreamsFromResolvConf reads the host's).
	Upstreams []string
	// UpstreamTimeout bounds one exchange with an upstream.
	UpstreamTimeout time.Duration
	// NameserverIP is the address pods use for the cluster DNS (the kube-dns
	// Service IP); it answers ns.dns.<zone>.
	NameserverIP string
}

// Server answers DNS questions over UDP and TCP.
type Server struct {
	cfg     Config
	idx     atomic.Pointer[index]
	mu      sync.Mutex
	servers []*mdns.Server
}

// New returns a server with an empty snapshot.
func New(cfg Config) *Server {
	if cfg.Zone == "" {
		cfg.Zone = DefaultZone
	}
	cfg.Zone = mdns.CanonicalName(cfg.Zone)
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.UpstreamTimeout == 0 {
		cfg.UpstreamTimeout = defaultUpstreamTimeout
	}
	s := &Server{cfg: cfg}
	s.Update(Snapshot{})
	return s
}

// Update replaces the snapshot; questions already being answered finish with
// the old one. The SOA serial becomes the time of the update, as CoreDNS
// takes it from the time of the last change it saw.
func (s *Server) Update(snap Snapshot) {
	s.idx.Store(buildIndex(snap, uint32(time.Now().Unix())))
}

// Start listens on addr ("ip:port"; port 0 picks one, the same for UDP and
// TCP) and serves until Shutdown. It returns the address it listens on.
func (s *Server) Start(addr string) (string, error) {
	for attempt := 0; ; attempt++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return "", fmt.Errorf("cluster DNS: listening on udp %s: %w", addr, err)
		}
		bound := pc.LocalAddr().String()
		ln, err := net.Listen("tcp", bound)
		if err != nil {
			pc.Close()
			_, port, _ := net.SplitHostPort(addr)
			if port == "0" && attempt < 5 {
				continue // the TCP port of the UDP one was taken; pick another
			}
			return "", fmt.Errorf("cluster DNS: listening on tcp %s: %w", bound, err)
		}
		s.serve(pc, ln)
		return bound, nil
	}
}

// udpIdleRead is how long the UDP server's read waits before it re-arms.
const udpIdleRead = 24 * time.Hour

// serve answers on pc and ln until Shutdown.
func (s *Server) serve(pc net.PacketConn, ln net.Listener) {
	// miekg/dns re-arms a read deadline of ReadTimeout (2 s by default) on
	// every UDP read (Server.readUDP) and loops when it expires: an idle
	// server woke every 2 s for nothing. Shutdown unblocks the read by
	// itself (SetReadDeadline in the past), so the deadline serves nothing.
	udp := &mdns.Server{PacketConn: pc, Handler: s, ReadTimeout: udpIdleRead}
	tcp := &mdns.Server{Listener: ln, Handler: s}
	started := make(chan struct{}, 2)
	udp.NotifyStartedFunc = func() { started <- struct{}{} }
	tcp.NotifyStartedFunc = func() { started <- struct{}{} }
	s.mu.Lock()
	s.servers = append(s.servers, udp, tcp)
	s.mu.Unlock()
	go func() { _ = udp.ActivateAndServe() }()
	go func() { _ = tcp.ActivateAndServe() }()
	<-started
	<-started
}

// Shutdown stops every listener.
func (s *Server) Shutdown() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	s.servers = nil
	return errors.Join(errs...)
}

// ServeDNS answers one question: the cluster zone and the reverse zones of
// its addresses from the snapshot, everything else from the upstreams.
func (s *Server) ServeDNS(w mdns.ResponseWriter, r *mdns.Msg) {
	if len(r.Question) != 1 || r.Opcode != mdns.OpcodeQuery {
		m := new(mdns.Msg)
		m.SetRcode(r, mdns.RcodeNotImplemented)
		_ = w.WriteMsg(m)
		return
	}
	idx := s.idx.Load()
	if m := s.answer(idx, r); m != nil {
		_ = w.WriteMsg(truncateForUDP(w, r, m))
		return
	}
	_ = w.WriteMsg(s.forward(context.Background(), w, r))
}

// truncateForUDP keeps an answer within what the client can receive over UDP.
func truncateForUDP(w mdns.ResponseWriter, r, m *mdns.Msg) *mdns.Msg {
	if _, udp := w.RemoteAddr().(*net.UDPAddr); !udp {
		return m
	}
	size := mdns.MinMsgSize
	if o := r.IsEdns0(); o != nil {
		size = int(o.UDPSize())
	}
	m.Truncate(size)
	return m
}
