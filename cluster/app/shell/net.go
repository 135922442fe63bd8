package shell

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// resolvConf is what the shell's /etc/resolv.conf says.
type resolvConf struct {
	nameservers []string
	search      []string
	ndots       int
}

func (t *tool) resolvConf() resolvConf {
	rc := resolvConf{ndots: 1}
	data, err := os.ReadFile(t.s.view.host("/etc/resolv.conf"))
	if err != nil {
		return rc
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "nameserver":
			rc.nameservers = append(rc.nameservers, f[1])
		case "search":
			rc.search = f[1:]
		case "options":
			for _, o := range f[1:] {
				if v, ok := strings.CutPrefix(o, "ndots:"); ok {
					if n, err := strconv.Atoi(v); err == nil {
						rc.ndots = n
					}
				}
			}
		}
	}
	return rc
}

// hostsFile looks name up in the shell's /etc/hosts.
func (t *tool) hostsFile(name string) []string {
	data, err := os.ReadFile(t.s.view.host("/etc/hosts"))
	if err != nil {
		return nil
	}
	var addrs []string
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		for _, n := range f[min(1, len(f)):] {
			if strings.EqualFold(n, name) {
				addrs = append(addrs, f[0])
			}
		}
	}
	return addrs
}

func (t *tool) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if t.s.cfg.Dial != nil {
		return t.s.cfg.Dial(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// errNXDomain is a name no nameserver knows.
var errNXDomain = errors.New("NXDOMAIN")

// lookup resolves a host name as the pod's resolver would: /etc/hosts,
// then the nameservers of /etc/resolv.conf with its search list and
// ndots. It returns the name that answered.
func (t *tool) lookup(ctx context.Context, host string) (string, []string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return host, []string{host}, nil
	}
	if addrs := t.hostsFile(host); len(addrs) > 0 {
		return host, addrs, nil
	}
	rc := t.resolvConf()
	if len(rc.nameservers) == 0 {
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		return host, addrs, err
	}
	candidates := searchNames(host, rc)
	server := net.JoinHostPort(rc.nameservers[0], "53")
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return t.dial(ctx, network, server)
	}}
	var lastErr error = errNXDomain
	for _, name := range candidates {
		addrs, err := resolver.LookupHost(ctx, name)
		if err == nil && len(addrs) > 0 {
			return strings.TrimSuffix(name, "."), addrs, nil
		}
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			continue
		}
		lastErr = err
	}
	return host, nil, lastErr
}

// httpClient is an HTTP client that resolves names as the pod does. A nil
// tlsConfig does not verify the server, as busybox's wget does not.
func (t *tool) httpClient(timeout time.Duration, follow bool, tlsConfig *tls.Config) *http.Client {
	if tlsConfig == nil {
		tlsConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // busybox wget checks no certificate
	}
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			_, addrs, err := t.lookup(ctx, host)
			if err != nil {
				return nil, &net.DNSError{Err: "bad address", Name: host, IsNotFound: true}
			}
			return t.dial(ctx, network, net.JoinHostPort(addrs[0], port))
		},
		TLSClientConfig: tlsConfig,
		Proxy:           nil,
	}
	client := &http.Client{Transport: transport, Timeout: timeout}
	if !follow {
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return client
}

// targetURL adds http:// to a bare host, as wget and curl do.
func targetURL(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("bad address '%s'", s)
	}
	return u, nil
}

// wget downloads a URL: to a file named after it, or -O FILE ("-" for
// stdout); -q is quiet, -T the timeout, -S prints the headers, --header
// adds one. Like busybox's wget it checks no server certificate, so
// --no-check-certificate is accepted and changes nothing.
func wget(t *tool, args []string) int {
	args, headers, err := wgetLongOptions(args)
	if err != nil {
		fmt.Fprintf(t.stderr, "wget: %v\n", err)
		return 1
	}
	opts, ops, err := flags(args, "OTUtY")
	if err != nil || len(ops) == 0 {
		fmt.Fprintln(t.stderr, "usage: wget [-q] [-O FILE] [-T SEC] [--header 'NAME: VALUE'] URL")
		return 1
	}
	u, err := targetURL(ops[0])
	if err != nil {
		return t.errorf("%v", err)
	}
	timeout := 10 * time.Minute
	if v, ok := opts['T']; ok {
		if n, err := strconv.Atoi(v); err == nil {
			timeout = time.Duration(n) * time.Second
		}
	}
	quiet := opts['q'] != ""
	if !quiet {
		fmt.Fprintf(t.stderr, "Connecting to %s\n", u.Host)
	}
	req, _ := http.NewRequestWithContext(t.ctx, http.MethodGet, u.String(), nil)
	req.Header.Set("User-Agent", "Wget")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := t.httpClient(timeout, true, nil).Do(req)
	if err != nil {
		return t.errorf("%s", netErrText(err, u))
	}
	defer resp.Body.Close()
	if opts['S'] != "" {
		fmt.Fprintf(t.stderr, "  %s %s\n", resp.Proto, resp.Status)
		for k, vs := range resp.Header {
			for _, v := range vs {
				fmt.Fprintf(t.stderr, "  %s: %s\n", k, v)
			}
		}
	}
	if resp.StatusCode >= 400 {
		return t.errorf("server returned error: %s %s", resp.Proto, resp.Status)
	}
	out := t.stdout
	name, ok := opts['O']
	if !ok {
		name = path.Base(u.Path)
		if name == "/" || name == "." || name == "" {
			name = "index.html"
		}
	}
	if name != "-" {
		f, err := os.Create(t.host(name))
		if err != nil {
			return t.errorf("can't open '%s': %s", name, errText(err))
		}
		defer f.Close()
		out = f
		if !quiet {
			fmt.Fprintf(t.stderr, "saving to '%s'\n", name)
		}
	}
	n, err := io.Copy(out, resp.Body)
	if err != nil {
		return t.errorf("%v", err)
	}
	if !quiet && name != "-" {
		fmt.Fprintf(t.stderr, "'%s' saved (%d bytes)\n", name, n)
	}
	return 0
}

// curl makes one request: -X method, -d data, -H header, -o file, -i
// (headers too), -I (HEAD), -s/-S, -f (fail on HTTP errors), -L (follow),
// -m seconds, -v (request and response headers on stderr). As curl does,
// it checks an https server's certificate against the system's roots or
// the file --cacert names, unless -k (--insecure) says not to.
func curl(t *tool, args []string) int {
	var (
		headers []string
		data    string
		hasData bool
		ops     []string
		opts    = map[byte]string{}
		caFile  string
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-H" || a == "--header":
			if i+1 < len(args) {
				headers = append(headers, args[i+1])
				i++
			}
		case a == "-d" || a == "--data" || a == "--data-raw":
			if i+1 < len(args) {
				data, hasData = args[i+1], true
				i++
			}
		case a == "--cacert":
			if i+1 < len(args) {
				caFile = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--cacert="):
			caFile = strings.TrimPrefix(a, "--cacert=")
		case a == "--insecure":
			opts['k'] = "1"
		case a == "--silent":
			opts['s'] = "1"
		case a == "--fail":
			opts['f'] = "1"
		case a == "--location":
			opts['L'] = "1"
		case a == "--include":
			opts['i'] = "1"
		case a == "--head":
			opts['I'] = "1"
		case a == "--verbose":
			opts['v'] = "1"
		case a == "--output" || a == "--request" || a == "--max-time" || a == "--connect-timeout":
			if i+1 < len(args) {
				opts[map[string]byte{"--output": 'o', "--request": 'X', "--max-time": 'm', "--connect-timeout": 'm'}[a]] = args[i+1]
				i++
			}
		case len(a) > 1 && a[0] == '-' && !strings.HasPrefix(a, "--"):
			// One group of short options at a time, with the next
			// argument when its last option takes a value: a long
			// option after it is not a group of letters.
			group := args[i : i+1]
			o, _, err := flags(group, "oXmHd")
			if err != nil && i+1 < len(args) {
				group = args[i : i+2]
				o, _, err = flags(group, "oXmHd")
			}
			if err != nil {
				fmt.Fprintf(t.stderr, "curl: option %s: requires parameter\n", a)
				return ExitUsage
			}
			consumed := len(group)
			for k, v := range o {
				switch k {
				case 'H':
					headers = append(headers, v)
				case 'd':
					data, hasData = v, true
				default:
					opts[k] = v
				}
			}
			i += consumed - 1
		case strings.HasPrefix(a, "--"):
			// Options klab's curl does not know are ignored, as a lab's
			// scripts often pass -k or --compressed.
		default:
			ops = append(ops, a)
		}
	}
	if len(ops) == 0 {
		fmt.Fprintln(t.stderr, "curl: no URL specified")
		return ExitUsage
	}
	u, err := targetURL(ops[0])
	if err != nil {
		fmt.Fprintf(t.stderr, "curl: (3) URL using bad/illegal format or missing URL\n")
		return 3
	}
	method := http.MethodGet
	var body io.Reader
	if hasData {
		method, body = http.MethodPost, strings.NewReader(data)
	}
	if opts['I'] != "" {
		method = http.MethodHead
	}
	if m, ok := opts['X']; ok {
		method = m
	}
	timeout := time.Duration(0)
	if v, ok := opts['m']; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			timeout = time.Duration(f * float64(time.Second))
		}
	}
	req, err := http.NewRequestWithContext(t.ctx, method, u.String(), body)
	if err != nil {
		fmt.Fprintf(t.stderr, "curl: (3) %v\n", err)
		return 3
	}
	req.Header.Set("User-Agent", "curl/8.5.0")
	req.Header.Set("Accept", "*/*")
	if hasData {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	silent := opts['s'] != "" && opts['S'] == ""
	tlsConfig, err := t.curlTLS(caFile, opts['k'] != "")
	if err != nil {
		if !silent {
			fmt.Fprintf(t.stderr, "curl: (77) %v\n", err)
		}
		return 77
	}
	resp, err := t.httpClient(timeout, opts['L'] != "", tlsConfig).Do(req)
	if err != nil {
		code, msg := curlError(err, u)
		if !silent {
			fmt.Fprintf(t.stderr, "curl: (%d) %s\n", code, msg)
		}
		return code
	}
	defer resp.Body.Close()
	if opts['f'] != "" && resp.StatusCode >= 400 {
		if !silent {
			fmt.Fprintf(t.stderr, "curl: (22) The requested URL returned error: %d\n", resp.StatusCode)
		}
		return 22
	}
	out := t.stdout
	if name, ok := opts['o']; ok && name != "-" {
		f, err := os.Create(t.host(name))
		if err != nil {
			fmt.Fprintf(t.stderr, "curl: (23) Failure writing output to destination\n")
			return 23
		}
		defer f.Close()
		out = f
	}
	if opts['v'] != "" {
		fmt.Fprintf(t.stderr, "> %s %s HTTP/1.1\n> Host: %s\n>\n< %s %s\n", method, u.RequestURI(), u.Host, resp.Proto, resp.Status)
	}
	if opts['i'] != "" || opts['I'] != "" {
		w := bufio.NewWriter(out)
		fmt.Fprintf(w, "%s %s\r\n", resp.Proto, resp.Status)
		resp.Header.Write(w)
		io.WriteString(w, "\r\n")
		w.Flush()
	}
	io.Copy(out, resp.Body)
	return 0
}

// netErrText is how wget reports a failed request.
func netErrText(err error, u *url.URL) string {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("bad address '%s'", u.Hostname())
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("can't connect to remote host: Connection refused")
	case errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
		return "download timed out"
	}
	return err.Error()
}

// curlError is curl's exit code and message for a failed request.
func curlError(err error, u *url.URL) (int, string) {
	var dnsErr *net.DNSError
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443"}[u.Scheme]
		if port == "" {
			port = "80"
		}
	}
	var (
		unknownCA x509.UnknownAuthorityError
		wrongHost x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &dnsErr):
		return 6, fmt.Sprintf("Could not resolve host: %s", u.Hostname())
	case errors.As(err, &unknownCA):
		return 60, "SSL certificate problem: unable to get local issuer certificate"
	case errors.As(err, &wrongHost):
		return 60, fmt.Sprintf("SSL: no alternative certificate subject name matches target host name '%s'", u.Hostname())
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return 60, "SSL certificate problem: certificate has expired"
	case errors.Is(err, syscall.ECONNREFUSED):
		return 7, fmt.Sprintf("Failed to connect to %s port %s after 0 ms: Couldn't connect to server", u.Hostname(), port)
	case errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
		return 28, "Operation timed out"
	}
	return 56, err.Error()
}

// curlTLS is the TLS configuration of one curl: the system's roots, or the
// certificates of caFile (as curl's --cacert replaces the default bundle),
// or no check at all with -k.
func (t *tool) curlTLS(caFile string, insecure bool) (*tls.Config, error) {
	if insecure {
		return &tls.Config{InsecureSkipVerify: true}, nil //nolint:gosec // curl -k
	}
	if caFile == "" {
		return &tls.Config{}, nil
	}
	pem, err := os.ReadFile(t.host(caFile))
	if err != nil {
		return nil, fmt.Errorf("error setting certificate file: %s", caFile)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("error setting certificate file: %s", caFile)
	}
	return &tls.Config{RootCAs: pool}, nil
}

// wgetLongOptions takes busybox wget's long options out of args: each
// --header (as "--header X" or "--header=X") is returned, the ones with a
// short form become it, and --no-check-certificate is dropped (busybox
// checks no certificate in any case). Any other long option is an error,
// worded as busybox words it.
func wgetLongOptions(args []string) ([]string, []string, error) {
	short := map[string]string{
		"--quiet": "-q", "--output-document": "-O", "--timeout": "-T",
		"--user-agent": "-U", "--server-response": "-S", "--tries": "-t",
	}
	var out, headers []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "--") {
			out = append(out, a)
			continue
		}
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case name == "--no-check-certificate":
		case name == "--header":
			if !hasValue {
				if i+1 >= len(args) {
					return nil, nil, fmt.Errorf("option '--header' requires an argument")
				}
				i++
				value = args[i]
			}
			headers = append(headers, value)
		case short[name] != "":
			out = append(out, short[name])
			if hasValue {
				out = append(out, value)
			}
		default:
			return nil, nil, fmt.Errorf("unrecognized option '%s'", a)
		}
	}
	return out, headers, nil
}
