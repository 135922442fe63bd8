// Package storage keeps Kubernetes objects in etcd, the way kube-apiserver's
// etcd3 storage does: one key per object under /registry, the object's
// resourceVersion is the etcd revision that last wrote it, and every update
// is an etcd transaction that only succeeds if the key still has the
// revision the update was computed from.
//
// It talks to etcd only through the real client (go.etcd.io/etcd/client/v3),
// so it works against klab's own members and against upstream etcd alike.
//
// # The watch cache
//
// Watches are not served by etcd one by one. As upstream's cacher
// (k8s.io/apiserver/pkg/storage/cacher) does, the store keeps, per
// resource, a watch cache fed by a single etcd watch on the resource's
// prefix (the "reflector"):
//
//	etcd watch ──▶ reflector ──▶ watchCache ──▶ incoming ──▶ dispatcher ──▶ cacheWatcher ──▶ API watch
//	(1 per resource)  decode once   store + cyclic        (1 goroutine)   filter per      (1 per client)
//	                                 buffer of events                      watcher
//
// The reflector lists the resource once, then decodes every change once and
// applies it to the watchCache: the current objects (the store) and a
// cyclic buffer of recent events with their revisions. The dispatcher
// hands each event to the watchers it concerns, matching their label and
// field selectors against attributes computed once per event. Watchers
// whose field selector pins the resource's index field (spec.nodeName for
// pods, metadata.name otherwise, as upstream's trigger functions) are kept
// by that value, so a kubelet's watch costs nothing for pods of other
// nodes. An object that stops matching a selector is sent to that watcher
// as DELETED, one that starts matching as ADDED.
//
// A new watch is served from memory: its initial events from the store; a
// watch resuming at revision N from the buffer, or 410 Expired "too old
// resource version" when the buffer no longer reaches back to N. A watcher
// that cannot keep up is closed after a short wait instead of holding
// every other watcher back; its client watches again from where it was.
// Idle watches get BOOKMARK events; the revision they carry advances even
// when the resource does not change, from etcd progress notifications.
//
// Lists with resourceVersion "0", or N with resourceVersionMatch
// NotOlderThan and no limit, are answered from the cache; consistent lists
// (resourceVersion ""), exact and paginated lists read etcd, as upstream
// does without its newer consistent-reads-from-cache feature.
//
// A resource's cache starts on its first watch or cache-served list, not
// with the server: klab serves about twenty resources and a lab touches few
// of them. A cache started by a watch resuming at revision N first lists
// at N (if etcd still has it), so the common list-then-watch of kubectl and
// client-go does not meet a cache that started after its list.
package storage
