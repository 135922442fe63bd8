package openapi

import (
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// operationGroup is the group as it appears in operation IDs: "Core",
// "Apps", "RbacAuthorization" for rbac.authorization.k8s.io.
func operationGroup(group string) string {
	if group == "" {
		return "Core"
	}
	return camel(strings.TrimSuffix(group, ".k8s.io"), true)
}

// operationTag is the tag upstream gives a group-version's operations:
// "core_v1", "apps_v1", "rbacAuthorization_v1".
func operationTag(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "core_" + gv.Version
	}
	return camel(strings.TrimSuffix(gv.Group, ".k8s.io"), false) + "_" + gv.Version
}

// camel joins the letter and digit runs of s, capitalising each run but
// the first (which is capitalised only when upper is set).
func camel(s string, upper bool) string {
	var out strings.Builder
	capitalize := upper
	for i, r := range s {
		if !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			capitalize = true
			continue
		}
		if capitalize {
			r = unicode.ToUpper(r)
			capitalize = false
		}
		out.WriteRune(r)
	}
	return out.String()
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// opNames holds the pieces of upstream operation IDs, e.g.
// patch + AppsV1 + Namespaced + Deployment + Status.
type opNames struct {
	gv, scope, kind string
}

func (n opNames) scoped() string { return n.gv + n.scope + n.kind }
