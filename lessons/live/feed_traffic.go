package live

import (
	"maps"
	"os"
	"time"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/proxy/traffic"
	"github.com/klab-dev/klab/lessons"
)

// trafficPoll is how often the record of the last traffic run is looked
// at: klab traffic, from whatever terminal, writes it when a run ends.
const trafficPoll = 500 * time.Millisecond

// followTraffic reports each traffic run that ends from now on.
func (f *Feed) followTraffic() {
	path, err := lab.TrafficFile(f.info.Name)
	if err != nil {
		f.logger.Warn("lessons feed: traffic runs are not followed", "err", err)
		return
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		// A run recorded before now is not news.
		seen := modTime(path)
		for sleep(f.ctx, trafficPoll) {
			mt := modTime(path)
			if mt.IsZero() || mt.Equal(seen) {
				continue
			}
			seen = mt
			r, err := lab.LastTraffic(f.info.Name)
			if err != nil || r == nil {
				f.logger.Debug("lessons feed: traffic record", "err", err)
				continue
			}
			if !f.send(item{obs: []lessons.Observation{trafficObserved(r)}}) {
				return
			}
		}
	}()
}

func modTime(path string) time.Time {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

func trafficObserved(r *traffic.Report) lessons.TrafficObserved {
	o := lessons.TrafficObserved{Target: r.Target, Requests: r.Requests, Failed: r.Failed,
		Pods: map[string]int{}, Nodes: map[string]int{}, Modes: maps.Clone(r.Modes)}
	for _, p := range r.Pods {
		o.Pods[p.Namespace+"/"+p.Pod] += p.Count
		o.Nodes[p.Node] += p.Count
	}
	return o
}
