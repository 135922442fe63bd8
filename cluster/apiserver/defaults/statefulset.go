package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

// defaultStatefulSet sets apps/v1's StatefulSet defaults: one replica, Pods
// made and removed one at a time in ordinal order (OrderedReady), a
// RollingUpdate that replaces every Pod from the highest ordinal down
// (partition 0), claims of volumeClaimTemplates kept when the set is
// deleted or scaled down, and ten kept revisions.
func defaultStatefulSet(sts *appsv1.StatefulSet) {
	spec := &sts.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	if spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		if spec.UpdateStrategy.RollingUpdate.Partition == nil {
			spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](0)
		}
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	policy := spec.PersistentVolumeClaimRetentionPolicy
	if policy.WhenDeleted == "" {
		policy.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if policy.WhenScaled == "" {
		policy.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	defaultPodSpec(&spec.Template.Spec)
}
