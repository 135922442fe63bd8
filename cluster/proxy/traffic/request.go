package traffic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Headers a klab kube-proxy puts on its answer to CONNECT, and the one it
// reads from it.
const (
	HeaderProxyMode = "Klab-Proxy-Mode"
	HeaderEndpoint  = "Klab-Endpoint"
	HeaderNode      = "Klab-Node"
	HeaderClientIP  = "Klab-Client-IP"
)

// The stages a request can fail at.
const (
	StageDial    = "dial"    // connecting to the kube-proxy
	StageConnect = "connect" // the CONNECT exchange: the proxy found no working endpoint
	StageHTTP    = "http"    // the app's answer through the tunnel
)

// userAgent names klab traffic in the app's request log.
const userAgent = "klab-traffic"

// maxBody bounds what is read of an answer: the app's JSON is a few hundred
// bytes, a proxy's error a line.
const maxBody = 64 << 10

// Result is the outcome of one request.
type Result struct {
	// Seq numbers the requests from 1 in the order they started.
	Seq int `json:"seq"`
	// Pod, Namespace, Node and PodIP are who answered, as the app said.
	Pod       string `json:"pod,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Node      string `json:"node,omitempty"`
	PodIP     string `json:"podIP,omitempty"`
	// Endpoint and Mode are the endpoint the proxy chose and the mode it
	// ran in, from its Klab-Endpoint and Klab-Proxy-Mode headers.
	Endpoint string `json:"endpoint,omitempty"`
	Mode     string `json:"mode,omitempty"`
	// ProxyNode is the node of the kube-proxy that answered, from its
	// Klab-Node header.
	ProxyNode string `json:"proxyNode,omitempty"`
	// Latency runs from the start of the dial to the end of the answer (or
	// to the failure).
	Latency time.Duration `json:"latencyNs"`
	// Err says why the request failed; empty on success.
	Err string `json:"err,omitempty"`
	// Stage is where it failed: StageDial, StageConnect or StageHTTP;
	// empty on success.
	Stage string `json:"stage,omitempty"`
}

// OK reports whether the request succeeded.
func (r Result) OK() bool { return r.Err == "" }

// appAnswer is the part of the app's GET / answer that names the pod.
type appAnswer struct {
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	Node      string `json:"node"`
	PodIP     string `json:"podIP"`
}

// errCancelled marks a request cut short by the run's context: it is not a
// failure of the proxy and is not counted.
var errCancelled = errors.New("run cancelled")

// do sends request seq: dial, CONNECT, GET. It returns errCancelled when
// the run's context ended first.
func do(ctx context.Context, opts Options, requestURI string, seq int) (Result, error) {
	res := Result{Seq: seq}
	start := time.Now()
	reqCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	// fail fills in a failure; a failure caused by the run's end is
	// reported as errCancelled instead, and a timeout says so plainly
	// rather than as the i/o error it surfaced as.
	fail := func(stage string, err error) (Result, error) {
		if ctx.Err() != nil {
			return res, errCancelled
		}
		res.Stage, res.Latency = stage, time.Since(start)
		if reqCtx.Err() != nil {
			res.Err = fmt.Sprintf("no answer within %s", opts.Timeout)
		} else {
			res.Err = err.Error()
		}
		return res, nil
	}

	conn, err := opts.Dial(reqCtx, "tcp", opts.Proxy)
	if err != nil {
		return fail(StageDial, err)
	}
	defer conn.Close()
	// One clock for the whole exchange: when the request's context ends
	// (its timeout, or the run is cancelled), every blocked read and write
	// on the connection returns at once.
	stop := context.AfterFunc(reqCtx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	br := bufio.NewReader(conn)
	resp, err := connect(conn, br, opts)
	if resp != nil {
		res.Mode = resp.Header.Get(HeaderProxyMode)
		res.Endpoint = resp.Header.Get(HeaderEndpoint)
		res.ProxyNode = resp.Header.Get(HeaderNode)
	}
	if err != nil {
		return fail(StageConnect, err)
	}

	answer, err := get(conn, br, opts.Target, requestURI)
	if err != nil {
		return fail(StageHTTP, err)
	}
	res.Latency = time.Since(start)
	res.Pod, res.Namespace, res.Node, res.PodIP = answer.Pod, answer.Namespace, answer.Node, answer.PodIP
	return res, nil
}

// connect asks the proxy for a tunnel to opts.Target. It returns the
// proxy's answer whenever it read one, so that a refusal still tells the
// mode and the endpoint.
func connect(conn net.Conn, br *bufio.Reader, opts Options) (*http.Response, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n", opts.Target, opts.Target, userAgent)
	if opts.ClientIP != "" {
		fmt.Fprintf(&b, "%s: %s\r\n", HeaderClientIP, opts.ClientIP)
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return nil, fmt.Errorf("read the answer to CONNECT: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		// A refusal's body is one line saying why: the reason to report.
		return resp, errors.New(statusReason(resp))
	}
	// After a 200 the connection is the tunnel: the response has no body
	// to read, and what br holds beyond the headers is the app's.
	return resp, nil
}

// get asks the app for requestURI through the tunnel and decodes its
// answer.
func get(conn net.Conn, br *bufio.Reader, host, requestURI string) (appAnswer, error) {
	var answer appAnswer
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
		requestURI, host, userAgent)
	if _, err := io.WriteString(conn, req); err != nil {
		return answer, err
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		return answer, fmt.Errorf("read the app's answer: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return answer, errors.New("HTTP " + statusReason(resp))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return answer, fmt.Errorf("read the app's answer: %w", err)
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return answer, fmt.Errorf("the answer is not the klab app's JSON: %w", err)
	}
	if answer.Pod == "" {
		return answer, errors.New("the answer is not the klab app's JSON: it names no pod")
	}
	return answer, nil
}

// statusReason is the status line of resp followed by the first line of its
// body: "503 Service Unavailable: no endpoints for default/web". Only that
// line is read, so a body without a length that never ends costs nothing.
func statusReason(resp *http.Response) string {
	defer resp.Body.Close()
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, maxBody)).ReadString('\n')
	line = strings.TrimSpace(line)
	if line == "" {
		return resp.Status
	}
	return resp.Status + ": " + line
}
