package validation

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// validateVolumes checks the Pod's volumes and returns the valid ones by
// name, for the containers' volumeMounts to be checked against.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path, isPod bool) (map[string]corev1.VolumeSource, field.ErrorList) {
	var allErrs field.ErrorList
	valid := map[string]corev1.VolumeSource{}
	for i, vol := range volumes {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		errs := validateVolumeSource(&vol.VolumeSource, idxPath, isPod)
		if vol.Name == "" {
			errs = append(errs, field.Required(namePath, ""))
		} else {
			errs = append(errs, validateDNS1123Label(vol.Name, namePath)...)
		}
		if _, dup := valid[vol.Name]; dup {
			errs = append(errs, field.Duplicate(namePath, vol.Name))
		}
		if len(errs) == 0 {
			valid[vol.Name] = vol.VolumeSource
		}
		allErrs = append(allErrs, errs...)
	}
	return valid, allErrs
}

// volumeType is one kind of volume source, with the check of its content
// (nil for the types a lab cannot mount, which are only counted).
type volumeType struct {
	name     string
	set      bool
	validate func() field.ErrorList
}

// validateVolumeSource requires exactly one source per volume. The names
// are upstream's, including its "downwarAPI" typo in the error for a second
// source.
func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path, isPod bool) field.ErrorList {
	var allErrs field.ErrorList
	count := 0
	if src.EmptyDir != nil {
		count++
		if limit := src.EmptyDir.SizeLimit; limit != nil && limit.Cmp(resource.Quantity{}) < 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	}
	types := []volumeType{
		{"hostPath", src.HostPath != nil, func() field.ErrorList { return validateHostPath(src.HostPath, fldPath.Child("hostPath")) }},
		{"gitRepo", src.GitRepo != nil, nil},
		{"gcePersistentDisk", src.GCEPersistentDisk != nil, nil},
		{"awsElasticBlockStore", src.AWSElasticBlockStore != nil, nil},
		{"secret", src.Secret != nil, func() field.ErrorList { return validateSecretVolume(src.Secret, fldPath.Child("secret")) }},
		{"nfs", src.NFS != nil, func() field.ErrorList { return validateNFSVolume(src.NFS, fldPath.Child("nfs")) }},
		{"iscsi", src.ISCSI != nil, nil},
		{"glusterfs", src.Glusterfs != nil, nil},
		{"flocker", src.Flocker != nil, nil},
		{"persistentVolumeClaim", src.PersistentVolumeClaim != nil, func() field.ErrorList {
			if src.PersistentVolumeClaim.ClaimName == "" {
				return field.ErrorList{field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), "")}
			}
			return nil
		}},
		{"rbd", src.RBD != nil, nil},
		{"cinder", src.Cinder != nil, nil},
		{"cephFS", src.CephFS != nil, nil},
		{"quobyte", src.Quobyte != nil, nil},
		{"downwarAPI", src.DownwardAPI != nil, func() field.ErrorList {
			return validateDownwardAPIVolume(src.DownwardAPI, fldPath.Child("downwardAPI"))
		}},
		{"fc", src.FC != nil, nil},
		{"flexVolume", src.FlexVolume != nil, nil},
		{"configMap", src.ConfigMap != nil, func() field.ErrorList { return validateConfigMapVolume(src.ConfigMap, fldPath.Child("configMap")) }},
		{"azureFile", src.AzureFile != nil, nil},
		{"vsphereVolume", src.VsphereVolume != nil, nil},
		{"photonPersistentDisk", src.PhotonPersistentDisk != nil, nil},
		{"portworxVolume", src.PortworxVolume != nil, nil},
		{"azureDisk", src.AzureDisk != nil, nil},
		{"storageos", src.StorageOS != nil, nil},
		{"projected", src.Projected != nil, func() field.ErrorList { return validateProjectedVolume(src.Projected, fldPath.Child("projected")) }},
		{"scaleIO", src.ScaleIO != nil, nil},
		{"csi", src.CSI != nil, func() field.ErrorList { return validateCSIDriverName(src.CSI.Driver, fldPath.Child("csi", "driver")) }},
		{"ephemeral", src.Ephemeral != nil, func() field.ErrorList {
			if src.Ephemeral.VolumeClaimTemplate == nil {
				return field.ErrorList{field.Required(fldPath.Child("ephemeral", "volumeClaimTemplate"), "")}
			}
			return nil
		}},
		{"image", src.Image != nil, func() field.ErrorList { return validateImageVolume(src.Image, fldPath.Child("image"), isPod) }},
	}
	for _, t := range types {
		if !t.set {
			continue
		}
		if count > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(t.name), "may not specify more than 1 volume type"))
			continue
		}
		count++
		if t.validate != nil {
			allErrs = append(allErrs, t.validate()...)
		}
	}
	if count == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a volume type"))
	}
	return allErrs
}

var hostPathTypes = []corev1.HostPathType{
	corev1.HostPathUnset, corev1.HostPathBlockDev, corev1.HostPathCharDev, corev1.HostPathDirectory,
	corev1.HostPathDirectoryOrCreate, corev1.HostPathFile, corev1.HostPathFileOrCreate, corev1.HostPathSocket,
}

func validateHostPath(hp *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if hp.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	allErrs := validatePathNoBacksteps(hp.Path, fldPath.Child("path"))
	if hp.Type != nil && !slices.Contains(hostPathTypes, *hp.Type) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), hp.Type, hostPathTypes))
	}
	return allErrs
}

func validateSecretVolume(s *corev1.SecretVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.SecretName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("secretName"), ""))
	}
	allErrs = append(allErrs, validateFileMode(s.DefaultMode, fldPath.Child("defaultMode"))...)
	for i, kp := range s.Items {
		allErrs = append(allErrs, validateKeyToPath(kp, fldPath.Child("items").Index(i))...)
	}
	return allErrs
}

func validateConfigMapVolume(c *corev1.ConfigMapVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	allErrs = append(allErrs, validateFileMode(c.DefaultMode, fldPath.Child("defaultMode"))...)
	for i, kp := range c.Items {
		allErrs = append(allErrs, validateKeyToPath(kp, fldPath.Child("items").Index(i))...)
	}
	return allErrs
}

func validateFileMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

// validateKeyToPath checks one key of a ConfigMap or Secret projected to a
// file: the file must stay inside the volume.
func validateKeyToPath(kp corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if kp.Key == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("key"), ""))
	}
	if kp.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validateLocalNonReservedPath(kp.Path, fldPath.Child("path"))...)
	return append(allErrs, validateFileMode(kp.Mode, fldPath.Child("mode"))...)
}

func validateNFSVolume(nfs *corev1.NFSVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if nfs.Server == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("server"), ""))
	}
	if nfs.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	if !path.IsAbs(nfs.Path) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), nfs.Path, "must be an absolute path"))
	}
	return allErrs
}

// The Pod fields a downward-API volume file may hold.
var volumeFieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

func validateDownwardAPIVolume(d *corev1.DownwardAPIVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateFileMode(d.DefaultMode, fldPath.Child("defaultMode"))
	// Upstream reports item errors under the volume, not the item.
	for _, file := range d.Items {
		allErrs = append(allErrs, validateDownwardAPIFile(file, fldPath)...)
	}
	return allErrs
}

func validateDownwardAPIFile(file corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if file.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validateLocalNonReservedPath(file.Path, fldPath.Child("path"))...)
	switch {
	case file.FieldRef != nil:
		allErrs = append(allErrs, validateObjectFieldSelector(file.FieldRef, volumeFieldPaths, fldPath.Child("fieldRef"))...)
		if file.ResourceFieldRef != nil {
			allErrs = append(allErrs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case file.ResourceFieldRef != nil:
		allErrs = append(allErrs, validateResourceFieldSelector(file.ResourceFieldRef, fldPath.Child("resourceFieldRef"), true)...)
	default:
		allErrs = append(allErrs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(allErrs, validateFileMode(file.Mode, fldPath.Child("mode"))...)
}

// validateProjectedVolume checks a volume that merges several sources into
// one directory: one source per entry, and no file path used twice.
func validateProjectedVolume(p *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateFileMode(p.DefaultMode, fldPath.Child("defaultMode"))
	paths := map[string]bool{}
	claimPath := func(filePath string, value string) {
		if filePath == "" {
			return
		}
		if paths[filePath] {
			allErrs = append(allErrs, field.Invalid(fldPath, value, "conflicting duplicate paths"))
		}
		paths[filePath] = true
	}
	for i, source := range p.Sources {
		srcPath := fldPath.Child("sources").Index(i)
		count := 0
		if s := source.Secret; s != nil {
			count++
			if s.Name == "" {
				allErrs = append(allErrs, field.Required(srcPath.Child("secret", "name"), ""))
			}
			for j, kp := range s.Items {
				allErrs = append(allErrs, validateKeyToPath(kp, srcPath.Child("secret", "items").Index(j))...)
				claimPath(kp.Path, s.Name)
			}
		}
		if c := source.ConfigMap; c != nil {
			count++
			if c.Name == "" {
				allErrs = append(allErrs, field.Required(srcPath.Child("configMap", "name"), ""))
			}
			for j, kp := range c.Items {
				allErrs = append(allErrs, validateKeyToPath(kp, srcPath.Child("configMap", "items").Index(j))...)
				claimPath(kp.Path, c.Name)
			}
		}
		if d := source.DownwardAPI; d != nil {
			count++
			for _, file := range d.Items {
				allErrs = append(allErrs, validateDownwardAPIFile(file, srcPath.Child("downwardAPI"))...)
				claimPath(file.Path, file.Path)
			}
		}
		if t := source.ServiceAccountToken; t != nil {
			count++
			tokenPath := srcPath.Child("serviceAccountToken")
			if t.ExpirationSeconds != nil && *t.ExpirationSeconds < 10*60 {
				allErrs = append(allErrs, field.Invalid(tokenPath.Child("expirationSeconds"), *t.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
			}
			if t.ExpirationSeconds != nil && *t.ExpirationSeconds > 1<<32 {
				allErrs = append(allErrs, field.Invalid(tokenPath.Child("expirationSeconds"), *t.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
			}
			// Upstream's path for these two is the volume's, not the source's.
			if t.Path == "" {
				allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
			} else {
				allErrs = append(allErrs, validateLocalNonReservedPath(t.Path, fldPath.Child("path"))...)
			}
		}
		if b := source.ClusterTrustBundle; b != nil {
			count++
			if b.Path == "" {
				allErrs = append(allErrs, field.Required(srcPath.Child("clusterTrustBundle", "path"), ""))
			}
			allErrs = append(allErrs, validateLocalNonReservedPath(b.Path, srcPath.Child("clusterTrustBundle", "path"))...)
			claimPath(b.Path, b.Path)
		}
		if count > 1 {
			allErrs = append(allErrs, field.Forbidden(srcPath, "may not specify more than 1 volume type per source"))
		}
	}
	return allErrs
}

func validateCSIDriverName(driver string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if driver == "" {
		allErrs = append(allErrs, field.Required(fldPath, ""))
	}
	if len(driver) > 63 {
		allErrs = append(allErrs, field.TooLong(fldPath, "", 63))
	}
	return append(allErrs, invalidEach(fldPath, driver, validation.IsDNS1123Subdomain(strings.ToLower(driver)))...)
}

func validateImageVolume(img *corev1.ImageVolumeSource, fldPath *field.Path, isPod bool) field.ErrorList {
	var allErrs field.ErrorList
	if isPod && img.Reference == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("reference"), ""))
	}
	return append(allErrs, validateEnum(img.PullPolicy, []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}, fldPath.Child("pullPolicy"))...)
}

// validateLocalDescendingPath requires a relative path without "..": a file
// a volume or a profile names must stay inside its directory.
func validateLocalDescendingPath(targetPath string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if path.IsAbs(targetPath) {
		allErrs = append(allErrs, field.Invalid(fldPath, targetPath, "must be a relative path"))
	}
	return append(allErrs, validatePathNoBacksteps(targetPath, fldPath)...)
}

func validatePathNoBacksteps(targetPath string, fldPath *field.Path) field.ErrorList {
	if hasBacksteps(targetPath) {
		return field.ErrorList{field.Invalid(fldPath, targetPath, "must not contain '..'")}
	}
	return nil
}

func hasBacksteps(targetPath string) bool {
	for _, part := range strings.Split(filepath.ToSlash(targetPath), "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// validateLocalNonReservedPath also refuses a name starting with "..",
// which the kubelet uses for its own files in the volume.
func validateLocalNonReservedPath(targetPath string, fldPath *field.Path) field.ErrorList {
	allErrs := validateLocalDescendingPath(targetPath, fldPath)
	if strings.HasPrefix(targetPath, "..") && !strings.HasPrefix(targetPath, "../") {
		allErrs = append(allErrs, field.Invalid(fldPath, targetPath, "must not start with '..'"))
	}
	return allErrs
}
