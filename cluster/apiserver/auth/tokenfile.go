package auth

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// TokenEntry is one line of a token file: a bearer token and the user it
// stands for.
type TokenEntry struct {
	Token string
	User  User
}

// ReadTokenFile reads a token file in kube-apiserver's --token-auth-file
// format: one CSV record per user, token,user,uid and optionally a fourth
// column of comma-separated groups (quoted, since it holds commas):
//
//	31ada4fd...,kubernetes-admin,2f7e...,"system:masters"
//
// Blank lines are skipped and columns past the fourth are ignored, as
// upstream does. Upstream only warns about an empty token or a token used
// twice and carries on; klab writes this file itself, so either means the
// file was damaged and is an error here. Errors name the file and line.
func ReadTokenFile(path string) ([]TokenEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	return parseTokenFile(path, data)
}

func parseTokenFile(path string, data []byte) ([]TokenEntry, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1 // records may have 3 or 4 columns
	var entries []TokenEntry
	seen := make(map[string]int) // token -> line
	for {
		record, err := r.Read()
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				// Name the line the broken record starts on: that is where
				// an unterminated quote is to be fixed.
				return nil, fmt.Errorf("%s:%d: %w", path, pe.StartLine, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if len(record) < 3 {
			return nil, fmt.Errorf("%s:%d: token file must have at least 3 columns (token, user name, user uid), found %d", path, line, len(record))
		}
		token, name, uid := record[0], record[1], record[2]
		switch {
		case token == "":
			return nil, fmt.Errorf("%s:%d: empty token", path, line)
		case name == "":
			return nil, fmt.Errorf("%s:%d: empty user name", path, line)
		}
		if first, dup := seen[token]; dup {
			return nil, fmt.Errorf("%s:%d: duplicate token (first on line %d)", path, line, first)
		}
		seen[token] = line
		u := User{Name: name, UID: uid}
		if len(record) >= 4 {
			for g := range strings.SplitSeq(record[3], ",") {
				if g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		entries = append(entries, TokenEntry{Token: token, User: u})
	}
}

// MarshalTokenFile renders entries in the format [ReadTokenFile] reads.
func MarshalTokenFile(entries []TokenEntry) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	for _, e := range entries {
		if e.Token == "" || e.User.Name == "" {
			return nil, fmt.Errorf("token file entry %q: token and user name must not be empty", e.User.Name)
		}
		record := []string{e.Token, e.User.Name, e.User.UID}
		if len(e.User.Groups) > 0 {
			for _, g := range e.User.Groups {
				if g == "" || strings.Contains(g, ",") {
					return nil, fmt.Errorf("token file entry %q: bad group name %q", e.User.Name, g)
				}
			}
			record = append(record, strings.Join(e.User.Groups, ","))
		}
		if err := w.Write(record); err != nil {
			return nil, fmt.Errorf("encode token file: %w", err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("encode token file: %w", err)
	}
	return buf.Bytes(), nil
}

// TokenAuthenticator authenticates requests by their bearer token, as
// kube-apiserver's token file authenticator does.
type TokenAuthenticator struct {
	users map[string]User // token -> user
}

// LoadTokenFile reads a token file (see [ReadTokenFile]) into a
// TokenAuthenticator.
func LoadTokenFile(path string) (*TokenAuthenticator, error) {
	entries, err := ReadTokenFile(path)
	if err != nil {
		return nil, err
	}
	return NewTokenAuthenticator(entries), nil
}

// NewTokenAuthenticator returns a TokenAuthenticator for entries. When a
// token appears twice the later entry wins, as in upstream.
func NewTokenAuthenticator(entries []TokenEntry) *TokenAuthenticator {
	a := &TokenAuthenticator{users: make(map[string]User, len(entries))}
	for _, e := range entries {
		a.users[e.Token] = e.User
	}
	return a
}

// AuthenticateRequest returns the user whose token the request carries in
// "Authorization: Bearer <token>". The user's groups get
// system:authenticated added. It returns false when the request has no
// bearer token and when the token is unknown; a caller that needs to tell
// the two apart (anonymous requests may read /healthz, a wrong token may
// not) uses [BearerToken].
func (a *TokenAuthenticator) AuthenticateRequest(r *http.Request) (User, bool) {
	token, ok := BearerToken(r)
	if !ok {
		return User{}, false
	}
	return a.AuthenticateToken(token)
}

// AuthenticateToken returns the user token stands for.
func (a *TokenAuthenticator) AuthenticateToken(token string) (User, bool) {
	u, ok := a.users[token]
	if !ok {
		return User{}, false
	}
	// Copy the groups so a caller cannot change the table through them.
	groups := make([]string, 0, len(u.Groups)+1)
	groups = append(groups, u.Groups...)
	if !u.InGroup(AllAuthenticated) {
		groups = append(groups, AllAuthenticated)
	}
	u.Groups = groups
	return u, true
}

// BearerToken returns the token of the request's "Authorization: Bearer
// <token>" header. It parses the header as upstream's bearer token
// authenticator does: the scheme is case-insensitive, and an empty token
// counts as none.
func BearerToken(r *http.Request) (string, bool) {
	header := strings.TrimSpace(r.Header.Get("Authorization"))
	if header == "" {
		return "", false
	}
	parts := strings.SplitN(header, " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") {
		return "", false
	}
	if parts[1] == "" {
		return "", false
	}
	return parts[1], true
}
