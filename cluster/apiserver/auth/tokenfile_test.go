package auth

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeTokenFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadTokenFile(t *testing.T) {
	path := writeTokenFile(t, `t-admin,kubernetes-admin,uid-1,"system:masters"

t-viewer,klab-viewer,uid-2,"klab:viewers,team:a"
t-sched,system:kube-scheduler,uid-3
t-empty-groups,someone,uid-4,
t-extra,extra,uid-5,g1,ignored
`)
	got, err := ReadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []TokenEntry{
		{Token: "t-admin", User: User{Name: "kubernetes-admin", UID: "uid-1", Groups: []string{"system:masters"}}},
		{Token: "t-viewer", User: User{Name: "klab-viewer", UID: "uid-2", Groups: []string{"klab:viewers", "team:a"}}},
		{Token: "t-sched", User: User{Name: "system:kube-scheduler", UID: "uid-3"}},
		{Token: "t-empty-groups", User: User{Name: "someone", UID: "uid-4"}},
		{Token: "t-extra", User: User{Name: "extra", UID: "uid-5", Groups: []string{"g1"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadTokenFile:\n got %+v\nwant %+v", got, want)
	}
}

func TestReadTokenFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		// wantErr is the error after the file's path.
		wantErr string
	}{
		{
			name:    "too few columns",
			content: "t1,alice,uid-1\nt2,bob\n",
			wantErr: ":2: token file must have at least 3 columns (token, user name, user uid), found 2",
		},
		{
			name:    "empty token",
			content: "t1,alice,uid-1\n\n,bob,uid-2\n",
			wantErr: ":3: empty token",
		},
		{
			name:    "empty user name",
			content: "t1,,uid-1\n",
			wantErr: ":1: empty user name",
		},
		{
			name:    "duplicate token",
			content: "t1,alice,uid-1\nt2,bob,uid-2\nt1,carol,uid-3\n",
			wantErr: ":3: duplicate token (first on line 1)",
		},
		{
			name:    "bare quote",
			content: "t1,alice,uid-1\nt2,bo\"b,uid-2\n",
			wantErr: `:2: bare " in non-quoted-field`,
		},
		{
			name:    "unterminated quote",
			content: "t1,alice,uid-1,\"g1,g2\n",
			wantErr: `:1: extraneous or missing " in quoted-field`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTokenFile(t, tt.content)
			_, err := LoadTokenFile(path)
			if err == nil {
				t.Fatalf("LoadTokenFile succeeded, want error %q", tt.wantErr)
			}
			if want := path + tt.wantErr; err.Error() != want {
				t.Errorf("error:\n got %q\nwant %q", err, want)
			}
		})
	}
}

func TestLoadTokenFileMissing(t *testing.T) {
	_, err := LoadTokenFile(filepath.Join(t.TempDir(), "nope.csv"))
	if err == nil || !strings.Contains(err.Error(), "nope.csv") {
		t.Fatalf("error = %v, want one naming the missing file", err)
	}
}

func TestMarshalTokenFile(t *testing.T) {
	entries := []TokenEntry{
		{Token: "t-admin", User: User{Name: "kubernetes-admin", UID: "uid-1", Groups: []string{"system:masters"}}},
		{Token: "t-viewer", User: User{Name: "klab-viewer", UID: "uid-2", Groups: []string{"klab:viewers", "team:a"}}},
		{Token: "t-sched", User: User{Name: "system:kube-scheduler", UID: "uid-3"}},
	}
	got, err := MarshalTokenFile(entries)
	if err != nil {
		t.Fatal(err)
	}
	want := "t-admin,kubernetes-admin,uid-1,system:masters\n" +
		"t-viewer,klab-viewer,uid-2,\"klab:viewers,team:a\"\n" +
		"t-sched,system:kube-scheduler,uid-3\n"
	if string(got) != want {
		t.Errorf("MarshalTokenFile:\n got %q\nwant %q", got, want)
	}
	back, err := parseTokenFile("tokens.csv", got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, entries) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, entries)
	}
}

func TestMarshalTokenFileRejects(t *testing.T) {
	tests := []struct {
		name  string
		entry TokenEntry
	}{
		{"empty token", TokenEntry{User: User{Name: "alice"}}},
		{"empty name", TokenEntry{Token: "t"}},
		{"comma in group", TokenEntry{Token: "t", User: User{Name: "alice", Groups: []string{"a,b"}}}},
		{"empty group", TokenEntry{Token: "t", User: User{Name: "alice", Groups: []string{""}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := MarshalTokenFile([]TokenEntry{tt.entry}); err == nil {
				t.Error("MarshalTokenFile succeeded, want an error")
			}
		})
	}
}

func TestAuthenticateRequest(t *testing.T) {
	a := NewTokenAuthenticator([]TokenEntry{
		{Token: "good", User: User{Name: "klab-viewer", UID: "uid-2", Groups: []string{"klab:viewers"}}},
		{Token: "already", User: User{Name: "bob", Groups: []string{AllAuthenticated}}},
	})
	viewer := User{Name: "klab-viewer", UID: "uid-2", Groups: []string{"klab:viewers", AllAuthenticated}}
	tests := []struct {
		name   string
		header string
		want   User
		wantOK bool
	}{
		{name: "no header"},
		{name: "bearer", header: "Bearer good", want: viewer, wantOK: true},
		{name: "scheme is case-insensitive", header: "bearer good", want: viewer, wantOK: true},
		{name: "surrounding spaces", header: "  Bearer good  ", want: viewer, wantOK: true},
		{name: "unknown token", header: "Bearer bad"},
		{name: "basic auth", header: "Basic Z29vZA=="},
		{name: "empty token", header: "Bearer "},
		{name: "space before token", header: "Bearer  good"},
		{name: "group not added twice", header: "Bearer already", want: User{Name: "bob", Groups: []string{AllAuthenticated}}, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443/api", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			got, ok := a.AuthenticateRequest(r)
			if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("AuthenticateRequest = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestAuthenticateDoesNotShareGroups(t *testing.T) {
	a := NewTokenAuthenticator([]TokenEntry{{Token: "t", User: User{Name: "alice", Groups: []string{"g"}}}})
	u, _ := a.AuthenticateToken("t")
	u.Groups[0] = "system:masters"
	again, _ := a.AuthenticateToken("t")
	if again.Groups[0] != "g" {
		t.Fatalf("changing a returned user changed the table: groups %v", again.Groups)
	}
}
