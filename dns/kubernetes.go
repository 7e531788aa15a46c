package dns

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
)

// The kinds of failed lookups CoreDNS's kubernetes plugin turns into
// NXDOMAIN (IsNameError).
var (
	errNoItems        = errors.New("no items found")
	errNsNotExposed   = errors.New("namespace is not exposed")
	errInvalidRequest = errors.New("invalid query name")
)

// recordRequest is the plugin's parsed question name.
type recordRequest struct {
	port, protocol, endpoint, service, namespace, podOrSvc string
}

// parseRequest is the plugin's parseRequest: _port._protocol.service.ns.svc,
// endpoint.service.ns.svc, service.ns.svc or pod.ns.pod under the zone.
func parseRequest(name, zone string) (recordRequest, error) {
	var r recordRequest
	base := strings.TrimSuffix(strings.TrimSuffix(name, zone), ".")
	if base == "" || base == "svc" || base == "pod" {
		return r, nil
	}
	segs := mdns.SplitDomainName(base)
	last := len(segs) - 1
	r.podOrSvc = segs[last]
	if r.podOrSvc != "pod" && r.podOrSvc != "svc" {
		return r, errInvalidRequest
	}
	last--
	if last < 0 {
		return r, nil
	}
	r.namespace = segs[last]
	last--
	if last < 0 {
		return r, nil
	}
	r.service = segs[last]
	last--
	if last < 0 {
		return r, nil
	}
	switch last {
	case 0:
		r.endpoint = segs[last]
	case 1:
		r.protocol = strings.TrimPrefix(segs[last], "_")
		r.port = strings.TrimPrefix(segs[last-1], "_")
	default:
		return r, errInvalidRequest
	}
	return r, nil
}

// record is the plugin's msg.Service: an address (or, for ExternalName, a
// name), a port, and the domain an SRV record points at.
type record struct {
	host   string
	port   int
	target string
}

func matchPortAndProtocol(aPort, bPort, aProto, bProto string) bool {
	return (aPort == "" || strings.EqualFold(aPort, bPort)) && (aProto == "" || strings.EqualFold(aProto, bProto))
}

// records is the plugin's Records: the answers for a name of the zone.
func (s *Server) records(x *index, name string) ([]record, error) {
	r, err := parseRequest(name, s.cfg.Zone)
	if err != nil {
		return nil, err
	}
	if r.podOrSvc == "" {
		return nil, nil
	}
	if !x.namespaces[r.namespace] {
		return nil, errNsNotExposed
	}
	if r.podOrSvc == "pod" {
		return s.findPods(r)
	}
	return s.findServices(x, r)
}

// findPods is the plugin's findPods in "pods insecure" mode: any
// 1-2-3-4.<ns>.pod name of an existing namespace is that address.
func (s *Server) findPods(r recordRequest) ([]record, error) {
	if r.service == "" {
		return nil, nil
	}
	if r.endpoint != "" || r.port != "" {
		return nil, errNoItems
	}
	var ip string
	if strings.Count(r.service, "-") == 3 && !strings.Contains(r.service, "--") {
		ip = strings.ReplaceAll(r.service, "-", ".")
	} else {
		ip = strings.ReplaceAll(r.service, "-", ":")
	}
	if net.ParseIP(ip) == nil {
		return nil, errNoItems
	}
	return []record{{host: ip, target: strings.Join([]string{r.service, r.namespace, "pod", s.cfg.Zone}, ".")}}, nil
}

// findServices is the plugin's findServices.
func (s *Server) findServices(x *index, r recordRequest) ([]record, error) {
	if r.service == "" {
		return nil, nil // the namespace exists: NODATA
	}
	svc := x.services[key(r.service, r.namespace)]
	if svc == nil {
		return nil, errNoItems
	}
	svcDomain := strings.Join([]string{svc.Name, svc.Namespace, "svc", s.cfg.Zone}, ".")
	var out []record
	err := errNoItems
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		if r.endpoint != "" {
			return nil, errNoItems
		}
		if net.ParseIP(svc.Spec.ExternalName) == nil {
			out = append(out, record{host: mdns.Fqdn(svc.Spec.ExternalName), target: svcDomain})
			err = nil
		}
	case svc.Spec.ClusterIP == corev1.ClusterIPNone || r.endpoint != "":
		for _, ep := range x.endpoints[key(svc.Name, svc.Namespace)] {
			host := endpointHostname(ep)
			if r.endpoint != "" && !strings.EqualFold(r.endpoint, host) {
				continue
			}
			for _, p := range ep.ports {
				if !matchPortAndProtocol(r.port, p.name, r.protocol, p.protocol) {
					continue
				}
				out = append(out, record{host: ep.ip, port: int(p.port), target: host + "." + svcDomain})
				err = nil
			}
		}
	default:
		for _, p := range svc.Spec.Ports {
			if !matchPortAndProtocol(r.port, p.Name, r.protocol, string(p.Protocol)) {
				continue
			}
			err = nil
			for _, ip := range svc.Spec.ClusterIPs {
				out = append(out, record{host: ip, port: int(p.Port), target: svcDomain})
			}
		}
	}
	return out, err
}

func isNameError(err error) bool {
	return errors.Is(err, errNoItems) || errors.Is(err, errNsNotExposed) || errors.Is(err, errInvalidRequest)
}

func (s *Server) hdr(name string, t uint16) mdns.RR_Header {
	return mdns.RR_Header{Name: name, Rrtype: t, Class: mdns.ClassINET, Ttl: s.cfg.TTL}
}

// soa is the plugin's SOA for the zone.
func (s *Server) soa(x *index) *mdns.SOA {
	return &mdns.SOA{
		Hdr:     mdns.RR_Header{Name: s.cfg.Zone, Rrtype: mdns.TypeSOA, Class: mdns.ClassINET, Ttl: min(s.cfg.TTL, 300)},
		Ns:      "ns.dns." + s.cfg.Zone,
		Mbox:    "hostmaster." + s.cfg.Zone,
		Serial:  x.serial,
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  s.cfg.TTL,
	}
}

// answer returns the reply for a question the cluster DNS owns, or nil when
// the question goes upstream.
func (s *Server) answer(x *index, r *mdns.Msg) *mdns.Msg {
	q := r.Question[0]
	name := strings.ToLower(mdns.Fqdn(q.Name))
	if q.Qclass != mdns.ClassINET {
		return nil
	}
	if strings.HasSuffix(name, ".in-addr.arpa.") || strings.HasSuffix(name, ".ip6.arpa.") {
		return s.reverse(x, r, name)
	}
	if !mdns.IsSubDomain(s.cfg.Zone, name) {
		return nil
	}
	m := new(mdns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	m.Compress = true

	if name == s.cfg.Zone {
		switch q.Qtype {
		case mdns.TypeSOA:
			m.Answer = []mdns.RR{s.soa(x)}
			return m
		case mdns.TypeNS:
			m.Answer = []mdns.RR{&mdns.NS{Hdr: s.hdr(q.Name, mdns.TypeNS), Ns: "ns.dns." + s.cfg.Zone}}
			if ip := net.ParseIP(s.cfg.NameserverIP).To4(); ip != nil {
				m.Extra = []mdns.RR{&mdns.A{Hdr: s.hdr("ns.dns."+s.cfg.Zone, mdns.TypeA), A: ip}}
			}
			return m
		}
	}
	if name == "ns.dns."+s.cfg.Zone && q.Qtype == mdns.TypeA {
		if ip := net.ParseIP(s.cfg.NameserverIP).To4(); ip != nil {
			m.Answer = []mdns.RR{&mdns.A{Hdr: s.hdr(q.Name, mdns.TypeA), A: ip}}
			return m
		}
	}
	if name == "dns-version."+s.cfg.Zone && q.Qtype == mdns.TypeTXT {
		// The Kubernetes DNS specification's schema version record.
		m.Answer = []mdns.RR{&mdns.TXT{Hdr: s.hdr(q.Name, mdns.TypeTXT), Txt: []string{"1.1.0"}}}
		return m
	}

	recs, err := s.records(x, name)
	if isNameError(err) {
		m.Rcode = mdns.RcodeNameError
		m.Ns = []mdns.RR{s.soa(x)}
		return m
	}
	switch q.Qtype {
	case mdns.TypeA, mdns.TypeAAAA:
		m.Answer = s.addresses(x, q, recs, nil)
	case mdns.TypeSRV:
		m.Answer, m.Extra = s.srv(q, recs)
	case mdns.TypeCNAME:
		for _, rec := range recs {
			if net.ParseIP(rec.host) == nil {
				m.Answer = append(m.Answer, &mdns.CNAME{Hdr: s.hdr(q.Name, mdns.TypeCNAME), Target: rec.host})
			}
		}
	}
	if len(m.Answer) == 0 {
		m.Ns = []mdns.RR{s.soa(x)} // NODATA
	}
	return m
}

// addresses is plugin.A / plugin.AAAA: the addresses of the records (each
// once), and for an ExternalName the CNAME followed by the target's
// addresses. A target inside the zone is resolved from the snapshot (at most
// 8 CNAMEs deep, the CNAME kept only when the target has addresses); any
// other target is asked upstream, and the CNAME is kept with whatever the
// upstream answered (even NXDOMAIN: the plugin drops it only when the lookup
// itself fails), as plugin.A does with b.Lookup.
func (s *Server) addresses(x *index, q mdns.Question, recs []record, prev []mdns.RR) []mdns.RR {
	var out []mdns.RR
	seen := map[string]bool{}
	for _, rec := range recs {
		ip := net.ParseIP(rec.host)
		switch {
		case ip == nil:
			if mdns.IsSubDomain(mdns.CanonicalName(rec.host), mdns.CanonicalName(q.Name)) {
				continue // a CNAME to itself
			}
			cname := &mdns.CNAME{Hdr: s.hdr(q.Name, mdns.TypeCNAME), Target: rec.host}
			if len(prev) > 7 || duplicateCNAME(cname, prev) {
				continue
			}
			if target := mdns.CanonicalName(rec.host); mdns.IsSubDomain(s.cfg.Zone, target) {
				next, err := s.records(x, target)
				if err != nil {
					continue
				}
				more := s.addresses(x, mdns.Question{Name: rec.host, Qtype: q.Qtype, Qclass: q.Qclass}, next, append(prev, cname))
				if len(more) > 0 {
					out = append(out, cname)
					out = append(out, more...)
				}
				continue
			}
			up := new(mdns.Msg)
			up.SetQuestion(rec.host, q.Qtype)
			up.RecursionDesired = true
			reply, err := s.exchange(up, "udp")
			if err != nil {
				continue
			}
			out = append(out, cname)
			out = append(out, reply.Answer...)
		case ip.To4() != nil && q.Qtype == mdns.TypeA:
			if !seen[rec.host] {
				seen[rec.host] = true
				out = append(out, &mdns.A{Hdr: s.hdr(q.Name, mdns.TypeA), A: ip.To4()})
			}
		case ip.To4() == nil && q.Qtype == mdns.TypeAAAA:
			if !seen[rec.host] {
				seen[rec.host] = true
				out = append(out, &mdns.AAAA{Hdr: s.hdr(q.Name, mdns.TypeAAAA), AAAA: ip})
			}
		}
	}
	return out
}

// duplicateCNAME is CoreDNS's dnsutil.DuplicateCNAME: the CNAME is already
// in the chain (a loop).
func duplicateCNAME(r *mdns.CNAME, records []mdns.RR) bool {
	for _, rec := range records {
		if v, ok := rec.(*mdns.CNAME); ok && v.Target == r.Target {
			return true
		}
	}
	return false
}

// srv is plugin.SRV: one SRV per record pointing at the record's domain,
// weights shared out per priority, the target's address in the additional
// section.
func (s *Server) srv(q mdns.Question, recs []record) (answer, extra []mdns.RR) {
	total := 0
	for _, rec := range recs {
		if rec.port != -1 {
			total += 100
		}
	}
	seen := map[string]bool{}
	for _, rec := range recs {
		if rec.port == -1 {
			continue
		}
		weight := uint16(math.Floor(100.0 / float64(total) * 100))
		if weight == 0 {
			weight = 1
		}
		ip := net.ParseIP(rec.host)
		target := rec.target
		if ip == nil {
			target = rec.host // ExternalName: the SRV points at the external name
		}
		k := fmt.Sprintf("%s/%d", target, rec.port)
		if seen[k] {
			continue
		}
		seen[k] = true
		answer = append(answer, &mdns.SRV{Hdr: s.hdr(q.Name, mdns.TypeSRV), Priority: 0, Weight: weight, Port: uint16(rec.port), Target: target})
		if ip == nil || seen["addr/"+target] {
			continue
		}
		seen["addr/"+target] = true
		if ip4 := ip.To4(); ip4 != nil {
			extra = append(extra, &mdns.A{Hdr: s.hdr(target, mdns.TypeA), A: ip4})
		} else {
			extra = append(extra, &mdns.AAAA{Hdr: s.hdr(target, mdns.TypeAAAA), AAAA: ip})
		}
	}
	return answer, extra
}

// reverse is the plugin's Reverse (serviceRecordForIP): a cluster IP names
// its Service, an endpoint address its endpoint; other reverse names fall
// through to the upstreams (nil).
func (s *Server) reverse(x *index, r *mdns.Msg, name string) *mdns.Msg {
	q := r.Question[0]
	ip := extractAddressFromReverse(name)
	if ip == "" || q.Qtype != mdns.TypePTR {
		return nil
	}
	var targets []string
	if svc := x.svcByIP[ip]; svc != nil {
		targets = []string{strings.Join([]string{svc.Name, svc.Namespace, "svc", s.cfg.Zone}, ".")}
	} else {
		for _, ref := range x.epByIP[ip] {
			targets = append(targets, strings.Join([]string{endpointHostname(ref.ep), ref.svc, ref.namespace, "svc", s.cfg.Zone}, "."))
		}
	}
	if len(targets) == 0 {
		return nil
	}
	m := new(mdns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	seen := map[string]bool{}
	for _, t := range targets {
		if !seen[t] {
			seen[t] = true
			m.Answer = append(m.Answer, &mdns.PTR{Hdr: s.hdr(q.Name, mdns.TypePTR), Ptr: t})
		}
	}
	return m
}

// extractAddressFromReverse is CoreDNS's dnsutil.ExtractAddressFromReverse
// for IPv4 names (d.c.b.a.in-addr.arpa.).
func extractAddressFromReverse(name string) string {
	base, ok := strings.CutSuffix(name, ".in-addr.arpa.")
	if !ok {
		return ""
	}
	labels := strings.Split(base, ".")
	if len(labels) != 4 {
		return ""
	}
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	ip := net.ParseIP(strings.Join(labels, "."))
	if ip == nil || ip.To4() == nil {
		return ""
	}
	return ip.String()
}
