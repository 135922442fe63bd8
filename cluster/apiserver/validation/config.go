package validation

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDataSize is the most data a ConfigMap or Secret may hold, 1 MiB: an
// object must fit in one etcd value, and every node caches the ones its Pods
// use.
const maxDataSize = 1 * 1024 * 1024

const immutableDataMsg = "field is immutable when `immutable` is set"

// validateConfigMap checks a ConfigMap: keys usable as file names, no key in
// both data and binaryData, and at most 1 MiB in all.
func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	allErrs := validateObjectMeta(&cm.ObjectMeta, true, nameIsDNSSubdomain)
	total := 0
	dataPath, binaryPath := field.NewPath("data"), field.NewPath("binaryData")
	for key, value := range cm.Data {
		allErrs = append(allErrs, invalidEach(dataPath.Key(key), key, validation.IsConfigMapKey(key))...)
		if _, dup := cm.BinaryData[key]; dup {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(value)
	}
	for key, value := range cm.BinaryData {
		allErrs = append(allErrs, invalidEach(binaryPath.Key(key), key, validation.IsConfigMapKey(key))...)
		total += len(value)
	}
	if total > maxDataSize {
		// The empty path means "the whole object", as upstream reports it.
		allErrs = append(allErrs, field.TooLong(field.NewPath(""), "", maxDataSize))
	}
	return allErrs
}

// validateConfigMapUpdate: an immutable ConfigMap can only be deleted, which
// lets every kubelet stop watching it.
func validateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&cm.ObjectMeta, &old.ObjectMeta)
	if old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), immutableDataMsg))
		}
		if !apiequality.Semantic.DeepEqual(cm.Data, old.Data) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), immutableDataMsg))
		}
		if !apiequality.Semantic.DeepEqual(cm.BinaryData, old.BinaryData) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("binaryData"), immutableDataMsg))
		}
	}
	return append(allErrs, validateConfigMap(cm)...)
}

// validateSecret checks a Secret's keys and size, and the keys its type
// promises (a kubernetes.io/tls Secret has tls.crt and tls.key).
func validateSecret(s *corev1.Secret) field.ErrorList {
	allErrs := validateObjectMeta(&s.ObjectMeta, true, nameIsDNSSubdomain)
	dataPath := field.NewPath("data")
	total := 0
	for key, value := range s.Data {
		allErrs = append(allErrs, invalidEach(dataPath.Key(key), key, validation.IsConfigMapKey(key))...)
		total += len(value)
	}
	if total > maxDataSize {
		allErrs = append(allErrs, field.TooLong(dataPath, "", maxDataSize))
	}
	requireKey := func(key string) {
		if _, ok := s.Data[key]; !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(key), ""))
		}
	}
	// wellFormedJSON: Docker config secrets are read by the kubelet, which
	// needs them to parse.
	wellFormedJSON := func(key string) {
		raw, ok := s.Data[key]
		if !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(key), ""))
			return
		}
		if err := json.Unmarshal(raw, &map[string]any{}); err != nil {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			allErrs = append(allErrs, field.Required(metadataPath.Child("annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		wellFormedJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		wellFormedJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, hasUser := s.Data[corev1.BasicAuthUsernameKey]
		_, hasPassword := s.Data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPassword {
			requireKey(corev1.BasicAuthUsernameKey)
			requireKey(corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		requireKey(corev1.TLSCertKey)
		requireKey(corev1.TLSPrivateKeyKey)
	}
	return allErrs
}

// validateSecretUpdate: a Secret's type never changes, and an immutable
// Secret's data never does.
func validateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateImmutable(s.Type, old.Type, field.NewPath("type"))...)
	if old.Immutable != nil && *old.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), immutableDataMsg))
		}
		if !apiequality.Semantic.DeepEqual(s.Data, old.Data) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), immutableDataMsg))
		}
	}
	return append(allErrs, validateSecret(s)...)
}

func validateServiceAccountUpdate(sa, old *corev1.ServiceAccount) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&sa.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validateObjectMeta(&sa.ObjectMeta, true, nameIsDNSSubdomain)...)
}
