package probe

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// doGRPCProbe is pkg/probe/grpc: the standard grpc.health.v1.Health/Check
// over plaintext, where SERVING is a success and everything else (no
// connection within the timeout, an error, another status) a failure with the
// kubelet's messages. It never returns an error.
//
// The call is made with net/http's unencrypted HTTP/2 (h2c) and the gRPC wire
// format written by hand (one unary call, one string field in, one enum field
// out), rather than with grpc-go: the supervisor is a small binary, and grpc-go
// would add about 7 MB and 40 package initialisers to it and to every container
// init it re-executes.
func doGRPCProbe(ctx context.Context, host, service string, port int, timeout time.Duration) (Result, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := dialBlocking(ctx, addr)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Failure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err), nil
		}
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}

	status, err := healthCheck(ctx, conn, addr, service)
	if err != nil {
		var st *grpcStatus
		if errors.As(err, &st) {
			switch st.code {
			case codeUnimplemented:
				return Failure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.msg), nil
			case codeDeadlineExceeded:
				return Failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
			}
		}
		return Failure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if status != servingStatusServing {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", servingStatusName(status)), nil
	}
	return Success, "service healthy", nil
}

// dialBlocking is what the kubelet's grpc.DialContext(..., grpc.WithBlock())
// does: connect, retrying with a backoff (grpc-go's starts at 1 s; this one at
// 50 ms, doubling, so a server that comes up within the timeout is reached),
// until a connection is made or ctx ends (a refused connection therefore fails
// only at the timeout).
func dialBlocking(ctx context.Context, addr string) (net.Conn, error) {
	delay := 50 * time.Millisecond
	for {
		conn, err := probeDialer().DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// grpcGoVersion is the grpc-go release whose "grpc-go/<version>" the kubelet's
// User-Agent carries (grpc-go appends it to WithUserAgent's string).
const grpcGoVersion = "1.83.2"

// gRPC status codes (google.golang.org/grpc/codes) by number.
const (
	codeDeadlineExceeded = 4
	codeUnimplemented    = 12
	codeUnavailable      = 14
	codeInternal         = 13
)

var codeNames = [...]string{"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
	"AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
	"Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"}

// grpcStatus is a non-OK gRPC status, printed as grpc-go's status error is.
type grpcStatus struct {
	code int
	msg  string
}

func (s *grpcStatus) Error() string {
	name := "Code(" + strconv.Itoa(s.code) + ")"
	if s.code >= 0 && s.code < len(codeNames) {
		name = codeNames[s.code]
	}
	return fmt.Sprintf("rpc error: code = %s desc = %s", name, s.msg)
}

// grpc.health.v1.HealthCheckResponse.ServingStatus.
const servingStatusServing = 1

func servingStatusName(s uint64) string {
	switch s {
	case 0:
		return "UNKNOWN"
	case 1:
		return "SERVING"
	case 2:
		return "NOT_SERVING"
	case 3:
		return "SERVICE_UNKNOWN"
	}
	return strconv.FormatUint(s, 10)
}

// healthCheck makes the unary call /grpc.health.v1.Health/Check over conn
// (gRPC over HTTP/2: a length-prefixed protobuf message each way, the status
// in the trailers, or in the headers of a trailers-only response).
func healthCheck(ctx context.Context, conn net.Conn, addr, service string) (uint64, error) {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	used := false
	tr := &http.Transport{
		Protocols: &protocols,
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			if used {
				return nil, errors.New("connection closed")
			}
			used = true
			return conn, nil
		},
	}
	defer tr.CloseIdleConnections()
	defer conn.Close()

	// HealthCheckRequest{service = 1}: omitted when empty, as proto3 does.
	var msg []byte
	if service != "" {
		msg = append([]byte{0x0a}, binary.AppendUvarint(nil, uint64(len(service)))...)
		msg = append(msg, service...)
	}
	body := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	body = append(body, msg...)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/grpc.health.v1.Health/Check", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	req.Header.Set("User-Agent", userAgent("probe")+" grpc-go/"+grpcGoVersion)
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set("Grpc-Timeout", strconv.FormatInt(max(time.Until(dl).Microseconds(), 1), 10)+"u")
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, transportError(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, transportError(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, &grpcStatus{code: codeUnavailable, msg: fmt.Sprintf("unexpected HTTP status code received from server: %d (%s)", resp.StatusCode, http.StatusText(resp.StatusCode))}
	}
	code := resp.Trailer.Get("Grpc-Status")
	text := resp.Trailer.Get("Grpc-Message")
	if code == "" { // a trailers-only response
		code, text = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if text != "" {
		if t, err := url.PathUnescape(text); err == nil {
			text = t
		}
	}
	n, err := strconv.Atoi(code)
	if err != nil {
		return 0, &grpcStatus{code: codeInternal, msg: "server closed the stream without sending trailers"}
	}
	if n != 0 {
		return 0, &grpcStatus{code: n, msg: text}
	}
	return parseHealthResponse(data)
}

// transportError is the status grpc-go reports for a call that failed below gRPC.
func transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &grpcStatus{code: codeDeadlineExceeded, msg: ctx.Err().Error()}
	}
	return &grpcStatus{code: codeUnavailable, msg: err.Error()}
}

// parseHealthResponse reads HealthCheckResponse{status = 1 (enum)} from one
// length-prefixed, uncompressed gRPC message.
func parseHealthResponse(data []byte) (uint64, error) {
	if len(data) < 5 || data[0] != 0 || int(binary.BigEndian.Uint32(data[1:5])) != len(data)-5 {
		return 0, &grpcStatus{code: codeInternal, msg: "malformed health check response"}
	}
	msg := data[5:]
	var status uint64
	for len(msg) > 0 {
		key, n := binary.Uvarint(msg)
		if n <= 0 {
			return 0, &grpcStatus{code: codeInternal, msg: "malformed health check response"}
		}
		msg = msg[n:]
		switch key & 7 {
		case 0: // varint
			v, n := binary.Uvarint(msg)
			if n <= 0 {
				return 0, &grpcStatus{code: codeInternal, msg: "malformed health check response"}
			}
			msg = msg[n:]
			if key>>3 == 1 {
				status = v
			}
		case 2: // length-delimited: skipped
			l, n := binary.Uvarint(msg)
			if n <= 0 || uint64(len(msg)-n) < l {
				return 0, &grpcStatus{code: codeInternal, msg: "malformed health check response"}
			}
			msg = msg[n+int(l):]
		case 1:
			if len(msg) < 8 {
				return 0, &grpcStatus{code: codeInternal, msg: "malformed health check response"}
			}
			msg = msg[8:]
		case 5:
			if len(msg) < 4 {
				return 0, &grpcStatus{code: codeInternal, msg: "malformed health check response"}
			}
			msg = msg[4:]
		default:
			return 0, &grpcStatus{code: codeInternal, msg: "malformed health check response"}
		}
	}
	return status, nil
}
