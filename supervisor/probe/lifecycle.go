package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RunHandler runs a postStart or preStop hook as the kubelet's
// lifecycle.handlerRunner.Run does and returns, on failure, the kubelet's
// message (the one of its FailedPostStartHook / FailedPreStopHook events)
// with the error. ctx bounds the hook: the caller cancels it when the
// container stops or the grace period ends.
//
// As in the kubelet, an exec hook fails on a non-zero exit, an httpGet hook
// only when no response arrives (the status code is not looked at), and a
// sleep hook when ctx ends first.
func RunHandler(ctx context.Context, h *corev1.LifecycleHandler, t Target) (string, error) {
	name, pod := containerName(t.Container), formatPod(t.Pod)
	switch {
	case h.Exec != nil:
		output, err := runHookExec(ctx, t.Exec, h.Exec.Command)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, name, pod, err, string(output)), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := runHookHTTP(ctx, h.HTTPGet, t); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, name, pod, err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := runHookSleep(ctx, h.Sleep.Seconds); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, name, pod, err), err
		}
		return "", nil
	default:
		err := fmt.Errorf("invalid handler: %v", h)
		return fmt.Sprintf("Cannot run handler: %v", err), err
	}
}

// runHookExec runs the command without a timeout of its own (the kubelet
// passes 0) and turns a non-zero exit into the CRI's ExecSync error. The CRI
// puts stderr in that error; podrun's exec gives one combined output, so the
// error carries that.
func runHookExec(ctx context.Context, exec ExecFunc, cmd []string) ([]byte, error) {
	if exec == nil {
		return nil, errors.New("exec handlers need a command runner for the container")
	}
	code, out, err := exec(ctx, cmd)
	out = out[:min(len(out), maxOutput)]
	if err != nil {
		return out, err
	}
	if code != 0 {
		return out, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, out)
	}
	return out, nil
}

// runHookHTTP is the kubelet's runHTTPHandler: a GET with the probe's
// request rules (User-Agent kube-lifecycle/<version>), and one retry over
// plain HTTP when an HTTPS hook gets an HTTP answer.
func runHookHTTP(ctx context.Context, g *corev1.HTTPGetAction, t Target) error {
	podIP := g.Host
	if podIP == "" {
		podIP = t.PodIP
		if podIP == "" {
			return errors.New("failed to find networking container: the pod has no IP")
		}
	}
	req, err := newRequest(ctx, g, t.Container, podIP, "lifecycle")
	if err != nil {
		return err
	}
	resp, err := lifecycleClient.Do(req)
	discardBody(resp)
	if isHTTPResponseError(err) {
		req := req.Clone(ctx)
		req.URL.Scheme = "http"
		req.Header.Del("Authorization")
		resp, httpErr := lifecycleClient.Do(req)
		if httpErr == nil {
			err = nil
			if t.Event != nil {
				t.Event(Event{Reason: ReasonLifecycleHTTPFallback,
					Message: fmt.Sprintf("request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", req.URL.Host)})
			}
		}
		discardBody(resp)
	}
	return err
}

// discardBody reads a small body to its end before closing it, so that the
// connection can be reused.
func discardBody(resp *http.Response) {
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if resp.ContentLength <= maxOutput {
		_, _ = io.Copy(io.Discard, &io.LimitedReader{R: resp.Body, N: maxOutput})
	}
}

func isHTTPResponseError(err error) bool {
	var urlErr *url.Error
	if !errors.As(err, &urlErr) {
		return false
	}
	return strings.Contains(urlErr.Err.Error(), "server gave HTTP response to HTTPS client")
}

func runHookSleep(ctx context.Context, seconds int64) error {
	t := time.NewTimer(time.Duration(seconds) * time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errors.New("container terminated before sleep hook finished")
	case <-t.C:
		return nil
	}
}
