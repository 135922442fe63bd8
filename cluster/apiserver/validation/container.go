package validation

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateContainers checks the regular containers: at least one, names
// unique among them, and the probes and hooks only they (and sidecars) have.
func validateContainers(containers []corev1.Container, volumes map[string]corev1.VolumeSource, gracePeriod *int64, fldPath *field.Path, hostUsers bool) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	names := map[string]bool{}
	for i := range containers {
		c := &containers[i]
		path := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(c, volumes, path, hostUsers)...)
		if names[c.Name] {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), c.Name))
		}
		names[c.Name] = true
		allErrs = append(allErrs, validateProbesAndHooks(c, gracePeriod, path)...)
		if c.RestartPolicy != nil {
			allErrs = append(allErrs, field.Forbidden(path.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	// Two containers of one Pod cannot open the same port on the node.
	return append(allErrs, checkHostPortConflicts(containers, fldPath)...)
}

// validateInitContainers checks the init containers, which run one after
// another before the regular ones. Only a sidecar (restartPolicy Always),
// which keeps running, may have probes and lifecycle hooks.
func validateInitContainers(containers, regular []corev1.Container, volumes map[string]corev1.VolumeSource, gracePeriod *int64, fldPath *field.Path, hostUsers bool) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]bool{}
	for _, c := range regular {
		names[c.Name] = true
	}
	for i := range containers {
		c := &containers[i]
		path := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(c, volumes, path, hostUsers)...)
		sidecar := false
		if c.RestartPolicy != nil {
			sidecar = *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
			if !sidecar {
				allErrs = append(allErrs, field.NotSupported(path.Child("restartPolicy"), *c.RestartPolicy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
		}
		if names[c.Name] {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), c.Name))
		} else if c.Name != "" {
			names[c.Name] = true
		}
		// Init containers run one at a time, so only ports within one
		// container can clash.
		allErrs = append(allErrs, checkHostPortConflicts([]corev1.Container{*c}, fldPath)...)
		if sidecar {
			allErrs = append(allErrs, validateProbesAndHooks(c, gracePeriod, path)...)
			continue
		}
		const notSidecar = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			allErrs = append(allErrs, field.Forbidden(path.Child("lifecycle"), notSidecar))
		}
		if c.LivenessProbe != nil {
			allErrs = append(allErrs, field.Forbidden(path.Child("livenessProbe"), notSidecar))
		}
		if c.ReadinessProbe != nil {
			allErrs = append(allErrs, field.Forbidden(path.Child("readinessProbe"), notSidecar))
		}
		if c.StartupProbe != nil {
			allErrs = append(allErrs, field.Forbidden(path.Child("startupProbe"), notSidecar))
		}
	}
	return allErrs
}

// validateContainerCommon checks what every kind of container must have: a
// DNS-label name, an image, and well-formed ports, environment, mounts,
// resources and security settings.
func validateContainerCommon(c *corev1.Container, volumes map[string]corev1.VolumeSource, path *field.Path, hostUsers bool) field.ErrorList {
	var allErrs field.ErrorList
	if c.Name == "" {
		allErrs = append(allErrs, field.Required(path.Child("name"), ""))
	} else {
		allErrs = append(allErrs, validateDNS1123Label(c.Name, path.Child("name"))...)
	}
	if c.Image == "" {
		allErrs = append(allErrs, field.Required(path.Child("image"), ""))
	}
	allErrs = append(allErrs, validateEnum(c.TerminationMessagePolicy,
		[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError},
		path.Child("terminationMessagePolicy"))...)
	allErrs = append(allErrs, validateContainerPorts(c.Ports, path.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, path.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	allErrs = append(allErrs, validateVolumeMounts(c, volumes, path.Child("volumeMounts"))...)
	allErrs = append(allErrs, validateVolumeDevices(c, volumes, path.Child("volumeDevices"))...)
	allErrs = append(allErrs, validateEnum(c.ImagePullPolicy,
		[]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever},
		path.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, validateResourceRequirements(&c.Resources, path.Child("resources"))...)
	allErrs = append(allErrs, validateSecurityContext(c.SecurityContext, path.Child("securityContext"), hostUsers)...)
	return allErrs
}

var supportedPortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		idxPath := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				allErrs = append(allErrs, invalidEach(idxPath.Child("name"), port.Name, msgs)...)
			} else if names[port.Name] {
				allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), port.Name))
			} else {
				names[port.Name] = true
			}
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			allErrs = append(allErrs, invalidPortNum(idxPath.Child("containerPort"), port.ContainerPort)...)
		}
		if port.HostPort != 0 {
			allErrs = append(allErrs, invalidPortNum(idxPath.Child("hostPort"), port.HostPort)...)
		}
		allErrs = append(allErrs, validateProtocol(port.Protocol, idxPath.Child("protocol"))...)
	}
	return allErrs
}

// invalidPortNum reports a port outside 1–65535.
func invalidPortNum(fldPath *field.Path, port int32) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		allErrs = append(allErrs, field.Invalid(fldPath, port, msg))
	}
	return allErrs
}

func validateProtocol(p corev1.Protocol, fldPath *field.Path) field.ErrorList {
	return validateEnum(p, supportedPortProtocols, fldPath)
}

// validatePortNumOrName checks a port given by number or by the name of a
// container port, as probes and Service targetPorts allow.
func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	switch port.Type {
	case intstr.Int:
		var allErrs field.ErrorList
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.IntValue(), msg))
		}
		return allErrs
	case intstr.String:
		return invalidEach(fldPath, port.StrVal, validation.IsValidPortName(port.StrVal))
	}
	return field.ErrorList{field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type))}
}

// checkHostPortConflicts reports a host port that two ports of containers
// claim with the same protocol and host IP.
func checkHostPortConflicts(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for ci, c := range containers {
		for pi, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen[key] {
				allErrs = append(allErrs, field.Duplicate(fldPath.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen[key] = true
		}
	}
	return allErrs
}

// validateVolumeMounts checks that each mount names a volume of the Pod, at
// a path no other mount or device of the container uses.
func validateVolumeMounts(c *corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	devices := map[string]string{}
	for _, d := range c.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	mountPaths := map[string]bool{}
	for i, m := range c.VolumeMounts {
		idxPath := fldPath.Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		}
		if _, ok := volumes[m.Name]; !ok {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("mountPath"), ""))
		}
		if mountPaths[m.MountPath] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths[m.MountPath] = true
		if _, ok := devices[m.Name]; ok {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		for _, devicePath := range devices {
			if devicePath == m.MountPath {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
			}
		}
		if v, ok := volumes[m.Name]; ok && v.Image != nil {
			if m.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPath"), m.SubPath, "not allowed in image volume sources"))
			}
			if m.SubPathExpr != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPathExpr"), m.SubPathExpr, "not allowed in image volume sources"))
			}
		}
		// The subPath paths below hang off the list, not the item: that is
		// upstream's path, kept so the message matches.
		if m.SubPath != "" {
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPath, fldPath.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPathExpr, fldPath.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			allErrs = append(allErrs, validateMountPropagation(*m.MountPropagation, c, fldPath.Child("mountPropagation"))...)
		}
		allErrs = append(allErrs, validateRecursiveReadOnly(m, fldPath.Child("recursiveReadOnly"))...)
	}
	return allErrs
}

func validateMountPropagation(p corev1.MountPropagationMode, c *corev1.Container, fldPath *field.Path) field.ErrorList {
	valid := []corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}
	if !slices.Contains(valid, p) {
		return field.ErrorList{field.NotSupported(fldPath, p, valid)}
	}
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	if p == corev1.MountPropagationBidirectional && !privileged {
		return field.ErrorList{field.Forbidden(fldPath, "Bidirectional mount propagation is available only to privileged containers")}
	}
	return nil
}

func validateRecursiveReadOnly(m corev1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath, *m.RecursiveReadOnly,
			[]corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}))
	}
	return allErrs
}

// validateVolumeDevices checks raw block devices, which only a claim-backed
// volume can provide.
func validateVolumeDevices(c *corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	names, paths := map[string]bool{}, map[string]bool{}
	for i, d := range c.VolumeDevices {
		idxPath := fldPath.Index(i)
		source, found := volumes[d.Name]
		if d.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		}
		if names[d.Name] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), d.Name, "must be unique"))
		}
		if found && source.PersistentVolumeClaim == nil && source.Ephemeral == nil {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if !found {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), d.Name))
		}
		if d.DevicePath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("devicePath"), ""))
		}
		if paths[d.DevicePath] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && hasBacksteps(d.DevicePath) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths[d.DevicePath] = true
		}
		if _, ok := mounts[d.Name]; ok {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		for _, mountPath := range mounts {
			if mountPath == d.DevicePath {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
			}
		}
		if d.Name != "" {
			names[d.Name] = true
		}
	}
	return allErrs
}
