package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateEnv checks a container's env list. Names may be any printable
// ASCII without '=' (RelaxedEnvironmentVariableValidation is GA), and a
// value comes either inline or from exactly one source.
func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range vars {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else {
			allErrs = append(allErrs, invalidEach(idxPath.Child("name"), ev.Name, validation.IsRelaxedEnvVarName(ev.Name))...)
		}
		allErrs = append(allErrs, validateEnvVarValueFrom(ev, idxPath.Child("valueFrom"))...)
	}
	return allErrs
}

// The Pod fields an env var may read through fieldRef.
var envFieldPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var allErrs field.ErrorList
	sources := 0
	if from.FieldRef != nil {
		sources++
		allErrs = append(allErrs, validateObjectFieldSelector(from.FieldRef, envFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		sources++
		allErrs = append(allErrs, validateResourceFieldSelector(from.ResourceFieldRef, fldPath.Child("resourceFieldRef"), false)...)
	}
	if ref := from.ConfigMapKeyRef; ref != nil {
		sources++
		allErrs = append(allErrs, validateKeySelector(ref.Name, ref.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if ref := from.SecretKeyRef; ref != nil {
		sources++
		allErrs = append(allErrs, validateKeySelector(ref.Name, ref.Key, fldPath.Child("secretKeyRef"))...)
	}
	switch {
	case sources == 0:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case sources > 1:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return allErrs
}

// validateKeySelector checks a reference to one key of a ConfigMap or
// Secret. Upstream checks the name even when it is empty, so an empty name
// is reported as an invalid one.
func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	allErrs := validateNameWith(nameIsDNSSubdomain, name, fldPath.Child("name"))
	if key == "" {
		return append(allErrs, field.Required(fldPath.Child("key"), ""))
	}
	return append(allErrs, invalidEach(fldPath.Child("key"), key, validation.IsConfigMapKey(key))...)
}

// validateObjectFieldSelector checks a downward-API fieldRef against the
// field paths allowed where it is used (an env var or a volume file).
func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, allowed []string, fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	fieldPath, err := convertDownwardAPIFieldLabel(fs.APIVersion, fs.FieldPath)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: %v", err))}
	}
	if path, subscript, ok := splitSubscriptedPath(fieldPath); ok {
		switch path {
		case "metadata.annotations":
			return validateQualifiedName(strings.ToLower(subscript), fldPath)
		case "metadata.labels":
			return validateQualifiedName(subscript, fldPath)
		}
		return field.ErrorList{field.Invalid(fldPath, path, "does not support subscript")}
	}
	if !slices.Contains(allowed, fieldPath) {
		sorted := slices.Clone(allowed)
		slices.Sort(sorted)
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), fieldPath, sorted)}
	}
	return nil
}

// convertDownwardAPIFieldLabel maps a v1 fieldRef path to the internal one,
// rejecting paths no API version supports.
func convertDownwardAPIFieldLabel(version, label string) (string, error) {
	if version != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", version)
	}
	if path, _, ok := splitSubscriptedPath(label); ok {
		if path == "metadata.annotations" || path == "metadata.labels" {
			return label, nil
		}
		return "", fmt.Errorf("field label does not support subscript: %s", label)
	}
	switch label {
	case "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
		"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		return label, nil
	case "spec.host": // what very old clients send for spec.nodeName
		return "spec.nodeName", nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}

// splitSubscriptedPath splits "metadata.labels['app']" into
// "metadata.labels" and "app".
func splitSubscriptedPath(fieldPath string) (path, subscript string, ok bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return "", "", false
	}
	parts := strings.SplitN(strings.TrimSuffix(fieldPath, "']"), "['", 2)
	if len(parts) < 2 || parts[0] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// The container resources a resourceFieldRef may read; hugepages-<size>
// limits and requests are allowed too.
var resourceFieldPaths = []string{
	"limits.cpu", "limits.ephemeral-storage", "limits.memory",
	"requests.cpu", "requests.ephemeral-storage", "requests.memory",
}

func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, fldPath *field.Path, inVolume bool) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case inVolume && fs.ContainerName == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("resource"), ""))
	case !slices.Contains(resourceFieldPaths, fs.Resource) &&
		!strings.HasPrefix(fs.Resource, "requests.hugepages-") && !strings.HasPrefix(fs.Resource, "limits.hugepages-"):
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("resource"), fs.Resource, resourceFieldPaths))
	}
	return append(allErrs, validateResourceDivisor(fs, fldPath)...)
}

// validateResourceDivisor checks the unit a resourceFieldRef reports in.
func validateResourceDivisor(fs *corev1.ResourceFieldSelector, fldPath *field.Path) field.ErrorList {
	if fs.Divisor.IsZero() {
		return nil
	}
	name := fs.Resource
	divisor := fs.Divisor.String()
	byteUnits := []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
	const byteUnitsText = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
	var msg string
	switch {
	case name == "limits.cpu" || name == "requests.cpu":
		if divisor != "1m" && divisor != "1" {
			msg = "only divisor's values 1m and 1 are supported with the cpu resource"
		}
	case name == "limits.memory" || name == "requests.memory":
		if !slices.Contains(byteUnits, divisor) {
			msg = "only divisor's values " + byteUnitsText + " are supported with the memory resource"
		}
	case name == "limits.ephemeral-storage" || name == "requests.ephemeral-storage":
		if !slices.Contains(byteUnits, divisor) {
			msg = "only divisor's values " + byteUnitsText + " are supported with the local ephemeral storage resource"
		}
	case strings.HasPrefix(name, "requests.hugepages-") || strings.HasPrefix(name, "limits.hugepages-"):
		if !slices.Contains(byteUnits, divisor) {
			msg = "only divisor's values " + byteUnitsText + " are supported with the hugepages resource"
		}
	}
	if msg == "" {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Child("divisor"), name, msg)}
}

// validateEnvFrom checks envFrom: an optional prefix that is itself a valid
// variable name, and exactly one of a ConfigMap or a Secret.
func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range sources {
		idxPath := fldPath.Index(i)
		if ev.Prefix != "" {
			allErrs = append(allErrs, invalidEach(idxPath.Child("prefix"), ev.Prefix, validation.IsRelaxedEnvVarName(ev.Prefix))...)
		}
		count := 0
		if ev.ConfigMapRef != nil {
			count++
			allErrs = append(allErrs, validateEnvSourceName(ev.ConfigMapRef.Name, idxPath.Child("configMapRef"))...)
		}
		if ev.SecretRef != nil {
			count++
			allErrs = append(allErrs, validateEnvSourceName(ev.SecretRef.Name, idxPath.Child("secretRef"))...)
		}
		// These two hang off the list, not the item, as upstream's do.
		if count == 0 {
			allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		} else if count > 1 {
			allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

func validateEnvSourceName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath.Child("name"), "")}
	}
	// Upstream checks these names as prefixes, which allows a trailing '-'.
	return invalidEach(fldPath.Child("name"), name, nameIsDNSSubdomain(name, true))
}
