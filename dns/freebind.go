package dns

import (
	"context"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// StartFreeBind is Start on an address the host may not hold yet (the pod
// bridge's gateway, which comes and goes with the first and last pod): the
// sockets are bound with IP_FREEBIND, as node-local-dns binds its listen
// address before the interface has it, and answer once the address is there.
func (s *Server) StartFreeBind(addr string) error {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", addr)
	if err != nil {
		return fmt.Errorf("cluster DNS: listening on udp %s: %w", addr, err)
	}
	ln, err := lc.Listen(context.Background(), "tcp4", addr)
	if err != nil {
		pc.Close()
		return fmt.Errorf("cluster DNS: listening on tcp %s: %w", addr, err)
	}
	s.serve(pc, ln)
	return nil
}
