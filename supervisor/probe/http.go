package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilio "k8s.io/utils/io"
)

// probeTransport is the kubelet's HTTP prober transport (pkg/probe/http.New):
// no certificate checks (the kubelet cannot know the pod's CA), no proxy from
// the host's environment, a fresh connection per probe, no gzip, and the
// lingering dialer.
var probeTransport = utilnet.SetTransportDefaults(&http.Transport{
	TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
	DisableKeepAlives:  true,
	Proxy:              http.ProxyURL(nil),
	DisableCompression: true,
	DialContext:        probeDialer().DialContext,
})

// lifecycleClient is the kubelet's insecureContainerLifecycleHTTPClient: no
// certificate checks and redirects only to the same host. A Transport with a
// nil Proxy never uses a proxy either.
var lifecycleClient = &http.Client{
	Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	},
	CheckRedirect: redirectChecker,
}

func newProbeClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: probeTransport, CheckRedirect: redirectChecker}
}

// redirectChecker is pkg/probe/http.RedirectChecker(false): redirects to the
// same host are followed (at most 10); a redirect elsewhere ends the request
// with the redirect response itself.
func redirectChecker(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// doHTTPProbe is pkg/probe/http.DoHTTPProbe: 200-299 is a success whose
// message is the body, 300-399 (a redirect not followed) a warning, anything
// else or a transport error (timeouts included) a failure.
func doHTTPProbe(req *http.Request, client *http.Client) (Result, string, error) {
	res, err := client.Do(req)
	if err != nil {
		return Failure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := utilio.ReadAtMost(res.Body, maxOutput)
	if err != nil && !errors.Is(err, utilio.ErrLimitReached) {
		return Failure, "", fmt.Errorf("reading the response of %s: %w", req.URL, err)
	}
	body := string(b)
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices {
			return Warning, fmt.Sprintf("Probe terminated redirects, Response body: %v", body), nil
		}
		return Success, body, nil
	}
	// The kubelet keeps the body out of this user-facing message (issue 99425).
	return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
}

// newRequest is pkg/probe/http.NewRequestForHTTPGetAction, bound to ctx so
// that stopping a worker aborts its request.
func newRequest(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, podIP, purpose string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return nil, err
	}
	u := formatURL(scheme, host, port, g.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	headers := make(http.Header)
	for _, h := range g.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", userAgent(purpose))
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		// An Accept header set to "" means: send none.
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// formatURL is the kubelet's: the path may carry a query; a path that does
// not parse is passed on as it is.
func formatURL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}
