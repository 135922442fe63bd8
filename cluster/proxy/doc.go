// Package proxy is klab's kube-proxy: the process around the four modes of
// package proxier.
//
// As upstream's kube-proxy does, it watches Services and EndpointSlices
// with client-go informers (leaving out Services another proxy claims and
// headless ones), and a sync loop rebuilds the running mode's state from
// them: each change asks for a sync, and upstream's BoundedFrequencyRunner
// (internal/async) lets at most two syncs run back to back and then one per
// minSyncPeriod, with a full resync at least every syncPeriod. A sync takes
// a snapshot of the caches, hands it to the mode, records how long the mode
// took and how many rules it wrote, and opens or closes the NodePort
// listeners to match.
//
// The mode lives where kubeadm keeps it: the ConfigMap kube-system/kube-proxy,
// whose config.conf is a KubeProxyConfiguration. A real kube-proxy reads it
// once, when it starts. klab watches it, and when the mode (or the ipvs
// scheduler) changes it does in place what a restart would: it builds and
// syncs the new mode, moves new connections to it in one step, cleans up
// the old mode once the connections being placed by it are placed, and
// says so on its event stream and in a Kubernetes Event on the Node. A
// configuration it cannot use changes nothing; the error shows in the
// status and in a Warning Event.
//
// The data path is emulated in user space in every mode: what is faithful
// is the choice of endpoint, which the mode makes by walking its own rules.
// Traffic enters through a TCP listener per NodePort on the node's address,
// and through HTTP CONNECT on the proxy's own port, which reaches a
// ClusterIP:port as a process on the node would (or a NodePort). With
// Config.ServeClusterIPs (the Docker runtime, whose nodes hold the Service
// range as local addresses and whose pods route it to their node) it also
// binds every ClusterIP:port, TCP and UDP, so a pod's packets to a Service
// arrive with their destination intact and the replies leave from the
// ClusterIP; a UDP flow keeps its endpoint while datagrams pass, as a
// conntrack entry does. The proxy dials the endpoint the mode picked and
// copies bytes (or datagrams) both ways.
// Only userspace tries another endpoint when a dial fails; with the other
// modes the connection fails, as it would when the kernel forwards a SYN
// to a dead pod.
package proxy
