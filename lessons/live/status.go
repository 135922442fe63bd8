package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
)

// statusTimeout bounds one member's answer, as klab status does: a member
// that takes longer is as good as unreachable.
const statusTimeout = time.Second

// fetchStatus GETs a member's /debug/klab/status, as the Observer does.
// (cluster/lab keeps its own copy unexported; this one reads the same
// endpoint for Feed.Refresh.)
func fetchStatus(ctx context.Context, hc *http.Client, debugURL string) (etcd.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, debugURL+"/status", nil)
	if err != nil {
		return etcd.Status{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return etcd.Status{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return etcd.Status{}, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	var s etcd.Status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return etcd.Status{}, fmt.Errorf("GET %s: decode: %w", req.URL, err)
	}
	return s, nil
}
