// Package netroute sets the routes klab's Docker runtime needs in a network
// namespace, over netlink (github.com/vishvananda/netlink, the library
// Docker, Flannel and kube-router program routes with), as `ip route
// replace` would:
//
//   - in a pod's sandbox, the Service range via the pod's node
//     (ReplaceVia), so that a packet to a ClusterIP leaves the pod for its
//     node, as it does on a real node where the pod's default route points
//     at the node;
//   - in a node, the Service range as local addresses on lo
//     (ReplaceLocal), so that kube-proxy can bind every ClusterIP and the
//     node accepts the packets addressed to one, where a real node's
//     iptables, IPVS or nftables rules would rewrite them.
//
// Both need CAP_NET_ADMIN in the namespace's owning user namespace; a
// container gets it with --cap-add NET_ADMIN, without --privileged.
package netroute
