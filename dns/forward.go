package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	mdns "github.com/miekg/dns"
)

// UpstreamsFromResolvConf returns the nameservers of a resolv.conf as
// host:port (port 53), leaving out self (the cluster DNS's own address, which
// would make a loop). Give it network.HostResolvConf(), the file the kubelet
// would use: /run/systemd/resolve/resolv.conf behind systemd-resolved's stub.
func UpstreamsFromResolvConf(path string, self ...string) ([]string, error) {
	cfg, err := mdns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading upstream resolvers from %s: %w", path, err)
	}
	skip := map[string]bool{}
	for _, s := range self {
		skip[s] = true
	}
	var out []string
	for _, s := range cfg.Servers {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		hp := net.JoinHostPort(a.String(), cfg.Port)
		if skip[hp] || skip[a.String()] {
			continue
		}
		out = append(out, hp)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no usable nameserver in %s", path)
	}
	return out, nil
}

// forward is CoreDNS's forward plugin reduced to what one host needs: the
// question goes to the upstreams in order, over the transport the client
// used, until one answers; none answering is SERVFAIL.
func (s *Server) forward(_ context.Context, w mdns.ResponseWriter, r *mdns.Msg) *mdns.Msg {
	proto := "udp"
	if _, tcp := w.RemoteAddr().(*net.TCPAddr); tcp {
		proto = "tcp"
	}
	reply, err := s.exchange(r, proto)
	if err != nil {
		m := new(mdns.Msg)
		m.SetRcode(r, mdns.RcodeServerFailure)
		return m
	}
	reply.Id = r.Id
	return reply
}

func (s *Server) exchange(r *mdns.Msg, proto string) (*mdns.Msg, error) {
	if len(s.cfg.Upstreams) == 0 {
		return nil, errors.New("no upstream resolvers")
	}
	c := &mdns.Client{Net: proto, Timeout: s.cfg.UpstreamTimeout}
	var errs []error
	for _, up := range s.cfg.Upstreams {
		reply, _, err := c.Exchange(r, up)
		if err == nil {
			return reply, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", up, err))
	}
	return nil, errors.Join(errs...)
}
