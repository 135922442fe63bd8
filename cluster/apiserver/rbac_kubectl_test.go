package apiserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestKubectlRBAC walks the CKA's RBAC path with the real kubectl: a Role
// and a RoleBinding for jane made with kubectl create, then kubectl auth
// can-i and kubectl itself as jane through impersonation, and the
// escalation check when jane binds more than she holds.
func TestKubectlRBAC(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 3*testTimeout)
	k := newKubectl(t, c, auth.AdminUser)
	viewer := newKubectl(t, c, auth.ViewerUser)

	// fails runs kubectl, expects exit 1 and want in its error output.
	fails := func(t *testing.T, who *kubectlUser, want string, args ...string) {
		t.Helper()
		res := who.run(ctx, t, nil, args...)
		if res.code != 1 || !strings.Contains(res.stderr, want) {
			t.Errorf("kubectl %s: exit %d\nstderr %q\nwant 1 and %q", strings.Join(args, " "), res.code, res.stderr, want)
		}
	}
	canI := func(t *testing.T, want string, args ...string) {
		t.Helper()
		res := k.run(ctx, t, nil, append([]string{"auth", "can-i"}, args...)...)
		wantCode := 0
		if want == "no" {
			wantCode = 1
		}
		if res.code != wantCode || strings.TrimSpace(res.stdout) != want {
			t.Errorf("kubectl auth can-i %s: exit %d stdout %q stderr %q; want %s", strings.Join(args, " "), res.code, res.stdout, res.stderr, want)
		}
	}

	k.ok(ctx, t, "create", "namespace", "dev")
	t.Run("create role and rolebinding", func(t *testing.T) {
		wantLines(t, "create role", k.ok(ctx, t, "create", "role", "pod-reader", "--verb=get,list", "--resource=pods", "-n", "dev"),
			"role.rbac.authorization.k8s.io/pod-reader created")
		wantLines(t, "create rolebinding", k.ok(ctx, t, "create", "rolebinding", "read-pods", "--role=pod-reader", "--user=jane", "-n", "dev"),
			"rolebinding.rbac.authorization.k8s.io/read-pods created")
		wantLines(t, "create clusterrole", k.ok(ctx, t, "create", "clusterrole", "node-reader", "--verb=get,list,watch", "--resource=nodes"),
			"clusterrole.rbac.authorization.k8s.io/node-reader created")
		wantLines(t, "create clusterrolebinding", k.ok(ctx, t, "create", "clusterrolebinding", "read-nodes", "--clusterrole=node-reader", "--group=ops"),
			"clusterrolebinding.rbac.authorization.k8s.io/read-nodes created")

		tables := parseTables(k.ok(ctx, t, "get", "roles", "-n", "dev"))
		if len(tables) != 1 || strings.Join(tables[0].header, "|") != "NAME|CREATED AT" || tables[0].row("pod-reader") == nil {
			t.Errorf("kubectl get roles printed %+v; want NAME, CREATED AT and pod-reader", tables)
		}
		tables = parseTables(k.ok(ctx, t, "get", "rolebindings", "-n", "dev", "-o", "wide"))
		if len(tables) != 1 {
			t.Fatalf("kubectl get rolebindings -o wide printed %+v", tables)
		}
		tb := tables[0]
		if got := strings.Join(tb.header, "|"); got != "NAME|ROLE|AGE|USERS|GROUPS|SERVICEACCOUNTS" {
			t.Errorf("rolebinding columns %s", got)
		}
		r := tb.row("read-pods")
		if tb.column(r, "ROLE") != "Role/pod-reader" || tb.column(r, "USERS") != "jane" {
			t.Errorf("rolebinding row %v; want Role/pod-reader and jane", r)
		}
		// The defaults are stored objects like any other.
		out := k.ok(ctx, t, "get", "clusterrolebinding", "cluster-admin", "-o", "wide")
		wantMatch(t, "get clusterrolebinding cluster-admin", out, `(?m)^cluster-admin\s+ClusterRole/cluster-admin\s+\S+\s+system:masters\s*$`)
	})

	t.Run("validation", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(bad, []byte(badRoleBinding), 0o644); err != nil {
			t.Fatal(err)
		}
		fails(t, k, `The RoleBinding "bad" is invalid: roleRef.kind: Unsupported value: "Deployment": supported values: "Role", "ClusterRole"`,
			"create", "-f", bad, "-n", "dev")
		res := k.run(ctx, t, nil, "create", "role", "url-role", "--verb=get", "--non-resource-url=/healthz", "-n", "dev")
		if res.code == 0 {
			t.Errorf("a Role with a non-resource URL was created")
		}
	})

	t.Run("auth can-i as jane", func(t *testing.T) {
		canI(t, "yes", "get", "pods", "-n", "dev", "--as=jane")
		canI(t, "yes", "list", "pods", "-n", "dev", "--as=jane")
		canI(t, "no", "delete", "pods", "-n", "dev", "--as=jane")
		canI(t, "no", "get", "pods", "-n", "default", "--as=jane")
		canI(t, "no", "get", "pods", "--all-namespaces", "--as=jane")
		canI(t, "yes", "list", "nodes", "--as=jane", "--as-group=ops")
		canI(t, "no", "list", "nodes", "--as=jane")
		out := k.ok(ctx, t, "auth", "can-i", "--list", "-n", "dev", "--as=jane")
		if !strings.Contains(out, "pods ") || !strings.Contains(out, "[get list]") {
			t.Errorf("auth can-i --list as jane:\n%s\nwant the pods rule with [get list]", out)
		}
	})

	t.Run("kubectl as jane", func(t *testing.T) {
		k.ok(ctx, t, "get", "pods", "-n", "dev", "--as=jane")
		fails(t, k, `Error from server (Forbidden): pods "web" is forbidden: User "jane" cannot delete resource "pods" in API group "" in the namespace "dev"`,
			"delete", "pod", "web", "-n", "dev", "--as=jane")
		fails(t, k, `Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"`,
			"get", "pods", "-n", "default", "--as=jane")
		out := k.ok(ctx, t, "auth", "whoami", "--as=jane", "--as-group=ops")
		if !strings.Contains(out, "jane") || !strings.Contains(out, "[ops system:authenticated]") {
			t.Errorf("auth whoami as jane:\n%s", out)
		}
	})

	t.Run("impersonation needs the impersonate verb", func(t *testing.T) {
		// Discovery first, as the viewer herself, so that the forbidden
		// request is the one for pods (a 403 on discovery reads "unknown").
		viewer.ok(ctx, t, "get", "pods", "-n", "dev")
		fails(t, viewer, `users "jane" is forbidden: User "klab-viewer" cannot impersonate resource "users" in API group "" at the cluster scope`,
			"get", "pods", "-n", "dev", "--as=jane")
	})

	t.Run("escalation", func(t *testing.T) {
		k.ok(ctx, t, "create", "role", "binder", "--verb=create,get", "--resource=rolebindings.rbac.authorization.k8s.io", "-n", "dev")
		k.ok(ctx, t, "create", "rolebinding", "jane-binds", "--role=binder", "--user=jane", "-n", "dev")
		k.ok(ctx, t, "create", "role", "pod-deleter", "--verb=delete", "--resource=pods", "-n", "dev")
		fails(t, k, `rolebindings.rbac.authorization.k8s.io "jane-deletes" is forbidden: user "jane" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}`,
			"create", "rolebinding", "jane-deletes", "--role=pod-deleter", "--user=jane", "-n", "dev", "--as=jane")
		// What she holds she may pass on.
		k.ok(ctx, t, "create", "rolebinding", "bob-reads", "--role=pod-reader", "--user=bob", "-n", "dev", "--as=jane")
		// With the bind verb on that role, she may bind it.
		k.ok(ctx, t, "create", "role", "deleter-binder", "--verb=bind", "--resource=roles.rbac.authorization.k8s.io", "--resource-name=pod-deleter", "-n", "dev")
		k.ok(ctx, t, "create", "rolebinding", "jane-binds-deleter", "--role=deleter-binder", "--user=jane", "-n", "dev")
		k.ok(ctx, t, "create", "rolebinding", "bob-deletes", "--role=pod-deleter", "--user=bob", "-n", "dev", "--as=jane")
	})

	t.Run("a deleted binding takes its rights along", func(t *testing.T) {
		k.ok(ctx, t, "delete", "rolebinding", "read-pods", "-n", "dev")
		canI(t, "no", "get", "pods", "-n", "dev", "--as=jane")
	})
}

const badRoleBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: bad
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Deployment
  name: web
subjects:
- kind: User
  apiGroup: rbac.authorization.k8s.io
  name: jane
`
