package shell

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// newRoot is a container root with the files a pod has.
func newRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"etc", "tmp", "root"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "hosts"), []byte("127.0.0.1\tlocalhost\n10.1.2.3\tweb-0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func run(t *testing.T, cfg Config, stdin string, argv ...string) (string, string, int, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cfg.Stdout, cfg.Stderr = &out, &errOut
	if stdin != "" {
		cfg.Stdin = strings.NewReader(stdin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, err := Run(ctx, cfg, argv)
	return out.String(), errOut.String(), code, err
}

func TestRun(t *testing.T) {
	root := newRoot(t)
	cfg := Config{Root: root, Hostname: "web-0", Env: []string{"GREETING=hi"}}
	tests := []struct {
		name     string
		argv     []string
		stdin    string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{name: "ls root", argv: []string{"ls", "/"}, wantOut: "etc\nroot\ntmp\n"},
		{name: "echo through sh -c", argv: []string{"sh", "-c", "echo $GREETING $(hostname)"}, wantOut: "hi web-0\n"},
		{name: "exit code", argv: []string{"sh", "-c", "exit 3"}, wantCode: 3},
		{name: "not found in a shell", argv: []string{"sh", "-c", "nosuch"}, wantErr: "sh: nosuch: not found\n", wantCode: 127},
		{name: "pipes and files", argv: []string{"sh", "-c", "echo a > /tmp/f; echo b >> /tmp/f; cat /tmp/f | wc -l"}, wantOut: "2\n"},
		{name: "paths stay in the root", argv: []string{"cat", "/../../etc/hosts"}, wantOut: "127.0.0.1\tlocalhost\n10.1.2.3\tweb-0\n"},
		{name: "grep and head", argv: []string{"sh", "-c", "seq 1 20 | grep 1 | head -n 3"}, wantOut: "1\n10\n11\n"},
		{name: "stdin", argv: []string{"cat"}, stdin: "typed\n", wantOut: "typed\n"},
		{name: "script on stdin", argv: []string{"sh"}, stdin: "cd /tmp\npwd\n", wantOut: "/tmp\n"},
		{name: "test builtin", argv: []string{"test", "-d", "/tmp"}},
		{name: "missing file", argv: []string{"cat", "/nope"}, wantErr: "cat: /nope: No such file or directory\n", wantCode: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code, err := run(t, cfg, tc.stdin, tc.argv...)
			if err != nil {
				t.Fatal(err)
			}
			if out != tc.wantOut || errOut != tc.wantErr || code != tc.wantCode {
				t.Errorf("Run(%q) = %q, stderr %q, code %d; want %q, %q, %d", tc.argv, out, errOut, code, tc.wantOut, tc.wantErr, tc.wantCode)
			}
		})
	}
}

func TestRunUnknownProgram(t *testing.T) {
	_, _, _, err := run(t, Config{Root: newRoot(t)}, "", "nosuch", "arg")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

// TestTarRoundTrip copies a tree out and back in as kubectl cp does.
func TestTarRoundTrip(t *testing.T) {
	src := newRoot(t)
	cfg := Config{Root: src}
	if _, _, code, _ := run(t, cfg, "", "sh", "-c", "mkdir -p /tmp/d/e && echo one > /tmp/d/1 && echo two > /tmp/d/e/2"); code != 0 {
		t.Fatal("setup failed")
	}
	archive, errOut, code, err := run(t, cfg, "", "tar", "cf", "-", "/tmp/d")
	if err != nil || code != 0 {
		t.Fatalf("tar cf: %d %v %s", code, err, errOut)
	}
	dst := newRoot(t)
	if _, errOut, code, _ := run(t, Config{Root: dst}, archive, "tar", "--no-same-permissions", "--no-same-owner", "-xmf", "-", "-C", "/root"); code != 0 {
		t.Fatalf("tar x: %s", errOut)
	}
	got, _, _, _ := run(t, Config{Root: dst}, "", "cat", "/root/tmp/d/1", "/root/tmp/d/e/2")
	if got != "one\ntwo\n" {
		t.Errorf("extracted files hold %q", got)
	}
	// kubectl cp's retry reads from an offset.
	tailed, _, _, _ := run(t, cfg, "", "sh", "-c", "tar cf - '/tmp/d' | tail -c+513")
	if len(tailed) != len(archive)-512 {
		t.Errorf("tail -c+513 gave %d bytes of %d", len(tailed), len(archive))
	}
}

// TestInteractive types into the shell as a raw terminal does.
func TestInteractive(t *testing.T) {
	pr, pw := io.Pipe()
	var out syncBuffer
	done := make(chan int)
	go func() {
		code, _ := Run(context.Background(), Config{Root: newRoot(t), TTY: true, Stdin: pr, Stdout: &out}, []string{"sh"})
		done <- code
	}()
	io.WriteString(pw, "echo hell\x7flo\rexit 4\r")
	select {
	case code := <-done:
		if code != 4 {
			t.Errorf("exit code %d, want 4", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the shell did not exit; terminal shows %q", out.String())
	}
	// Keys are echoed as typed (the backspace rubs out), output lines
	// end in \r\n.
	if got := out.String(); !strings.Contains(got, "/ # ") || !strings.Contains(got, "echo hell\b \blo\r\n") || !strings.Contains(got, "hello\r\n") {
		t.Errorf("terminal shows %q", got)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestHTTPClients fetches from a server the way a pod's tools do: names
// from the pod's /etc/hosts, bodies to stdout or a file, curl's and
// wget's errors and exit codes.
func TestHTTPClients(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "hello "+r.Method+"\n")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	root := newRoot(t)
	if err := os.WriteFile(filepath.Join(root, "etc", "hosts"), []byte("127.0.0.1\tweb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	cfg := Config{Root: root}
	tests := []struct {
		name     string
		argv     []string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{name: "wget to stdout by a hosts name", argv: []string{"wget", "-qO-", "http://web:" + port + "/"}, wantOut: "hello GET\n"},
		{name: "wget to a file", argv: []string{"sh", "-c", "cd /tmp && wget -q web:" + port + "/page && cat page"}, wantOut: "hello GET\n"},
		{name: "wget of a missing page", argv: []string{"wget", "-q", "-O", "-", "http://web:" + port + "/missing"}, wantErr: "wget: server returned error: HTTP/1.1 404 Not Found\n", wantCode: 1},
		{name: "curl with a method", argv: []string{"curl", "-s", "-X", "PUT", "web:" + port}, wantOut: "hello PUT\n"},
		{name: "curl -f of a missing page", argv: []string{"curl", "-sf", "web:" + port + "/missing"}, wantCode: 22},
		{name: "curl to a closed port", argv: []string{"curl", "http://" + closedAddr + "/"}, wantErr: "curl: (7) Failed to connect to 127.0.0.1 port", wantCode: 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code, err := run(t, cfg, "", tc.argv...)
			if err != nil {
				t.Fatal(err)
			}
			if out != tc.wantOut || !strings.HasPrefix(errOut, tc.wantErr) || code != tc.wantCode {
				t.Errorf("%q = %q, stderr %q, code %d; want %q, %q, %d", tc.argv, out, errOut, code, tc.wantOut, tc.wantErr, tc.wantCode)
			}
		})
	}
}

// TestHTTPClientsTLS checks certificates as curl and busybox's wget do:
// curl refuses a server its roots do not vouch for, trusts the CA file
// --cacert names and skips the check with -k; wget checks nothing. Both
// send the headers they are given, as an in-pod client sends its token.
func TestHTTPClientsTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "auth="+r.Header.Get("Authorization")+"\n")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	root := newRoot(t)
	// httptest's certificate names example.com, and 127.0.0.1.
	if err := os.WriteFile(filepath.Join(root, "etc", "hosts"), []byte("127.0.0.1\texample.com other.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(root, "tmp", "ca.crt"), caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	good := "https://example.com:" + port + "/"
	cfg := Config{Root: root}
	tests := []struct {
		name     string
		argv     []string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{name: "curl without the CA", argv: []string{"curl", "-sS", good}, wantErr: "curl: (60) SSL certificate problem: unable to get local issuer certificate\n", wantCode: 60},
		{name: "curl with --cacert and a header", argv: []string{"curl", "-s", "--cacert", "/tmp/ca.crt", "-H", "Authorization: Bearer abc", good}, wantOut: "auth=Bearer abc\n"},
		{name: "curl with --cacert= to a name the certificate lacks", argv: []string{"curl", "-sS", "--cacert=/tmp/ca.crt", "https://other.test:" + port + "/"}, wantErr: "curl: (60) SSL: no alternative certificate subject name matches target host name 'other.test'\n", wantCode: 60},
		{name: "curl -k", argv: []string{"curl", "-sk", "https://other.test:" + port + "/"}, wantOut: "auth=\n"},
		{name: "curl with a missing CA file", argv: []string{"curl", "-sS", "--cacert", "/tmp/none.crt", good}, wantErr: "curl: (77) error setting certificate file: /tmp/none.crt\n", wantCode: 77},
		{name: "wget checks nothing and sends --header", argv: []string{"wget", "-qO-", "--no-check-certificate", "--header", "Authorization: Bearer xyz", "https://other.test:" + port + "/"}, wantOut: "auth=Bearer xyz\n"},
		{name: "wget --header=", argv: []string{"wget", "-q", "--header=Authorization: Bearer q", "--output-document=-", good}, wantOut: "auth=Bearer q\n"},
		{name: "wget with an unknown long option", argv: []string{"wget", "--frobnicate", good}, wantErr: "wget: unrecognized option '--frobnicate'\n", wantCode: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code, err := run(t, cfg, "", tc.argv...)
			if err != nil {
				t.Fatal(err)
			}
			if out != tc.wantOut || errOut != tc.wantErr || code != tc.wantCode {
				t.Errorf("%q = %q, stderr %q, code %d; want %q, %q, %d", tc.argv, out, errOut, code, tc.wantOut, tc.wantErr, tc.wantCode)
			}
		})
	}
}
