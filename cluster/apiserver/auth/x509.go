package auth

import (
	"crypto/x509"
	"slices"
)

// X509User returns the user of a verified client certificate chain, as
// kube-apiserver's x509 authenticator (--client-ca-file) reads it: the
// leaf's common name is the user name, its organizations the groups, and
// the user is in system:authenticated. A certificate without a common
// name identifies nobody.
func X509User(chains [][]*x509.Certificate) (User, bool) {
	if len(chains) == 0 || len(chains[0]) == 0 {
		return User{}, false
	}
	leaf := chains[0][0]
	if leaf.Subject.CommonName == "" {
		return User{}, false
	}
	groups := slices.Clone(leaf.Subject.Organization)
	if !slices.Contains(groups, AllAuthenticated) {
		groups = append(groups, AllAuthenticated)
	}
	return User{Name: leaf.Subject.CommonName, Groups: groups}, true
}
