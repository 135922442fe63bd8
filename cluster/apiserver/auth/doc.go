// Package auth holds the two checks the API server makes before it serves a
// request, in the order kube-apiserver makes them.
//
// Authentication answers "who is this?". klab uses kube-apiserver's static
// token file (--token-auth-file): a request carries "Authorization: Bearer
// <token>", the token is looked up in tokens.csv, and the request gets a
// [User] with a name, a UID and groups. Every authenticated user is also in
// the group system:authenticated. A request whose token is unknown is
// rejected by the caller with 401 Unauthorized and never reaches the next
// step. A request with no token at all (see [BearerToken]) is the
// [Anonymous] user, served only where the policy allows it (the public
// health and version paths) and answered 401 everywhere else, as
// kube-apiserver does when its AuthenticationConfiguration enables
// anonymous requests only on some paths. klab's components authenticate as
// their upstream identities: system:kube-scheduler,
// system:kube-controller-manager, system:kube-proxy, and
// system:node:<name> in the group system:nodes.
//
// Authorization answers "may this user do this?", as kube-apiserver does
// with --authorization-mode=Node,RBAC. The [NodeAuthorizer] decides first,
// and only for kubelets (system:node:<name> in system:nodes): each reads
// only the secrets, configmaps and claims of the pods bound to its node
// and asks tokens only for their service accounts, following a graph of
// pods kept from the API server's watch ([NodeGraph]); the rest of what a
// kubelet may do is system:node's rules ([NodeRules]). [Authorizer] is the
// RBAC authorizer behind it: it decides from the Roles, ClusterRoles,
// RoleBindings and ClusterRoleBindings stored in the cluster, which the
// API server feeds it from its watch cache, with upstream's matching rules
// ([RuleAllows]) and upstream's reasons. Nothing denies; a request neither
// allows gets 403 Forbidden with upstream's message ([ForbiddenMessage])
// and their reasons.
//
// The default policy ([ClusterRoles], [ClusterRoleBindings], [Roles],
// [RoleBindings]) is upstream's bootstrap policy
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy), which every API server
// reconciles into etcd at start: cluster-admin for system:masters (the
// admin kubeconfig), admin, edit and view gathered from the
// aggregate-to-* roles, discovery and basic-user for every signed-in user,
// public-info-viewer for everybody, each component's system: role, and
// system:node bound to nobody, as upstream (the Node authorizer applies it).
// Where klab departs from it, the definition says so:
//
//   - The controller manager runs its controllers with its own
//     credentials (upstream's --use-service-account-credentials=false), so
//     its user is a subject of every system:controller:* binding beside
//     the controller's service account, as upstream requires for that mode.
//   - kube-proxy watches its ConfigMap, so kubeadm's kube-proxy Role in
//     kube-system reads ConfigMaps there, and is bound to its user.
//   - klab-viewers binds view to klab:viewers (the klab-viewer token) and
//     to the user klab-viewer (so that --as=klab-viewer is answered alike), and
//     klab:scheduler-explanations lets the scheduler annotate the pods it
//     cannot place.
//
// Writing roles and bindings is guarded against escalation
// ([Authorizer.ConfirmNoEscalation]): nobody grants what they do not hold
// unless they may escalate or bind. Impersonation headers are authorized by
// the impersonate verb in the API server's handler.
package auth
