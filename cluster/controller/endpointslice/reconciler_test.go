package endpointslice

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	core "k8s.io/client-go/testing"
)

// manyPods returns n ready pods of app web with distinct IPs.
func manyPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = newPod(fmt.Sprintf("web-%03d", i), "web", fmt.Sprintf("10.244.%d.%d", i/200, i%200+1), true)
	}
	return pods
}

func TestSyncServiceSplitsAt100Endpoints(t *testing.T) {
	tests := []struct {
		name        string
		pods        int
		existing    []int // endpoints in each existing slice, from the first pods
		wantCreates []int // endpoints per created slice
		wantUpdates []int // endpoints per updated slice
	}{
		{name: "250 endpoints need three slices", pods: 250, wantCreates: []int{100, 100, 50}},
		{name: "new endpoints fill a slice being updated first", pods: 130, existing: []int{100, 20},
			wantUpdates: []int{30}},
		{name: "full slices stay untouched and a new one is made", pods: 230, existing: []int{100, 100},
			wantCreates: []int{30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			web := newService("web")
			f.services = []*corev1.Service{web}
			f.pods = manyPods(tt.pods)
			next := 0
			for i, n := range tt.existing {
				var eps []discoveryv1.Endpoint
				for _, p := range f.pods[next : next+n] {
					eps = append(eps, endpoint(p, true, true, false))
				}
				next += n
				if i == len(tt.existing)-1 && len(tt.wantUpdates) > 0 {
					// This slice also lists a pod that is gone, so it is
					// updated and takes the new endpoints.
					eps = append(eps, endpoint(newPod("gone", "web", "10.244.99.1", true), true, true, false))
				}
				f.slices = append(f.slices, sliceFor(web, fmt.Sprintf("web-%d", i), httpPorts(8080), eps...))
			}
			got, err := f.sync("default/web")
			if err != nil {
				t.Fatal(err)
			}
			var creates, updates []int
			for _, a := range got {
				switch a.GetVerb() {
				case "create":
					s := a.(core.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
					creates = append(creates, len(s.Endpoints))
				case "update":
					s := a.(core.UpdateAction).GetObject().(*discoveryv1.EndpointSlice)
					updates = append(updates, len(s.Endpoints))
				default:
					t.Errorf("unexpected action %v", a)
				}
			}
			if !cmp.Equal(creates, tt.wantCreates) || !cmp.Equal(updates, tt.wantUpdates) {
				t.Errorf("created slices of %v and updated slices of %v endpoints; want %v and %v", creates, updates, tt.wantCreates, tt.wantUpdates)
			}
		})
	}
}

func TestSyncServiceSkipsPodOnMissingNode(t *testing.T) {
	f := newFixture(t)
	web := newService("web")
	ready1 := newPod("web-1", "web", "10.244.1.2", true)
	lost := newPod("web-2", "web", "10.244.1.3", true, func(p *corev1.Pod) { p.Spec.NodeName = "node-gone" })
	f.services, f.pods = []*corev1.Service{web}, []*corev1.Pod{ready1, lost}
	got, err := f.sync("default/web")
	if err == nil {
		t.Error("sync succeeded; want an error so that the Service is retried")
	}
	checkActions(t, []core.Action{createSlice(sliceFor(web, "", httpPorts(8080), endpoint(ready1, true, true, false)))}, got)
}
