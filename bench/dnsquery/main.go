// Command dnsquery is the services benchmark's client inside a pod: a static
// program (CGO_ENABLED=0) the bench mounts into the pod with a hostPath
// volume, so that no process is started per query.
//
//	dnsquery -n 10000 NAME           A queries, one after another, to the first
//	                                 nameserver of /etc/resolv.conf; prints JSON
//	dnsquery -connect IP:PORT        connects every millisecond until a TCP
//	                                 connection is accepted; prints the time of
//	                                 that connection (Unix ns)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	mdns "github.com/miekg/dns"
)

func main() {
	n := flag.Int("n", 10000, "queries")
	connect := flag.String("connect", "", "connect to IP:PORT until accepted")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after")
	flag.Parse()
	if *connect != "" {
		deadline := time.Now().Add(*timeout)
		for time.Now().Before(deadline) {
			c, err := net.DialTimeout("tcp", *connect, 200*time.Millisecond)
			if err == nil {
				at := time.Now()
				c.Close()
				fmt.Println(at.UnixNano())
				return
			}
			time.Sleep(time.Millisecond)
		}
		fmt.Fprintln(os.Stderr, "no connection to", *connect)
		os.Exit(1)
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: dnsquery [-n N] NAME | -connect IP:PORT")
		os.Exit(2)
	}
	cfg, err := mdns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil || len(cfg.Servers) == 0 {
		fmt.Fprintln(os.Stderr, "no nameserver:", err)
		os.Exit(1)
	}
	server := net.JoinHostPort(cfg.Servers[0], cfg.Port)
	conn, err := mdns.Dial("udp", server)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	q := new(mdns.Msg)
	q.SetQuestion(mdns.Fqdn(flag.Arg(0)), mdns.TypeA)
	lat := make([]int64, 0, *n)
	errs := 0
	start := time.Now()
	for i := 0; i < *n; i++ {
		q.Id = mdns.Id()
		t0 := time.Now()
		_ = conn.SetDeadline(t0.Add(2 * time.Second))
		if err := conn.WriteMsg(q); err != nil {
			errs++
			continue
		}
		r, err := conn.ReadMsg()
		if err != nil || r.Id != q.Id || r.Rcode != mdns.RcodeSuccess || len(r.Answer) == 0 {
			errs++
			continue
		}
		lat = append(lat, time.Since(t0).Nanoseconds())
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{
		"queries": *n, "errors": errs, "seconds": time.Since(start).Seconds(), "latencies_ns": lat,
	})
}
