// Package allocator hands out Service ClusterIPs and NodePorts the way
// kube-apiserver's bitmap allocators do (pkg/registry/core/service/ipallocator,
// portallocator and allocator/storage upstream).
//
// Each range is one bitmap: bit i set means the i-th usable value is taken.
// For a ClusterIP range the usable values start one past the network address
// and, for IPv4, stop one before the broadcast address, so neither is ever
// handed out. The bitmap lives in etcd as a core/v1 RangeAllocation object,
// encoded as JSON, under the keys kube-apiserver uses:
// /registry/ranges/serviceips and /registry/ranges/servicenodeports. Its
// range field names the range ("10.96.0.0/12", "30000-32767") and its data
// field holds the bitmap as the big-endian bytes of a big integer, the same
// layout upstream writes, so the object reads the same as a real cluster's.
//
// Every change is a compare-and-swap: the allocator reads the object, flips
// bits in a copy, and writes it back in one etcd transaction that succeeds
// only if the key's ModRevision is still the one it read (or, for the first
// write, the key does not exist yet). When another API server got there
// first, the transaction returns the current object instead, and the change
// is decided again on that. Two API servers therefore never hand out the
// same address or port, however their requests interleave. As upstream's
// etcd3 store does, the object is stored without metadata.resourceVersion,
// which is filled in from the key's ModRevision when the object is read.
//
// Dynamic allocation is random, and it prefers the upper part of the range:
// a small lower band is left for users who pick a ClusterIP or NodePort
// themselves, and is used for random allocation only when the upper band is
// full. The size of that band follows upstream: min(max(16, size/16), 256)
// addresses for ClusterIPs (KEP-3070) and min(max(16, size/32), 128) ports for
// NodePorts (KEP-3668), and no band at all for a CIDR of 16 addresses or fewer
// or a port range of 16 ports or fewer.
//
// Error messages are upstream's word for word, since they reach users inside
// Service validation errors and users search for them.
package allocator
