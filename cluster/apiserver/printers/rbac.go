package printers

import (
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Roles print NAME CREATED AT, a timestamp rather than an age, as upstream's
// role printers do.
var roleColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Created At", "date", objectMetaDoc["creationTimestamp"]),
}

// Bindings print NAME ROLE AGE, and with -o wide who they bind.
var roleBindingColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Role", "string", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
	ageColumn,
	wide("Users", "string", "Users in the roleBinding"),
	wide("Groups", "string", "Groups in the roleBinding"),
	wide("ServiceAccounts", "string", "ServiceAccounts in the roleBinding"),
}

func printRole(r *rbacv1.Role, _ time.Time) metav1.TableRow {
	return cells(r.Name, r.CreationTimestamp.UTC().Format(time.RFC3339))
}

func printClusterRole(r *rbacv1.ClusterRole, _ time.Time) metav1.TableRow {
	return cells(r.Name, r.CreationTimestamp.UTC().Format(time.RFC3339))
}

func printRoleBinding(b *rbacv1.RoleBinding, now time.Time) metav1.TableRow {
	users, groups, sas := subjectCells(b.Subjects)
	return cells(b.Name, b.RoleRef.Kind+"/"+b.RoleRef.Name, age(b.CreationTimestamp, now), users, groups, sas)
}

func printClusterRoleBinding(b *rbacv1.ClusterRoleBinding, now time.Time) metav1.TableRow {
	users, groups, sas := subjectCells(b.Subjects)
	return cells(b.Name, b.RoleRef.Kind+"/"+b.RoleRef.Name, age(b.CreationTimestamp, now), users, groups, sas)
}

// subjectCells splits subjects by kind, each list joined by ", ", a service
// account written namespace/name.
func subjectCells(subjects []rbacv1.Subject) (users, groups, serviceAccounts string) {
	var u, g, sa []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			u = append(u, s.Name)
		case rbacv1.GroupKind:
			g = append(g, s.Name)
		case rbacv1.ServiceAccountKind:
			sa = append(sa, s.Namespace+"/"+s.Name)
		}
	}
	return strings.Join(u, ", "), strings.Join(g, ", "), strings.Join(sa, ", ")
}
