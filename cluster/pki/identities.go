package pki

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// Identity is one bearer-token user of tokens.csv.
type Identity struct {
	Name   string
	UID    string
	Groups []string
	Token  string
}

// tokenBytes is the length of a token before hex encoding.
const tokenBytes = 32

// wantedIdentities lists the users of tokens.csv, without tokens: klab's
// own users, the admin and the viewer. The components authenticate with
// client certificates of their own (see [PKI.EnsureComponentCredentials]),
// so that the token file, which the API server alone holds, grants
// nothing to a component that is not its own. nodes are only checked, for
// the names of the kubelets' certificates.
func wantedIdentities(nodes []string) ([]Identity, error) {
	ids := []Identity{
		{Name: auth.AdminUser, Groups: []string{auth.SystemPrivilegedGroup}},
		{Name: auth.ViewerUser, Groups: []string{auth.ViewersGroup}},
	}
	seen := make(map[string]bool)
	for _, node := range nodes {
		if node == "" || strings.ContainsAny(node, ",\"\r\n/") {
			return nil, fmt.Errorf("bad node name %q", node)
		}
		if seen[node] {
			return nil, fmt.Errorf("node %q given twice", node)
		}
		seen[node] = true
	}
	return ids, nil
}

// ClientIdentity returns the identity of a klab component's user name
// (auth.KubeScheduler, auth.NodeUser("worker-1"), ...) as its client
// certificate carries it; ok is false for a name that is no component's.
func ClientIdentity(user string) (id ComponentIdentity, ok bool) {
	switch {
	case user == auth.KubeScheduler, user == auth.KubeProxy:
		return ComponentIdentity{User: user}, true
	case user == auth.KubeControllerManager:
		return ComponentIdentity{User: user, WithCAKey: true}, true
	case user == auth.CoreDNS:
		return ComponentIdentity{User: user, Groups: []string{auth.ServiceAccountsGroup, auth.ServiceAccountsGroup + ":kube-system"}}, true
	case strings.HasPrefix(user, auth.NodeUserPrefix) && len(user) > len(auth.NodeUserPrefix):
		return ComponentIdentity{User: user, Groups: []string{auth.NodesGroup}}, true
	}
	return ComponentIdentity{}, false
}

// ensureTokens gives each wanted identity the token and UID it already has
// in tokens.csv, or new ones, and writes the file if that changed it. A
// tokens.csv that cannot be read is an error: replacing it would lock out
// every kubeconfig and component that holds a token from it.
func (p *PKI) ensureTokens(wanted []Identity) error {
	path := p.path(TokenFile)
	existing, err := readIdentities(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	byName := make(map[string]Identity, len(existing))
	for _, id := range existing {
		if _, dup := byName[id.Name]; !dup {
			byName[id.Name] = id
		}
	}
	ids := make([]Identity, 0, len(wanted))
	for _, w := range wanted {
		if old, ok := byName[w.Name]; ok {
			w.Token, w.UID = old.Token, old.UID
		} else {
			if w.Token, err = newToken(); err != nil {
				return err
			}
			if w.UID, err = newUID(); err != nil {
				return err
			}
		}
		ids = append(ids, w)
	}
	entries := make([]auth.TokenEntry, len(ids))
	for i, id := range ids {
		entries[i] = auth.TokenEntry{Token: id.Token, User: auth.User{Name: id.Name, UID: id.UID, Groups: id.Groups}}
	}
	data, err := auth.MarshalTokenFile(entries)
	if err != nil {
		return err
	}
	if err := writeIfChanged(path, data, 0o600); err != nil {
		return err
	}
	p.Identities = ids
	return nil
}

// readIdentities reads tokens.csv; a missing file is fs.ErrNotExist.
func readIdentities(path string) ([]Identity, error) {
	entries, err := auth.ReadTokenFile(path)
	if err != nil {
		return nil, err
	}
	ids := make([]Identity, len(entries))
	for i, e := range entries {
		ids[i] = Identity{Name: e.User.Name, UID: e.User.UID, Groups: e.User.Groups, Token: e.Token}
	}
	return ids, nil
}

// Token returns the bearer token of the user called name, for example
// auth.AdminUser or auth.NodeUser("worker-1").
func (p *PKI) Token(name string) (string, bool) {
	i := slices.IndexFunc(p.Identities, func(id Identity) bool { return id.Name == name })
	if i < 0 {
		return "", false
	}
	return p.Identities[i].Token, true
}

func newToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// newUID returns a random (version 4) UUID, the form Kubernetes uses for
// UIDs.
func newUID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate uid: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], nil
}
