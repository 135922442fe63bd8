package traffic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRunRoundRobinIsExactlyEven(t *testing.T) {
	apps := startApps(t, 3)
	proxy := startProxy(t, apps, withMode("ipvs"))

	report, err := Run(context.Background(), Options{Proxy: proxy.addr, Target: testTarget, Count: 300, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if report.Requests != 300 || report.Succeeded != 300 || report.Failed != 0 {
		t.Fatalf("requests %d, succeeded %d, failed %d; want 300, 300, 0; failures %+v",
			report.Requests, report.Succeeded, report.Failed, report.Failures)
	}
	if len(report.Pods) != 3 {
		t.Fatalf("pods = %+v, want 3", report.Pods)
	}
	for i, p := range report.Pods {
		want := PodCount{Pod: fmt.Sprintf("web-%d", i+1), Namespace: "default", Node: fmt.Sprintf("worker-%d", i%2+1),
			PodIP: "127.0.0.1", Endpoint: apps[i], Count: 100, Share: 1.0 / 3}
		if p != want {
			t.Errorf("pods[%d] = %+v, want %+v", i, p, want)
		}
	}
	if got := report.Modes; len(got) != 1 || got["ipvs"] != 300 {
		t.Errorf("modes = %v, want ipvs: 300", got)
	}
	if report.ProxyNode != "worker-1" || report.Proxy != proxy.addr || report.Target != testTarget {
		t.Errorf("proxy node %q, proxy %q, target %q", report.ProxyNode, report.Proxy, report.Target)
	}
	if c := report.ChiSquare; c.Statistic != 0 || c.DF != 2 || c.PValue != 1 {
		t.Errorf("chi-square = %+v, want 0, df 2, p 1", c)
	}
	l := report.Latency
	if !(0 < l.Min && l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max && l.Max <= report.Elapsed) {
		t.Errorf("latency %+v not ordered within elapsed %s", l, report.Elapsed)
	}
}

func TestRunRandomChoice(t *testing.T) {
	apps := startApps(t, 3)
	tests := []struct {
		name       string
		pick       func(n int) int
		wantUneven bool
	}{
		// The seeds are fixed, so the counts, and the p-values, are the
		// same on every run.
		{"uniform", randomPick(1), false},
		{"uniform other seed", randomPick(2), false},
		{"skewed 60/20/20", weightedPick(1, 3, 1, 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := startProxy(t, apps, withMode("iptables"), withPicker(tt.pick))
			report, err := Run(context.Background(), Options{Proxy: proxy.addr, Target: testTarget, Count: 600})
			if err != nil {
				t.Fatal(err)
			}
			sum := 0
			for _, p := range report.Pods {
				sum += p.Count
			}
			if sum != 600 || report.Succeeded != 600 {
				t.Fatalf("pod counts sum to %d, succeeded %d; want 600", sum, report.Succeeded)
			}
			c := report.ChiSquare
			t.Logf("counts %v: chi-square %.2f, p %.3g", podCounts(report), c.Statistic, c.PValue)
			if c.DF != 2 {
				t.Errorf("df = %d, want 2", c.DF)
			}
			if tt.wantUneven {
				if c.PValue > 1e-6 {
					t.Errorf("p = %g for a 60/20/20 choice, want tiny", c.PValue)
				}
			} else if c.PValue < 0.01 {
				t.Errorf("p = %g for a fair choice, want ≥ 0.01", c.PValue)
			}
			if c.Uneven() != tt.wantUneven {
				t.Errorf("Uneven() = %v, want %v", c.Uneven(), tt.wantUneven)
			}
		})
	}
}

func podCounts(r *Report) []int {
	var counts []int
	for _, p := range r.Pods {
		counts = append(counts, p.Count)
	}
	return counts
}

func TestRunDeadBackend(t *testing.T) {
	apps := startApps(t, 2)
	dead := deadAddr(t)
	backends := append(apps, dead)
	wantReason := "503 Service Unavailable: dial tcp " + dead + ": connect: connection refused"

	t.Run("kernel modes lose the requests sent to it", func(t *testing.T) {
		proxy := startProxy(t, backends, withMode("iptables"))
		report, err := Run(context.Background(), Options{Proxy: proxy.addr, Target: testTarget, Count: 30, Concurrency: 3})
		if err != nil {
			t.Fatal(err)
		}
		if report.Failed != 10 || report.Succeeded != 20 {
			t.Fatalf("failed %d, succeeded %d; want 10, 20", report.Failed, report.Succeeded)
		}
		want := []FailureCount{{Stage: StageConnect, Reason: wantReason, Count: 10}}
		if fmt.Sprint(report.Failures) != fmt.Sprint(want) {
			t.Errorf("failures = %+v\nwant       %+v", report.Failures, want)
		}
		if report.Modes["iptables"] != 30 {
			t.Errorf("modes = %v: the refusals carry the mode too", report.Modes)
		}
	})
	t.Run("userspace retries another endpoint", func(t *testing.T) {
		proxy := startProxy(t, backends, withMode("userspace"), withRetry())
		report, err := Run(context.Background(), Options{Proxy: proxy.addr, Target: testTarget, Count: 30, Concurrency: 3})
		if err != nil {
			t.Fatal(err)
		}
		if report.Failed != 0 || report.Succeeded != 30 || len(report.Failures) != 0 {
			t.Fatalf("failed %d, succeeded %d, failures %+v; want none failed", report.Failed, report.Succeeded, report.Failures)
		}
	})
}

func TestRunFailureStages(t *testing.T) {
	app := startApp(t, "web-1", "worker-1")
	broken := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom\nsecond line", http.StatusInternalServerError)
	})
	notApp := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "<html>welcome to nginx</html>")
	})
	tests := []struct {
		name       string
		proxy      func(t *testing.T) string
		target     string
		wantStage  string
		wantReason string // a prefix of the reason
	}{
		{"proxy refuses", deadAddr, testTarget, StageDial, "dial tcp 127.0.0.1:"},
		{"unknown service", func(t *testing.T) string { return startProxy(t, []string{app}).addr },
			"10.96.0.99:80", StageConnect, "404 Not Found: no service at 10.96.0.99:80"},
		{"app fails", func(t *testing.T) string { return startProxy(t, []string{broken}).addr },
			testTarget, StageHTTP, "HTTP 500 Internal Server Error: boom"},
		{"not the demo app", func(t *testing.T) string { return startProxy(t, []string{notApp}).addr },
			testTarget, StageHTTP, "the answer is not the klab app's JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var results []Result
			report, err := Run(context.Background(), Options{Proxy: tt.proxy(t), Target: tt.target, Count: 6, Concurrency: 2,
				OnResult: func(r Result) { results = append(results, r) }})
			if err != nil {
				t.Fatal(err)
			}
			if report.Failed != 6 || report.Succeeded != 0 || len(report.Pods) != 0 {
				t.Fatalf("failed %d, succeeded %d, pods %+v; want all 6 failed", report.Failed, report.Succeeded, report.Pods)
			}
			if len(report.Failures) != 1 {
				t.Fatalf("failures = %+v, want one group", report.Failures)
			}
			f := report.Failures[0]
			if f.Stage != tt.wantStage || f.Count != 6 || !strings.HasPrefix(f.Reason, tt.wantReason) {
				t.Errorf("failure = %+v, want stage %q, count 6, reason starting %q", f, tt.wantStage, tt.wantReason)
			}
			for _, r := range results {
				if r.Stage != tt.wantStage || r.OK() || r.Pod != "" {
					t.Errorf("result %+v, want a failure at stage %q", r, tt.wantStage)
				}
			}
			if report.Latency != (LatencySummary{}) {
				t.Errorf("latency = %+v, want zero with no success", report.Latency)
			}
		})
	}
}

func TestRunTimeout(t *testing.T) {
	silentApp, _ := silentServer(t)
	silentProxy, _ := silentServer(t)
	tests := []struct {
		name      string
		proxy     func(t *testing.T) string
		wantStage string
	}{
		{"proxy never answers CONNECT", func(*testing.T) string { return silentProxy }, StageConnect},
		{"app never answers", func(t *testing.T) string { return startProxy(t, []string{silentApp}).addr }, StageHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const timeout = 200 * time.Millisecond
			report, err := Run(context.Background(), Options{Proxy: tt.proxy(t), Target: testTarget, Count: 4,
				Concurrency: 4, Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			want := []FailureCount{{Stage: tt.wantStage, Reason: "no answer within 200ms", Count: 4}}
			if fmt.Sprint(report.Failures) != fmt.Sprint(want) {
				t.Errorf("failures = %+v, want %+v", report.Failures, want)
			}
			// Four requests in parallel, each cut at 200ms: well under a
			// second in all, however slow the machine.
			if report.Elapsed < timeout || report.Elapsed > 2*time.Second {
				t.Errorf("elapsed %s, want about %s", report.Elapsed, timeout)
			}
		})
	}
}

func TestRunCancelStopsPromptly(t *testing.T) {
	silentApp, accepted := silentServer(t)
	proxy := startProxy(t, []string{silentApp})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type outcome struct {
		report *Report
		err    error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := Run(ctx, Options{Proxy: proxy.addr, Target: testTarget, Count: 100, Concurrency: 4, Timeout: time.Minute})
		done <- outcome{r, err}
	}()
	for range 4 { // every worker is waiting for an answer that will not come
		<-accepted
	}
	cancelled := time.Now()
	cancel()
	select {
	case o := <-done:
		if !errors.Is(o.err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", o.err)
		}
		if o.report == nil || o.report.Requests != 0 || len(o.report.Failures) != 0 {
			t.Errorf("report = %+v, want no request counted: cancelled ones are not failures", o.report)
		}
		if d := time.Since(cancelled); d > time.Second {
			t.Errorf("Run returned %s after cancel", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}

	if _, err := Run(ctx, Options{Proxy: proxy.addr, Target: testTarget}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: err = %v, want context.Canceled", err)
	}
}

func TestRunOnResult(t *testing.T) {
	apps := startApps(t, 2)
	proxy := startProxy(t, apps)
	var (
		results []Result // appended without a lock: the race detector checks the calls are serialised
		calls   int
	)
	report, err := Run(context.Background(), Options{Proxy: proxy.addr, Target: testTarget, Count: 50, Concurrency: 8,
		OnResult: func(r Result) {
			calls++
			results = append(results, r)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 50 || report.Requests != 50 {
		t.Fatalf("OnResult called %d times, report has %d requests; want 50", calls, report.Requests)
	}
	seen := map[int]bool{}
	for _, r := range results {
		if r.Seq < 1 || r.Seq > 50 || seen[r.Seq] {
			t.Errorf("Seq %d out of range or repeated", r.Seq)
		}
		seen[r.Seq] = true
		if !r.OK() || r.Pod == "" || r.Endpoint == "" || r.Mode != "ipvs" || r.Latency <= 0 {
			t.Errorf("result %+v: want a success with pod, endpoint, mode and latency", r)
		}
	}
}

func TestRunRequestDetails(t *testing.T) {
	var (
		mu   sync.Mutex
		uris []string
	)
	backend := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uris = append(uris, r.RequestURI+" "+r.Header.Get("Connection"))
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]string{"pod": "web-1", "namespace": "default", "node": "worker-1", "podIP": "10.244.1.5"})
	})
	proxy := startProxy(t, []string{backend})
	report, err := Run(context.Background(), Options{Proxy: proxy.addr, Target: testTarget, Count: 3,
		Path: "/hello?lang=ko", ClientIP: "192.168.7.7"})
	if err != nil {
		t.Fatal(err)
	}
	if report.Succeeded != 3 || report.Pods[0].PodIP != "10.244.1.5" {
		t.Fatalf("report = %+v", report)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range uris {
		if u != "/hello?format=json&lang=ko close" {
			t.Errorf("app was asked %q, want /hello?format=json&lang=ko with Connection: close", u)
		}
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if proxy.clientIPs["192.168.7.7"] != 3 {
		t.Errorf("proxy saw client IPs %v, want 192.168.7.7 three times", proxy.clientIPs)
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	good := Options{Proxy: "127.0.0.1:10256", Target: testTarget}
	tests := []struct {
		name   string
		modify func(*Options)
		want   string
	}{
		{"no proxy", func(o *Options) { o.Proxy = "" }, "no kube-proxy address"},
		{"proxy without port", func(o *Options) { o.Proxy = "127.0.0.1" }, `kube-proxy address "127.0.0.1": want ip:port`},
		{"no target", func(o *Options) { o.Target = "" }, "no target"},
		{"target without port", func(o *Options) { o.Target = "10.96.0.10" }, `target "10.96.0.10": want ip:port`},
		{"target with a bad port", func(o *Options) { o.Target = "10.96.0.10:http" }, `port "http": want a number`},
		{"target without ip", func(o *Options) { o.Target = ":80" }, "the ip is missing"},
		{"negative count", func(o *Options) { o.Count = -1 }, "count -1 is negative"},
		{"negative concurrency", func(o *Options) { o.Concurrency = -2 }, "concurrency -2 is negative"},
		{"negative timeout", func(o *Options) { o.Timeout = -time.Second }, "timeout -1s is negative"},
		{"client IP not IPv4", func(o *Options) { o.ClientIP = "::1" }, `client IP "::1" is not an IPv4 address`},
		{"relative path", func(o *Options) { o.Path = "hello" }, `path "hello": want an absolute path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := good
			tt.modify(&opts)
			report, err := Run(context.Background(), opts)
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrInvalidOptions saying %q", err, tt.want)
			}
			if report != nil {
				t.Errorf("report = %+v, want nil", report)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	o, uri, err := Options{Proxy: "127.0.0.1:10256", Target: testTarget}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Count != DefaultCount || o.Concurrency != DefaultConcurrency || o.Timeout != DefaultTimeout ||
		o.Path != "/" || uri != "/?format=json" || o.Dial == nil {
		t.Errorf("defaults = %+v, uri %q", o, uri)
	}
	o, _, _ = Options{Proxy: "127.0.0.1:10256", Target: testTarget, Count: 3, Concurrency: 8}.withDefaults()
	if o.Concurrency != 3 {
		t.Errorf("concurrency %d for 3 requests, want 3", o.Concurrency)
	}
}
