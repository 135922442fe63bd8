package apiserver

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// The ServiceAccount admission plugin's token volume, as upstream's: a
// projected volume named kube-api-access-<5 random characters> holding a
// bound token the kubelet requests through the TokenRequest API, the
// cluster CA from the namespace's kube-root-ca.crt ConfigMap and the
// pod's namespace, mounted read-only in every container where client
// libraries look for them.
const (
	// ServiceAccountTokenMountPath is where every container finds token,
	// ca.crt and namespace.
	ServiceAccountTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenVolumePrefix starts the volume's name.
	tokenVolumePrefix = "kube-api-access-"
	// tokenVolumeExpirationSeconds is what the kubelet asks for: an hour
	// and seven seconds, the value the API server recognises as a
	// kubelet's (see kubeletTokenExpirationSeconds).
	tokenVolumeExpirationSeconds = kubeletTokenExpirationSeconds
	rootCAConfigMap              = "kube-root-ca.crt"
)

// automountServiceAccountToken decides whether the pod gets the token:
// the pod's own field wins, then the service account's, then yes.
func automountServiceAccountToken(pod *corev1.Pod, sa *corev1.ServiceAccount) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountServiceAccountToken adds the token volume to pod and mounts it in
// each container and init container that has nothing mounted at
// ServiceAccountTokenMountPath yet; a token volume the pod already has is
// reused. suffix makes the new volume's name unique.
func mountServiceAccountToken(pod *corev1.Pod, suffix func() string) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, tokenVolumePrefix) && isTokenVolume(v) {
			name = v.Name
			break
		}
	}
	mounted := false
	mount := func(containers []corev1.Container) {
		for i := range containers {
			c := &containers[i]
			taken := false
			for _, m := range c.VolumeMounts {
				if m.MountPath == ServiceAccountTokenMountPath {
					taken = true
					break
				}
			}
			if taken {
				continue
			}
			if name == "" {
				name = tokenVolumePrefix + suffix()
			}
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: ServiceAccountTokenMountPath})
			mounted = true
		}
	}
	mount(pod.Spec.InitContainers)
	mount(pod.Spec.Containers)
	if !mounted {
		return
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return
		}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, tokenVolume(name))
}

// isTokenVolume reports whether v is a projected volume with a service
// account token, the only kind of volume the plugin reuses.
func isTokenVolume(v corev1.Volume) bool {
	if v.Projected == nil {
		return false
	}
	for _, s := range v.Projected.Sources {
		if s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

func tokenVolume(name string) corev1.Volume {
	mode, expiration := int32(0o644), int64(tokenVolumeExpirationSeconds)
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiration}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}}}
}

// randomSuffix is the five characters of a new token volume's name.
func randomSuffix() string { return utilrand.String(5) }
