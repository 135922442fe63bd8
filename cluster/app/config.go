package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/klab-dev/klab/cluster/app/standin"
)

// config is the app's behaviour, from its flags and environment.
type config struct {
	port          int
	message       string
	responseDelay time.Duration
	cpuPerRequest time.Duration
	readyAfter    time.Duration

	failLivenessAfter          time.Duration
	failLivenessAfterRequests  int64
	failReadinessAfter         time.Duration
	failReadinessAfterRequests int64

	crashAfter    time.Duration
	crashExitCode int
	exitAfter     time.Duration
	exitCode      int
	shutdownDelay time.Duration

	memory             int64
	memoryGrow         int64
	memoryGrowInterval time.Duration

	logRequests bool

	// standIn, when set, is the tutorial image the app stands in for
	// (nginx, httpd): it listens on port 80 unless told otherwise and
	// answers GET / with a welcome page (see welcome.go).
	standIn string

	// switches lists the switches that differ from their defaults as
	// name=value, for the startup line: a student reading the log sees how
	// the pod was told to behave.
	switches []string
}

// flagSet declares every switch on a new flag set bound to cfg, with its
// defaults.
func flagSet(cfg *config, output io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.IntVar(&cfg.port, "port", DefaultPort, "port to listen on")
	fs.StringVar(&cfg.message, "message", "", "a line added to every answer to GET /")
	fs.Var((*duration)(&cfg.responseDelay), "response-delay", "wait this long before answering GET /")
	fs.Var((*duration)(&cfg.cpuPerRequest), "cpu-per-request", "keep a CPU busy for this much CPU time answering each GET / (load for an autoscaler)")
	fs.Var((*duration)(&cfg.readyAfter), "ready-after", "/readyz fails until this long after start")
	fs.Var((*duration)(&cfg.failLivenessAfter), "fail-liveness-after", "/healthz fails from this long after start")
	fs.Var((*count)(&cfg.failLivenessAfterRequests), "fail-liveness-after-requests", "/healthz fails once GET / answered this many times")
	fs.Var((*duration)(&cfg.failReadinessAfter), "fail-readiness-after", "/readyz fails from this long after start")
	fs.Var((*count)(&cfg.failReadinessAfterRequests), "fail-readiness-after-requests", "/readyz fails once GET / answered this many times")
	fs.Var((*duration)(&cfg.crashAfter), "crash-after", "exit with --crash-exit-code after this long")
	fs.IntVar(&cfg.crashExitCode, "crash-exit-code", 1, "exit code for --crash-after and POST /crash")
	fs.Var((*duration)(&cfg.exitAfter), "exit-after", "exit with --exit-code after this long (a batch job)")
	fs.IntVar(&cfg.exitCode, "exit-code", 0, "exit code for --exit-after")
	fs.Var((*duration)(&cfg.shutdownDelay), "shutdown-delay", "on SIGTERM, fail readiness and keep serving this long")
	fs.Var((*size)(&cfg.memory), "memory", "allocate this much memory at start (e.g. 64Mi)")
	fs.Var((*size)(&cfg.memoryGrow), "memory-grow", "allocate this much more memory every --memory-grow-interval")
	cfg.memoryGrowInterval = time.Second
	fs.Var((*duration)(&cfg.memoryGrowInterval), "memory-grow-interval", "interval for --memory-grow")
	fs.BoolVar(&cfg.logRequests, "log-requests", true, "log one line per request")
	fs.StringVar(&cfg.standIn, "stand-in", "", "serve a welcome page on port 80 in place of this web server image (nginx, httpd)")
	return fs
}

// envName is the environment variable that sets a flag: "fail-liveness-after"
// is FAIL_LIVENESS_AFTER.
func envName(flagName string) string {
	return strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseConfig reads the switches from args, then fills those not given as
// flags from env. Usage errors are printed to output, as a command's would.
func parseConfig(args []string, env map[string]string, output io.Writer) (config, error) {
	var cfg config
	fs := flagSet(&cfg, output)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q: the app takes only flags", fs.Arg(0))
		fmt.Fprintln(output, err)
		return config{}, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		value, ok := env[envName(f.Name)]
		if given[f.Name] || !ok {
			return
		}
		if err := f.Value.Set(value); err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for environment variable %s: %w", value, envName(f.Name), err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(output, err)
		return config{}, err
	}
	if cfg.standIn != "" {
		if img, ok := standin.Lookup(cfg.standIn); !ok || img.Kind != standin.Web {
			err := fmt.Errorf("invalid stand-in %q: klab stands in for the web servers nginx and httpd", cfg.standIn)
			fmt.Fprintln(output, err)
			return config{}, err
		}
		if _, fromEnv := env[envName("port")]; !given["port"] && !fromEnv {
			cfg.port = standInPort
		}
	}
	if cfg.port < 1 || cfg.port > 65535 {
		err := fmt.Errorf("invalid port %d: want 1 to 65535", cfg.port)
		fmt.Fprintln(output, err)
		return config{}, err
	}
	if cfg.memoryGrow > 0 && cfg.memoryGrowInterval <= 0 {
		err := errors.New("--memory-grow needs a positive --memory-grow-interval")
		fmt.Fprintln(output, err)
		return config{}, err
	}
	fs.VisitAll(func(f *flag.Flag) {
		if v := f.Value.String(); v != f.DefValue {
			cfg.switches = append(cfg.switches, f.Name+"="+v)
		}
	})
	return cfg, nil
}

// duration is a flag.Value for a non-negative duration, in Go's syntax or
// as a number of seconds.
type duration time.Duration

func (d *duration) String() string { return time.Duration(*d).String() }

func (d *duration) Set(s string) error {
	s = strings.TrimSpace(s)
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if secs < 0 {
			return errors.New("must not be negative")
		}
		*d = duration(time.Duration(secs * float64(time.Second)))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s or 2m, or a number of seconds")
	}
	if v < 0 {
		return errors.New("must not be negative")
	}
	*d = duration(v)
	return nil
}

// count is a flag.Value for a non-negative number of requests.
type count int64

func (c *count) String() string { return strconv.FormatInt(int64(*c), 10) }

func (c *count) Set(s string) error {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || v < 0 {
		return errors.New("want a whole number of requests, 0 or more")
	}
	*c = count(v)
	return nil
}

// size is a flag.Value for a number of bytes written as a Kubernetes
// quantity ("64Mi").
type size int64

func (z *size) String() string {
	return resource.NewQuantity(int64(*z), resource.BinarySI).String()
}

func (z *size) Set(s string) error {
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return errors.New("want a size such as 64Mi or 1G")
	}
	if q.Sign() < 0 {
		return errors.New("must not be negative")
	}
	*z = size(q.Value())
	return nil
}
