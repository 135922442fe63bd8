package apiserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/apiserver/storage"
)

// watch streams watch events as newline-delimited JSON WatchEvents, as
// upstream does for application/json clients. kubectl get -w asks for
// Table rows: each event then carries a one-row Table, with the column
// definitions in the first one only.
func (s *Server) watch(w http.ResponseWriter, req *request) {
	q := req.URL.Query()
	opts, err := listOptions(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	storeRes := s.storageResource(req.res)
	pred, err := storage.NewPredicate(storeRes, opts.Labels, opts.Fields)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	wopts := storage.WatchOptions{
		Predicate:        pred,
		ResourceVersion:  opts.ResourceVersion,
		AllowBookmarks:   isTrue(q.Get("allowWatchBookmarks")),
		BookmarkInterval: s.cfg.BookmarkInterval,
	}
	if v := q.Get("sendInitialEvents"); v != "" {
		b := isTrue(v)
		wopts.SendInitialEvents = &b
	}
	timeout := defaultWatchTimeout
	if t := q.Get("timeoutSeconds"); t != "" {
		secs, err := strconv.ParseInt(t, 10, 64)
		if err != nil || secs < 0 {
			writeError(w, req.Request, apierrors.NewBadRequest("invalid timeoutSeconds "+t))
			return
		}
		if secs > 0 {
			timeout = time.Duration(secs) * time.Second
		}
	}
	watcher, err := s.store.Watch(req.Context(), storeRes, req.info.namespace, wopts)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	defer watcher.Stop()

	out := negotiate(req.Request)
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	enc := json.NewEncoder(w)
	firstTable := true
	for {
		select {
		case <-req.Context().Done():
			return
		case <-timer.C:
			return
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return
			}
			obj := ev.Object
			if ev.Type != watch.Error {
				obj = s.fromStorage(req.res, obj)
			}
			if out.table && ev.Type != watch.Error && ev.Type != watch.Bookmark {
				table, err := toTable(obj, out.includeObject)
				if err != nil {
					return
				}
				if !firstTable {
					table.ColumnDefinitions = nil
				}
				firstTable = false
				obj = table
			} else if out.partial && ev.Type != watch.Error {
				obj = toPartial(obj)
			}
			if err := writeWatchEvent(enc, ev.Type, obj); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

func writeWatchEvent(enc *json.Encoder, typ watch.EventType, obj runtime.Object) error {
	raw, err := encodeForWire(obj)
	if err != nil {
		return err
	}
	return enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}})
}
