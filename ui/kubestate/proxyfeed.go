package kubestate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/klab-dev/klab/cluster/proxy"
)

// proxyHTTP talks to the kube-proxies' debug endpoints. The event stream
// has no deadline of its own (it lasts as long as the feed); a kube-proxy
// that accepts the connection and then says nothing is caught by the
// header timeout.
var proxyHTTP = &http.Client{Transport: &http.Transport{
	Proxy:                 nil,
	ResponseHeaderTimeout: probeTimeout,
	MaxIdleConnsPerHost:   1,
}}

// followProxy keeps the kube-proxy of node in the state: it subscribes to
// its event stream, reads its status once, then follows the stream,
// reporting the mode whenever an event shows another one. When the
// kube-proxy does not answer it retries, sooner when poked (the kube-proxy
// ConfigMap changed). While connected, a poke reads the status again (a
// corrected ConfigMap clears a configuration error without an event).
func (f *feed) followProxy(node, addr string, poke <-chan struct{}) {
	delay := retryInitial
	var last Proxy
	for {
		err := f.followProxyOnce(node, addr, poke, &last, func() { delay = retryInitial })
		if f.ctx.Err() != nil {
			return
		}
		last.Node, last.Reachable, last.Err = node, false, err.Error()
		f.put("proxy/"+node, last, false)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-poke:
			t.Stop()
		case <-f.ctx.Done():
			t.Stop()
			return
		}
		delay = min(delay*2, retryMax)
	}
}

// followProxyOnce follows one connection to the event stream until it
// ends, and says why.
func (f *feed) followProxyOnce(node, addr string, poke <-chan struct{}, last *Proxy, connected func()) error {
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	// Subscribing past every event replays none: the status read next is
	// the starting point, and whatever happens after subscribing arrives
	// on the stream.
	url := "http://" + addr + "/debug/klab/events?since=" + strconv.FormatUint(math.MaxUint64, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := proxyHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /debug/klab/events: %s", resp.Status)
	}
	if err := f.readProxyStatus(node, addr, last); err != nil {
		return err
	}
	connected()

	events := make(chan proxy.Event)
	ended := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e proxy.Event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			select {
			case events <- e:
			case <-ctx.Done():
				return
			}
		}
		err := sc.Err()
		if err == nil {
			err = io.EOF
		}
		ended <- err
	}()
	for {
		select {
		case e := <-events:
			switch e.Kind {
			case proxy.EventSync:
				last.Mode = e.Mode
			case proxy.EventModeChanged:
				last.Mode, last.Since, last.ConfigError = e.To, e.Time, ""
			case proxy.EventConfigError:
				last.Mode, last.ConfigError = e.Mode, e.Message
			default:
				continue
			}
			f.put("proxy/"+node, *last, false)
		case <-poke:
			if err := f.readProxyStatus(node, addr, last); err != nil {
				return err
			}
		case err := <-ended:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readProxyStatus reads the kube-proxy's status into last and the state.
func (f *feed) readProxyStatus(node, addr string, last *Proxy) error {
	ctx, cancel := context.WithTimeout(f.ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/klab/status", nil)
	if err != nil {
		return err
	}
	resp, err := proxyHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /debug/klab/status: %s", resp.Status)
	}
	var st proxy.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return fmt.Errorf("GET /debug/klab/status: %w", err)
	}
	*last = Proxy{Node: node, Mode: st.Mode, Since: st.ModeSince, Reachable: true, ConfigError: st.ConfigError}
	f.put("proxy/"+node, *last, false)
	return nil
}
