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
// [Anonymous] user. Upstream, with anonymous authentication on, sends it
// on to authorization like anyone else; klab's API server serves it only
// where the authorizer allows [Anonymous] (the paths everybody may read:
// /healthz, /livez, /readyz, /version, which the load balancer's health
// check uses) and answers 401 everywhere else, as kube-apiserver does
// when its AuthenticationConfiguration enables anonymous requests only on
// some paths (anonymous.conditions).
//
// Authorization answers "may this user do this?". [Authorizer] evaluates a
// fixed policy written as RBAC ClusterRoles and ClusterRoleBindings,
// modelled on kube-apiserver's bootstrap policy
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy), and matches rules
// exactly as the RBAC authorizer does. A request no rule allows gets 403
// Forbidden with upstream's message (see [ForbiddenMessage]). The policy:
//
//   - cluster-admin, bound to the group system:masters (the admin token of
//     the user's kubeconfig): every verb on every resource and every
//     non-resource URL.
//   - view, bound to the group klab:viewers (the klab-viewer token): get,
//     list and watch on every resource except secrets, plus GET on every
//     non-resource URL. Like upstream's view role it leaves out secrets
//     (reading them would hand out service account tokens, and with them
//     more power than "view") and RBAC's own roles and bindings. Unlike
//     upstream's view, which is meant to be bound inside one namespace, it
//     also reads cluster-scoped objects such as nodes, so a student can
//     watch the whole cluster read-only.
//   - system:kube-scheduler, system:kube-controller-manager,
//     system:node-proxier (user system:kube-proxy) and system:node (group
//     system:nodes): every verb on every resource. Upstream grants each
//     component only what it uses, and authorizes kubelets with the Node
//     authorizer; klab keeps one simple rule for its own components so
//     that a lesson about authorization is about users, not about
//     component permissions.
//   - system:basic-user and system:discovery, bound to
//     system:authenticated: create selfsubjectaccessreviews,
//     selfsubjectrulesreviews (kubectl auth can-i) and selfsubjectreviews
//     (kubectl auth whoami); GET on /api, /apis, /openapi, /version and the
//     health endpoints.
//   - system:public-info-viewer, bound to system:authenticated and
//     system:unauthenticated: GET on /healthz, /livez, /readyz and
//     /version.
package auth
