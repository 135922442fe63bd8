package validation

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestConfigMap(t *testing.T) {
	tests := []struct {
		name string
		cm   corev1.ConfigMap
		want []string
	}{
		{name: "valid", cm: corev1.ConfigMap{Data: map[string]string{"app.properties": "x", ".hidden": "y"}}},
		{
			name: "bad keys",
			cm:   corev1.ConfigMap{Data: map[string]string{"my key": "x", "..": "y"}, BinaryData: map[string][]byte{"my key": nil}},
			want: []string{
				`data[my key]: Invalid value: "my key": ` + configKeyMsg,
				`data[my key]: Invalid value: "my key": duplicate of key present in binaryData`,
				`binaryData[my key]: Invalid value: "my key": ` + configKeyMsg,
				`data[..]: Invalid value: "..": must not be '..'`,
			},
		},
		{
			name: "over 1 MiB",
			cm:   corev1.ConfigMap{Data: map[string]string{"a": strings.Repeat("x", 1<<20), "b": "y"}},
			// Upstream names the whole object with an empty path, which
			// prints as "[]".
			want: []string{`[]: Too long: may not be more than 1048576 bytes`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := tt.cm.DeepCopy()
			cm.ObjectMeta = objectMeta("cfg")
			checkErrors(t, ValidateCreate(cm), tt.want...)
		})
	}
}

func TestImmutableConfigMapAndSecret(t *testing.T) {
	oldCM := &corev1.ConfigMap{ObjectMeta: objectMeta("cfg"), Immutable: ptr.To(true), Data: map[string]string{"a": "1"}}
	cm := oldCM.DeepCopy()
	cm.Data["a"] = "2"
	cm.Immutable = nil
	checkErrors(t, ValidateUpdate(cm, oldCM),
		"immutable: Forbidden: field is immutable when `immutable` is set",
		"data: Forbidden: field is immutable when `immutable` is set",
	)
	labelled := oldCM.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	checkErrors(t, ValidateUpdate(labelled, oldCM))

	oldSecret := &corev1.Secret{ObjectMeta: objectMeta("s"), Type: corev1.SecretTypeOpaque, Immutable: ptr.To(true), Data: map[string][]byte{"a": []byte("1")}}
	secret := oldSecret.DeepCopy()
	secret.Data["a"] = []byte("2")
	secret.Type = corev1.SecretTypeBasicAuth
	checkErrors(t, ValidateUpdate(secret, oldSecret),
		`type: Invalid value: "kubernetes.io/basic-auth": field is immutable`,
		"data: Forbidden: field is immutable when `immutable` is set",
		`data[username]: Required value`,
		`data[password]: Required value`,
	)
}

func TestSecretTypes(t *testing.T) {
	tests := []struct {
		name   string
		secret corev1.Secret
		want   []string
	}{
		{name: "opaque", secret: corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}}},
		{
			name:   "tls without key",
			secret: corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("x")}},
			want:   []string{`data[tls.key]: Required value`},
		},
		{
			name:   "docker config that is not JSON",
			secret: corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{")}},
			want:   []string{`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": unexpected end of JSON input`},
		},
		{
			name:   "service account token without its account",
			secret: corev1.Secret{Type: corev1.SecretTypeServiceAccountToken},
			want:   []string{`metadata.annotations[kubernetes.io/service-account.name]: Required value`},
		},
		{
			name:   "over 1 MiB",
			secret: corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": make([]byte, 1<<20+1)}},
			want:   []string{`data: Too long: may not be more than 1048576 bytes`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.secret.DeepCopy()
			s.ObjectMeta = objectMeta("s")
			checkErrors(t, ValidateCreate(s), tt.want...)
		})
	}
}

func TestNamespace(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes", "cleanup"}}}
	checkErrors(t, ValidateCreate(ns),
		`spec.finalizers: Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified`)

	old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", ResourceVersion: "1"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := old.DeepCopy()
	terminating.Status.Phase = corev1.NamespaceTerminating
	checkErrors(t, ValidateStatusUpdate(terminating, old),
		"status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty")

	deleted := old.DeepCopy()
	deleted.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	oldDeleted := deleted.DeepCopy()
	deleted.Status.Phase = corev1.NamespaceTerminating
	checkErrors(t, ValidateStatusUpdate(deleted, oldDeleted))
}

func TestNode(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1"},
		Spec: corev1.NodeSpec{
			PodCIDRs: []string{"10.244.1.0/24", "10.244.2.0/24"},
			Taints: []corev1.Taint{
				{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
				{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule},
				{Key: "zone", Effect: ""},
			},
		},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1500m")}},
	}
	checkErrors(t, ValidateCreate(node),
		`spec.podCIDRs: Invalid value: ["10.244.1.0/24","10.244.2.0/24"]: may specify no more than one CIDR for each IP family`,
		`metadata.taints[1]: Duplicate value: {"key":"dedicated","value":"db","effect":"NoSchedule"}: taints must be unique by key and effect pair`,
		`metadata.taints[2].effect: Required value`,
		`status.capacity.pods: Invalid value: "1500m": must be an integer`,
	)

	old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", ResourceVersion: "1"}}
	assigned := old.DeepCopy()
	assigned.Spec.PodCIDRs = []string{"10.244.1.0/24"}
	assigned.Spec.ProviderID = "klab://worker-1"
	checkErrors(t, ValidateUpdate(assigned, old))
	moved := assigned.DeepCopy()
	moved.Spec.PodCIDRs = []string{"10.244.9.0/24"}
	moved.Spec.ProviderID = "other"
	checkErrors(t, ValidateUpdate(moved, assigned),
		`spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid`,
		`spec.providerID: Forbidden: node updates may not change providerID except from "" to valid`,
	)
}

func TestEvents(t *testing.T) {
	now := metav1.NowMicro()
	regarding := corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}

	// A core/v1 Event's own checks skip its metadata; the rules every
	// object shares still apply.
	unnamed := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, InvolvedObject: regarding}
	checkErrors(t, ValidateCreate(unnamed), `metadata.name: Required value: name or generateName is required`)
	slashed := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web/1", Namespace: "default"}, InvolvedObject: regarding}
	checkErrors(t, ValidateCreate(slashed), `metadata.name: Invalid value: "web/1": may not contain '/'`)

	core := &corev1.Event{ObjectMeta: objectMeta("web.1"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web"}}
	checkErrors(t, ValidateCreate(core), `involvedObject.namespace: Invalid value: "shop": does not match event.namespace`)

	newStyle := &corev1.Event{ObjectMeta: objectMeta("web.2"), InvolvedObject: regarding, EventTime: now, ReportingController: "kubelet"}
	checkErrors(t, ValidateCreate(newStyle),
		`reportingInstance: Required value`,
		`action: Required value`,
		`reason: Required value`,
	)

	ev := &eventsv1.Event{ObjectMeta: objectMeta("web.3"), Regarding: regarding, EventTime: now,
		ReportingController: "kubelet", ReportingInstance: "worker-1", Action: "Pulling", Reason: "Pulling",
		Type: "Info", Note: strings.Repeat("x", 1025), DeprecatedCount: 2,
		Series: &eventsv1.EventSeries{Count: 1}}
	checkErrors(t, ValidateCreate(ev),
		`message: Invalid value: "": can have at most 1024 characters`,
		`type: Invalid value: "": has invalid value: Info`,
		`count: Invalid value: "": needs to be unset`,
		`series.count: Invalid value: "": should be at least 2`,
		`series.lastObservedTime: Required value`,
	)

	old := &eventsv1.Event{ObjectMeta: objectMeta("web.4"), Regarding: regarding, EventTime: now,
		ReportingController: "kubelet", ReportingInstance: "worker-1", Action: "Pulling", Reason: "Pulling", Type: corev1.EventTypeNormal}
	changed := old.DeepCopy()
	changed.Note = "edited"
	changed.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: now}
	checkErrors(t, ValidateUpdate(changed, old), `message: Invalid value: "edited": field is immutable`)
}

func TestLease(t *testing.T) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"}, Spec: coordinationv1.LeaseSpec{
		LeaseDurationSeconds: ptr.To[int32](0),
		LeaseTransitions:     ptr.To[int32](-1),
		Strategy:             ptr.To[coordinationv1.CoordinatedLeaseStrategy]("Newest"),
	}}
	checkErrors(t, ValidateCreate(lease),
		`spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`,
		`spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0`,
		`spec.strategy.strategy: Unsupported value: "Newest": supported values: "OldestEmulationVersion"`,
	)

	holder := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{PreferredHolder: ptr.To("master-2")}}
	checkErrors(t, ValidateCreate(holder), "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined")
}
