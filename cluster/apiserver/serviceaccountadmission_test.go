package apiserver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestAutomountServiceAccountToken(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name    string
		pod, sa *bool
		want    bool
	}{
		{name: "neither says", want: true},
		{name: "account opts out", sa: &no, want: false},
		{name: "pod opts back in", pod: &yes, sa: &no, want: true},
		{name: "pod opts out", pod: &no, sa: &yes, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{AutomountServiceAccountToken: tc.pod}}
			sa := &corev1.ServiceAccount{AutomountServiceAccountToken: tc.sa}
			if got := automountServiceAccountToken(pod, sa); got != tc.want {
				t.Errorf("automount = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMountServiceAccountToken(t *testing.T) {
	tokenMount := corev1.VolumeMount{Name: "kube-api-access-abcde", ReadOnly: true, MountPath: ServiceAccountTokenMountPath}
	own := corev1.VolumeMount{Name: "mine", MountPath: ServiceAccountTokenMountPath}
	cases := []struct {
		name                   string
		volumes                []corev1.Volume
		init, containers       [][]corev1.VolumeMount
		wantVolumes            []string
		wantInit, wantContains [][]corev1.VolumeMount
	}{{
		name:         "every container gets the volume",
		init:         [][]corev1.VolumeMount{nil},
		containers:   [][]corev1.VolumeMount{nil, nil},
		wantVolumes:  []string{"kube-api-access-abcde"},
		wantInit:     [][]corev1.VolumeMount{{tokenMount}},
		wantContains: [][]corev1.VolumeMount{{tokenMount}, {tokenMount}},
	}, {
		name:         "a container with its own mount there keeps it",
		volumes:      []corev1.Volume{{Name: "mine"}},
		containers:   [][]corev1.VolumeMount{{own}, nil},
		wantVolumes:  []string{"mine", "kube-api-access-abcde"},
		wantContains: [][]corev1.VolumeMount{{own}, {tokenMount}},
	}, {
		name:         "nothing to mount, no volume",
		volumes:      []corev1.Volume{{Name: "mine"}},
		containers:   [][]corev1.VolumeMount{{own}},
		wantVolumes:  []string{"mine"},
		wantContains: [][]corev1.VolumeMount{{own}},
	}, {
		name:         "an existing token volume is reused",
		volumes:      []corev1.Volume{tokenVolume("kube-api-access-zzzzz")},
		containers:   [][]corev1.VolumeMount{nil},
		wantVolumes:  []string{"kube-api-access-zzzzz"},
		wantContains: [][]corev1.VolumeMount{{{Name: "kube-api-access-zzzzz", ReadOnly: true, MountPath: ServiceAccountTokenMountPath}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: tc.volumes}}
			for _, m := range tc.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{VolumeMounts: m})
			}
			for _, m := range tc.containers {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{VolumeMounts: m})
			}
			mountServiceAccountToken(pod, func() string { return "abcde" })
			var names []string
			for _, v := range pod.Spec.Volumes {
				names = append(names, v.Name)
			}
			if diff := cmp.Diff(tc.wantVolumes, names); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			for i, want := range tc.wantInit {
				if diff := cmp.Diff(want, pod.Spec.InitContainers[i].VolumeMounts); diff != "" {
					t.Errorf("init container %d mounts (-want +got):\n%s", i, diff)
				}
			}
			for i, want := range tc.wantContains {
				if diff := cmp.Diff(want, pod.Spec.Containers[i].VolumeMounts); diff != "" {
					t.Errorf("container %d mounts (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

// TestTokenVolume checks the volume against upstream's shape.
func TestTokenVolume(t *testing.T) {
	v := tokenVolume("kube-api-access-abcde")
	p := v.Projected
	if p == nil || len(p.Sources) != 3 || *p.DefaultMode != 0o644 {
		t.Fatalf("volume %+v; want a projected volume of three sources, mode 0644", v)
	}
	if tok := p.Sources[0].ServiceAccountToken; tok == nil || tok.Path != "token" || *tok.ExpirationSeconds != 3607 || tok.Audience != "" {
		t.Errorf("token source %+v; want token, 3607 s, the API server's audience", tok)
	}
	if cm := p.Sources[1].ConfigMap; cm == nil || cm.Name != "kube-root-ca.crt" || len(cm.Items) != 1 || cm.Items[0].Key != "ca.crt" {
		t.Errorf("configmap source %+v; want kube-root-ca.crt's ca.crt", cm)
	}
	if d := p.Sources[2].DownwardAPI; d == nil || d.Items[0].Path != "namespace" || d.Items[0].FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("downward API source %+v; want namespace from metadata.namespace", d)
	}
}
