package validation

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateProbesAndHooks checks what only long-running containers have:
// lifecycle hooks and the liveness, readiness and startup probes.
func validateProbesAndHooks(c *corev1.Container, gracePeriod *int64, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c.Lifecycle != nil {
		if c.Lifecycle.PostStart != nil {
			allErrs = append(allErrs, validateHandler(lifecycleHandler(c.Lifecycle.PostStart), gracePeriod, path.Child("lifecycle", "postStart"))...)
		}
		if c.Lifecycle.PreStop != nil {
			allErrs = append(allErrs, validateHandler(lifecycleHandler(c.Lifecycle.PreStop), gracePeriod, path.Child("lifecycle", "preStop"))...)
		}
	}
	if p := c.LivenessProbe; p != nil {
		fldPath := path.Child("livenessProbe")
		allErrs = append(allErrs, validateProbe(p, gracePeriod, fldPath)...)
		allErrs = append(allErrs, mustBeOne(p.SuccessThreshold, fldPath.Child("successThreshold"))...)
	}
	if p := c.ReadinessProbe; p != nil {
		fldPath := path.Child("readinessProbe")
		allErrs = append(allErrs, validateProbe(p, gracePeriod, fldPath)...)
		if p.TerminationGracePeriodSeconds != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if p := c.StartupProbe; p != nil {
		fldPath := path.Child("startupProbe")
		allErrs = append(allErrs, validateProbe(p, gracePeriod, fldPath)...)
		allErrs = append(allErrs, mustBeOne(p.SuccessThreshold, fldPath.Child("successThreshold"))...)
	}
	return allErrs
}

// mustBeOne: a liveness or startup probe succeeds on its first success; a
// higher threshold would only delay a restart decision.
func mustBeOne(v int32, fldPath *field.Path) field.ErrorList {
	if v != 1 {
		return field.ErrorList{field.Invalid(fldPath, v, "must be 1")}
	}
	return nil
}

func validateProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	h := handler{Exec: p.Exec, HTTPGet: p.HTTPGet, TCPSocket: p.TCPSocket, GRPC: p.GRPC}
	allErrs := validateHandler(h, gracePeriod, fldPath)
	allErrs = append(allErrs, validateNonnegative(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if t := p.TerminationGracePeriodSeconds; t != nil && *t <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *t, "must be greater than 0"))
	}
	return allErrs
}

// handler is what a probe and a lifecycle hook have in common: one way of
// checking on or talking to the container.
type handler struct {
	Exec      *corev1.ExecAction
	HTTPGet   *corev1.HTTPGetAction
	TCPSocket *corev1.TCPSocketAction
	GRPC      *corev1.GRPCAction
	Sleep     *corev1.SleepAction
}

func lifecycleHandler(h *corev1.LifecycleHandler) handler {
	return handler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket, Sleep: h.Sleep}
}

// validateHandler requires exactly one handler type; a second one is
// reported where it appears, in upstream's order.
func validateHandler(h handler, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	count := 0
	check := func(set bool, name string, validate func() field.ErrorList) {
		if !set {
			return
		}
		if count > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return
		}
		count++
		allErrs = append(allErrs, validate()...)
	}
	check(h.Exec != nil, "exec", func() field.ErrorList {
		if len(h.Exec.Command) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("exec", "command"), "")}
		}
		return nil
	})
	check(h.HTTPGet != nil, "httpGet", func() field.ErrorList { return validateHTTPGet(h.HTTPGet, fldPath.Child("httpGet")) })
	check(h.TCPSocket != nil, "tcpSocket", func() field.ErrorList {
		return validatePortNumOrName(h.TCPSocket.Port, fldPath.Child("tcpSocket", "port"))
	})
	check(h.GRPC != nil, "grpc", func() field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.GRPC.Port), fldPath.Child("grpc", "port"))
	})
	check(h.Sleep != nil, "sleep", func() field.ErrorList {
		// Zero is allowed since PodLifecycleSleepActionAllowZero went GA.
		if gracePeriod != nil && (h.Sleep.Seconds < 0 || h.Sleep.Seconds > *gracePeriod) {
			msg := fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod)
			return field.ErrorList{field.Invalid(fldPath.Child("sleep"), h.Sleep.Seconds, msg)}
		}
		return nil
	})
	if count == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a handler type"))
	}
	return allErrs
}

func validateHTTPGet(h *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if h.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	schemes := []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}
	if !slices.Contains(schemes, h.Scheme) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("scheme"), h.Scheme, schemes))
	}
	for _, header := range h.HTTPHeaders {
		allErrs = append(allErrs, invalidEach(fldPath.Child("httpHeaders"), header.Name, validation.IsHTTPHeaderName(header.Name))...)
	}
	return allErrs
}
