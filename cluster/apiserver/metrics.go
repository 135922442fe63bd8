package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/storage"
	"github.com/klab-dev/klab/cluster/kubelet/statsapi"
)

// The resource metrics API, metrics.k8s.io/v1beta1 NodeMetrics and
// PodMetrics, served in the API server as a built-in group where upstream
// aggregates metrics-server; what it answers is what metrics-server would:
// it scrapes each kubelet's /stats/summary and turns the cumulative CPU
// time of two scrapes into a rate over the time between them (the
// window), and reports the memory working set as it is. The first request
// for something not seen before scrapes twice, metricsFirstWindow apart,
// where metrics-server waits for its next scrape and answers "metrics not
// available yet" meanwhile.

const (
	// metricsFirstWindow is how far apart the two scrapes of a first
	// request are.
	metricsFirstWindow = time.Second
	// metricsMinWindow is the shortest window a rate is taken over; a
	// request sooner after the last scrape than this gets the last rate.
	metricsMinWindow = time.Second
	// kubeletScrapeTimeout bounds one scrape (metrics-server's
	// --kubelet-request-timeout is 10 s).
	kubeletScrapeTimeout = 10 * time.Second
)

// usagePoint is a reading of one node or container, and the rate last
// computed for it.
type usagePoint struct {
	at     time.Time
	cpu    uint64 // cumulative nanoseconds
	rate   *resource.Quantity
	window time.Duration
}

// metricsCache keeps the last reading per node ("node/<name>") and per
// container ("<ns>/<pod>/<uid>/<container>").
type metricsCache struct {
	mu     sync.Mutex
	points map[string]usagePoint
}

// observe records a reading and returns the CPU rate over the window
// since the previous one, or nil without a previous reading.
func (c *metricsCache) observe(key string, cpu *statsapi.CPUStats) (*resource.Quantity, time.Duration) {
	if cpu == nil || cpu.UsageCoreNanoSeconds == nil {
		return nil, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.points == nil {
		c.points = map[string]usagePoint{}
	}
	cur := usagePoint{at: cpu.Time.Time, cpu: *cpu.UsageCoreNanoSeconds}
	prev, ok := c.points[key]
	if !ok || cur.cpu < prev.cpu { // first reading, or the container restarted
		c.points[key] = cur
		return nil, 0
	}
	window := cur.at.Sub(prev.at)
	if window < metricsMinWindow {
		return prev.rate, prev.window
	}
	nanoCores := float64(cur.cpu-prev.cpu) / window.Seconds()
	cur.rate = resource.NewScaledQuantity(int64(nanoCores), resource.Nano)
	cur.rate.RoundUp(resource.Micro)
	cur.window = window
	c.points[key] = cur
	return cur.rate, window
}

// scrapeSummary reads a node's /stats/summary.
func (s *Server) scrapeSummary(ctx context.Context, nodeName string) (*statsapi.Summary, error) {
	base, err := s.nodeKubeletURL(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, kubeletScrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath("/stats/summary").String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: s.kubeletTransport}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape kubelet of node %s: %w", nodeName, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape kubelet of node %s: %s", nodeName, resp.Status)
	}
	var sum statsapi.Summary
	if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil {
		return nil, fmt.Errorf("scrape kubelet of node %s: decode summary: %w", nodeName, err)
	}
	return &sum, nil
}

// scrapeNodes scrapes the named nodes in parallel; a node whose kubelet
// does not answer is left out, as metrics-server leaves it out.
func (s *Server) scrapeNodes(ctx context.Context, names []string) map[string]*statsapi.Summary {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]*statsapi.Summary{}
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sum, err := s.scrapeSummary(ctx, name)
			if err != nil {
				s.cfg.Logger.Debug("metrics: scrape failed", "node", name, "err", err)
				return
			}
			mu.Lock()
			out[name] = sum
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// scrapeTwiceIfNew scrapes, and when any of what the caller wants has no
// rate yet (first seen), scrapes again metricsFirstWindow later.
func (s *Server) scrapeWithRates(ctx context.Context, names []string, build func(map[string]*statsapi.Summary) bool) error {
	if build(s.scrapeNodes(ctx, names)) {
		return nil
	}
	select {
	case <-time.After(metricsFirstWindow):
	case <-ctx.Done():
		return ctx.Err()
	}
	build(s.scrapeNodes(ctx, names))
	return nil
}

var (
	nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	podsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// serveMetrics answers get and list of nodes and pods in metrics.k8s.io.
func (s *Server) serveMetrics(w http.ResponseWriter, req *request) {
	if req.info.verb != registry.VerbGet && req.info.verb != registry.VerbList {
		writeError(w, req.Request, apierrors.NewMethodNotSupported(req.res.GroupResource(), req.info.verb))
		return
	}
	opts, err := listOptions(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	opts = storage.ListOptions{Labels: opts.Labels, Fields: opts.Fields}
	if req.res.Kind == "NodeMetrics" {
		s.serveNodeMetrics(w, req, opts)
		return
	}
	s.servePodMetrics(w, req, opts)
}

func (s *Server) serveNodeMetrics(w http.ResponseWriter, req *request, opts storage.ListOptions) {
	nodesRes, _ := s.reg.Lookup(nodesGVR)
	var nodes []corev1.Node
	if req.info.name != "" {
		obj, err := s.store.Get(req.Context(), nodesRes, "", req.info.name)
		if err != nil {
			writeError(w, req.Request, apierrors.NewNotFound(req.res.GroupResource(), req.info.name))
			return
		}
		nodes = []corev1.Node{*obj.(*corev1.Node)}
	} else {
		list, err := s.store.List(req.Context(), nodesRes, "", opts)
		if err != nil {
			writeError(w, req.Request, err)
			return
		}
		nodes = list.(*corev1.NodeList).Items
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	var items []metricsv1beta1.NodeMetrics
	err := s.scrapeWithRates(req.Context(), names, func(sums map[string]*statsapi.Summary) bool {
		items = items[:0]
		complete := true
		for _, n := range nodes {
			sum, ok := sums[n.Name]
			if !ok {
				continue
			}
			rate, window := s.metrics.observe("node/"+n.Name, sum.Node.CPU)
			if rate == nil || sum.Node.Memory == nil || sum.Node.Memory.WorkingSetBytes == nil {
				complete = false
				continue
			}
			items = append(items, metricsv1beta1.NodeMetrics{
				ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: metav1.NewTime(time.Now())},
				Timestamp:  sum.Node.CPU.Time, Window: metav1.Duration{Duration: window},
				Usage: corev1.ResourceList{
					corev1.ResourceCPU:    *rate,
					corev1.ResourceMemory: *resource.NewQuantity(int64(*sum.Node.Memory.WorkingSetBytes), resource.BinarySI),
				},
			})
		}
		return complete
	})
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	if req.info.name != "" {
		if len(items) == 0 {
			writeError(w, req.Request, apierrors.NewNotFound(req.res.GroupResource(), req.info.name))
			return
		}
		writeObject(w, req.Request, http.StatusOK, &items[0])
		return
	}
	if items == nil {
		items = []metricsv1beta1.NodeMetrics{}
	}
	writeObject(w, req.Request, http.StatusOK, &metricsv1beta1.NodeMetricsList{Items: items})
}

func (s *Server) servePodMetrics(w http.ResponseWriter, req *request, opts storage.ListOptions) {
	podsRes, _ := s.reg.Lookup(podsGVR)
	var pods []corev1.Pod
	if req.info.name != "" {
		obj, err := s.store.Get(req.Context(), podsRes, req.info.namespace, req.info.name)
		if err != nil {
			writeError(w, req.Request, apierrors.NewNotFound(req.res.GroupResource(), req.info.name))
			return
		}
		pods = []corev1.Pod{*obj.(*corev1.Pod)}
	} else {
		list, err := s.store.List(req.Context(), podsRes, req.info.namespace, opts)
		if err != nil {
			writeError(w, req.Request, err)
			return
		}
		pods = list.(*corev1.PodList).Items
	}
	seen := map[string]bool{}
	var names []string
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && !seen[p.Spec.NodeName] {
			seen[p.Spec.NodeName] = true
			names = append(names, p.Spec.NodeName)
		}
	}
	var items []metricsv1beta1.PodMetrics
	err := s.scrapeWithRates(req.Context(), names, func(sums map[string]*statsapi.Summary) bool {
		items = items[:0]
		complete := true
		for _, p := range pods {
			sum, ok := sums[p.Spec.NodeName]
			if !ok {
				continue
			}
			stats := findPodStats(sum, p)
			if stats == nil {
				continue
			}
			pm := metricsv1beta1.PodMetrics{
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: metav1.NewTime(time.Now())},
			}
			usable := true
			for _, c := range stats.Containers {
				rate, window := s.metrics.observe(p.Namespace+"/"+p.Name+"/"+string(p.UID)+"/"+c.Name, c.CPU)
				if rate == nil || c.Memory == nil || c.Memory.WorkingSetBytes == nil {
					usable = false
					continue
				}
				if c.CPU.Time.After(pm.Timestamp.Time) {
					pm.Timestamp, pm.Window = c.CPU.Time, metav1.Duration{Duration: window}
				}
				pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: corev1.ResourceList{
					corev1.ResourceCPU:    *rate,
					corev1.ResourceMemory: *resource.NewQuantity(int64(*c.Memory.WorkingSetBytes), resource.BinarySI),
				}})
			}
			if !usable {
				complete = false
				continue
			}
			items = append(items, pm)
		}
		return complete
	})
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	if req.info.name != "" {
		if len(items) == 0 {
			writeError(w, req.Request, apierrors.NewNotFound(req.res.GroupResource(), req.info.name))
			return
		}
		writeObject(w, req.Request, http.StatusOK, &items[0])
		return
	}
	if items == nil {
		items = []metricsv1beta1.PodMetrics{}
	}
	writeObject(w, req.Request, http.StatusOK, &metricsv1beta1.PodMetricsList{Items: items})
}

// findPodStats finds the pod in a summary by namespace, name and UID.
func findPodStats(sum *statsapi.Summary, p corev1.Pod) *statsapi.PodStats {
	for i := range sum.Pods {
		ref := sum.Pods[i].PodRef
		if ref.Namespace == p.Namespace && ref.Name == p.Name && ref.UID == string(p.UID) {
			return &sum.Pods[i]
		}
	}
	return nil
}
