package proxy

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeproxyconfig "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// kubeadmConfig is the shape of what kubeadm writes into the ConfigMap
// (v1.33-era field set), with mode and the ipvs section to fill in.
const kubeadmConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
bindAddressHardFail: false
clientConnection:
  acceptContentTypes: ""
  burst: 0
  contentType: ""
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: 10.244.0.0/16
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
  tcpBeLiberal: false
  tcpCloseWaitTimeout: null
  tcpEstablishedTimeout: null
  udpStreamTimeout: 0s
  udpTimeout: 0s
detectLocal:
  bridgeInterface: ""
  interfaceNamePrefix: ""
detectLocalMode: ""
enableProfiling: false
healthzBindAddress: ""
hostnameOverride: ""
iptables:
  localhostNodePorts: null
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
ipvs:
  excludeCIDRs: null
  minSyncPeriod: IPVS_MIN
  scheduler: "SCHEDULER"
  strictARP: false
  syncPeriod: 0s
  tcpFinTimeout: 0s
  tcpTimeout: 0s
  udpTimeout: 0s
kind: KubeProxyConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
metricsBindAddress: ""
mode: "MODE"
nftables:
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
nodePortAddresses: null
oomScoreAdj: null
portRange: ""
showHiddenMetricsForVersion: ""
winkernel:
  enableDSR: false
  forwardHealthCheckVip: false
  networkName: ""
  rootHnsEndpointName: ""
  sourceVip: ""
`

func kubeadm(mode, scheduler, ipvsMin string) string {
	return strings.NewReplacer("MODE", mode, "SCHEDULER", scheduler, "IPVS_MIN", ipvsMin).Replace(kubeadmConfig)
}

func configMap(data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ConfigMapNamespace, Name: ConfigMapName},
		Data:       map[string]string{ConfigMapKey: data},
	}
}

func TestSettingsFromConfigMap(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    settings
		wantErr string
	}{
		{
			name: "kubeadm defaults", data: kubeadm("", "", "0s"),
			want: settings{mode: proxier.ModeIPTables, ipvsScheduler: "rr", minSyncPeriod: time.Second, syncPeriod: 30 * time.Second},
		},
		{
			name: "ipvs with lc and its own min period", data: kubeadm("ipvs", "lc", "5s"),
			want: settings{mode: proxier.ModeIPVS, ipvsScheduler: "lc", minSyncPeriod: 5 * time.Second, syncPeriod: 30 * time.Second},
		},
		{
			name: "the ipvs period does not apply to iptables", data: kubeadm("iptables", "", "5s"),
			want: settings{mode: proxier.ModeIPTables, ipvsScheduler: "rr", minSyncPeriod: time.Second, syncPeriod: 30 * time.Second},
		},
		{
			name: "userspace, which upstream removed", data: kubeadm("userspace", "", "0s"),
			want: settings{mode: proxier.ModeUserspace, ipvsScheduler: "rr", minSyncPeriod: time.Second, syncPeriod: 30 * time.Second},
		},
		{
			name: "an unknown scheduler outside ipvs mode is not checked", data: kubeadm("nftables", "wrr", "0s"),
			want: settings{mode: proxier.ModeNFTables, ipvsScheduler: "wrr", minSyncPeriod: time.Second, syncPeriod: 30 * time.Second},
		},
		{name: "unknown mode", data: kubeadm("kernelspace", "", "0s"), wantErr: `mode: unsupported value "kernelspace"`},
		{name: "unknown scheduler", data: kubeadm("ipvs", "wrr", "0s"), wantErr: `ipvs.scheduler: unsupported value "wrr"`},
		{name: "min above sync", data: kubeadm("ipvs", "", "45s"), wantErr: "ipvs.syncPeriod: 30s must be greater than or equal to ipvs.minSyncPeriod (45s)"},
		{name: "negative period", data: kubeadm("ipvs", "", "-1s"), wantErr: "ipvs.minSyncPeriod: -1s must be greater than or equal to 0"},
		{name: "unknown field", data: kubeadm("", "", "0s") + "modes: ipvs\n", wantErr: `unknown field "modes"`},
		{name: "not YAML", data: "mode: [ipvs", wantErr: "config.conf"},
		{name: "wrong apiVersion", data: strings.Replace(kubeadm("", "", "0s"), "v1alpha1", "v1beta1", 1), wantErr: `apiVersion "kubeproxy.config.k8s.io/v1beta1"`},
		{name: "no config.conf", data: "", wantErr: `no "config.conf" key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cm := configMap(tc.data)
			if tc.data == "" {
				cm.Data = map[string]string{"other": "x"}
			}
			got, err := settingsFromConfigMap(cm)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v; want one containing %q", err, tc.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "configmap kube-system/kube-proxy") {
					t.Errorf("error %q does not say where", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("settings %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	c := DefaultConfiguration()
	c.Mode = kubeproxyconfig.ProxyMode(proxier.ModeNFTables)
	c.NFTables.MinSyncPeriod = metav1.Duration{Duration: 2 * time.Second}
	cm, err := NewConfigMap(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := settingsFromConfigMap(cm)
	if err != nil {
		t.Fatalf("decoding what EncodeConfiguration wrote: %v\n%s", err, cm.Data[ConfigMapKey])
	}
	if got.mode != proxier.ModeNFTables || got.minSyncPeriod != 2*time.Second {
		t.Errorf("settings %+v", got)
	}
}

func TestSetMode(t *testing.T) {
	cm := configMap(kubeadm("", "", "0s"))
	if err := SetMode(cm, proxier.ModeIPVS); err != nil {
		t.Fatal(err)
	}
	c, err := DecodeConfiguration(cm.Data[ConfigMapKey])
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != "ipvs" || c.ClusterCIDR != "10.244.0.0/16" || c.ClientConnection.Kubeconfig != "/var/lib/kube-proxy/kubeconfig.conf" {
		t.Errorf("SetMode lost or missed fields: mode %q clusterCIDR %q kubeconfig %q", c.Mode, c.ClusterCIDR, c.ClientConnection.Kubeconfig)
	}
	if err := SetMode(cm, "kernelspace"); err == nil {
		t.Error("SetMode accepted an unknown mode")
	}
	broken := configMap("mode: [")
	if err := SetMode(broken, proxier.ModeIPVS); err == nil || broken.Data[ConfigMapKey] != "mode: [" {
		t.Errorf("SetMode on an unreadable configuration: err %v, data %q", err, broken.Data[ConfigMapKey])
	}
	empty := &corev1.ConfigMap{}
	if err := SetMode(empty, proxier.ModeUserspace); err != nil {
		t.Fatal(err)
	}
	if s, err := settingsFromConfigMap(empty); err != nil || s.mode != proxier.ModeUserspace {
		t.Errorf("SetMode on an empty ConfigMap: %+v, %v", s, err)
	}
}
