package app

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestStandInConfig(t *testing.T) {
	tests := []struct {
		args     []string
		env      map[string]string
		wantPort int
		wantErr  string
	}{
		{args: []string{"--stand-in=nginx"}, wantPort: 80},
		{args: []string{"--stand-in=httpd", "--port=8081"}, wantPort: 8081},
		{args: []string{"--stand-in=nginx"}, env: map[string]string{"PORT": "9090"}, wantPort: 9090},
		{env: map[string]string{"STAND_IN": "httpd"}, wantPort: 80},
		{args: []string{"--stand-in=busybox"}, wantErr: `invalid stand-in "busybox"`},
		{args: []string{"--stand-in=redis"}, wantErr: `invalid stand-in "redis"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cfg, err := parseConfig(tt.args, tt.env, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.port != tt.wantPort {
				t.Errorf("port %d, want %d", cfg.port, tt.wantPort)
			}
		})
	}
}

func TestWelcomePage(t *testing.T) {
	ts := newTestServer(t, "--stand-in=httpd")
	code, body := ts.do("GET", "/")
	if code != http.StatusOK || !strings.Contains(body, "<h1>Welcome to httpd!</h1>") || !strings.Contains(body, "klab's stand-in for the httpd image") {
		t.Errorf("GET / = %d:\n%s", code, body)
	}
	if code, _ := ts.do("GET", "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz = %d: a stand-in still answers probes", code)
	}
	if code, _ := ts.do("GET", "/missing"); code != http.StatusNotFound {
		t.Errorf("GET /missing = %d, want 404", code)
	}
}
