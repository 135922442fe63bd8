package proxy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeproxyconfig "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// Where kubeadm keeps kube-proxy's configuration: one ConfigMap that every
// node's kube-proxy reads, holding a KubeProxyConfiguration under
// ConfigMapKey.
const (
	ConfigMapNamespace = metav1.NamespaceSystem
	ConfigMapName      = "kube-proxy"
	ConfigMapKey       = "config.conf"
)

// Upstream's defaults for the sync periods of every mode
// (pkg/proxy/apis/config/v1alpha1/defaults.go): a zero period in the
// configuration means these.
const (
	DefaultMinSyncPeriod = 1 * time.Second
	DefaultSyncPeriod    = 30 * time.Second
)

// configSource says where the running settings came from.
const (
	configSourceConfigMap = "configmap"
	configSourceDefault   = "default"
)

// settings are the parts of a KubeProxyConfiguration klab acts on, checked
// and with the defaults applied. Periods are upstream values; the lab's
// are divided by the speed.
type settings struct {
	mode          string // one of proxier.ModeNames
	ipvsScheduler string // one of proxier.SchedulerNames
	minSyncPeriod time.Duration
	syncPeriod    time.Duration
}

// defaultSettings are what kube-proxy runs with when nothing is configured.
func defaultSettings() settings {
	return settings{
		mode:          proxier.ModeIPTables,
		ipvsScheduler: proxier.SchedulerRoundRobin,
		minSyncPeriod: DefaultMinSyncPeriod,
		syncPeriod:    DefaultSyncPeriod,
	}
}

// sameProxier reports whether two settings need the same mode instance: a
// different mode, or another ipvs scheduler in ipvs mode, needs a new one.
func (s settings) sameProxier(o settings) bool {
	if s.mode != o.mode {
		return false
	}
	return s.mode != proxier.ModeIPVS || s.ipvsScheduler == o.ipvsScheduler
}

// DefaultConfiguration returns the KubeProxyConfiguration kubeadm would
// write for klab: every field at its zero value, which means upstream's
// defaults (mode "" is iptables).
func DefaultConfiguration() *kubeproxyconfig.KubeProxyConfiguration {
	return &kubeproxyconfig.KubeProxyConfiguration{
		TypeMeta: metav1.TypeMeta{
			APIVersion: kubeproxyconfig.SchemeGroupVersion.String(),
			Kind:       "KubeProxyConfiguration",
		},
	}
}

// EncodeConfiguration writes c as the YAML kubeadm stores under
// ConfigMapKey.
func EncodeConfiguration(c *kubeproxyconfig.KubeProxyConfiguration) (string, error) {
	out, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode KubeProxyConfiguration: %w", err)
	}
	return string(out), nil
}

// DecodeConfiguration reads a KubeProxyConfiguration strictly: an unknown
// or duplicated field, or another apiVersion or kind, is an error.
func DecodeConfiguration(data string) (*kubeproxyconfig.KubeProxyConfiguration, error) {
	var c kubeproxyconfig.KubeProxyConfiguration
	if err := yaml.UnmarshalStrict([]byte(data), &c); err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigMapKey, err)
	}
	if want := kubeproxyconfig.SchemeGroupVersion.String(); c.APIVersion != want {
		return nil, fmt.Errorf("%s: apiVersion %q: want %q", ConfigMapKey, c.APIVersion, want)
	}
	if c.Kind != "KubeProxyConfiguration" {
		return nil, fmt.Errorf("%s: kind %q: want \"KubeProxyConfiguration\"", ConfigMapKey, c.Kind)
	}
	return &c, nil
}

// NewConfigMap returns the kube-system/kube-proxy ConfigMap holding c.
func NewConfigMap(c *kubeproxyconfig.KubeProxyConfiguration) (*corev1.ConfigMap, error) {
	data, err := EncodeConfiguration(c)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ConfigMapNamespace,
			Name:      ConfigMapName,
			Labels:    map[string]string{"app": "kube-proxy"},
		},
		Data: map[string]string{ConfigMapKey: data},
	}, nil
}

// SetMode rewrites the mode in cm's configuration, keeping every other
// field, as editing the ConfigMap by hand would. It refuses a mode
// kube-proxy would not accept, and a configuration it cannot read.
func SetMode(cm *corev1.ConfigMap, mode string) error {
	if mode != "" && !slices.Contains(proxier.ModeNames, mode) {
		return fmt.Errorf("unknown kube-proxy mode %q: use one of %s", mode, strings.Join(proxier.ModeNames, ", "))
	}
	c := DefaultConfiguration()
	if data, ok := cm.Data[ConfigMapKey]; ok {
		var err error
		if c, err = DecodeConfiguration(data); err != nil {
			return fmt.Errorf("configmap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	}
	c.Mode = kubeproxyconfig.ProxyMode(mode)
	data, err := EncodeConfiguration(c)
	if err != nil {
		return err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[ConfigMapKey] = data
	return nil
}

// settingsFromConfigMap checks a ConfigMap's configuration. Errors say what
// is wrong and where, for the status and the Warning event.
func settingsFromConfigMap(cm *corev1.ConfigMap) (settings, error) {
	where := fmt.Sprintf("configmap %s/%s", cm.Namespace, cm.Name)
	data, ok := cm.Data[ConfigMapKey]
	if !ok {
		return settings{}, fmt.Errorf("%s: no %q key", where, ConfigMapKey)
	}
	c, err := DecodeConfiguration(data)
	if err != nil {
		return settings{}, fmt.Errorf("%s: %w", where, err)
	}
	s, err := settingsFromConfiguration(c)
	if err != nil {
		return settings{}, fmt.Errorf("%s: %s: %w", where, ConfigMapKey, err)
	}
	return s, nil
}

// settingsFromConfiguration validates what klab uses of c and applies the
// defaults, as upstream's validation and defaulting do for those fields.
func settingsFromConfiguration(c *kubeproxyconfig.KubeProxyConfiguration) (settings, error) {
	s := defaultSettings()
	if c.Mode != "" {
		s.mode = string(c.Mode)
	}
	if !slices.Contains(proxier.ModeNames, s.mode) {
		return settings{}, fmt.Errorf("mode: unsupported value %q: use one of %s", c.Mode, strings.Join(proxier.ModeNames, ", "))
	}
	if c.IPVS.Scheduler != "" {
		s.ipvsScheduler = c.IPVS.Scheduler
	}
	// Upstream validates the scheduler only when ipvs is the mode.
	if s.mode == proxier.ModeIPVS && !slices.Contains(proxier.SchedulerNames, s.ipvsScheduler) {
		return settings{}, fmt.Errorf("ipvs.scheduler: unsupported value %q: klab implements %s", c.IPVS.Scheduler, strings.Join(proxier.SchedulerNames, ", "))
	}

	// The periods of the active mode. Upstream's long-gone userspace
	// proxier took the iptables ones.
	section, minSync, sync := "iptables", c.IPTables.MinSyncPeriod.Duration, c.IPTables.SyncPeriod.Duration
	switch s.mode {
	case proxier.ModeIPVS:
		section, minSync, sync = "ipvs", c.IPVS.MinSyncPeriod.Duration, c.IPVS.SyncPeriod.Duration
	case proxier.ModeNFTables:
		section, minSync, sync = "nftables", c.NFTables.MinSyncPeriod.Duration, c.NFTables.SyncPeriod.Duration
	}
	if minSync < 0 {
		return settings{}, fmt.Errorf("%s.minSyncPeriod: %v must be greater than or equal to 0", section, minSync)
	}
	if sync < 0 {
		return settings{}, fmt.Errorf("%s.syncPeriod: %v must be greater than 0", section, sync)
	}
	if minSync > 0 {
		s.minSyncPeriod = minSync
	}
	if sync > 0 {
		s.syncPeriod = sync
	}
	if s.minSyncPeriod > s.syncPeriod {
		return settings{}, fmt.Errorf("%s.syncPeriod: %v must be greater than or equal to %s.minSyncPeriod (%v)", section, s.syncPeriod, section, s.minSyncPeriod)
	}
	return s, nil
}
