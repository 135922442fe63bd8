// Command klabtest is the program in the test image that dockercri's tests
// run in their sandboxes and containers. It does one thing per invocation,
// chosen by its first argument:
//
//	pause          print "ready", sleep until SIGTERM, then exit 0 (a
//	               sandbox's pause)
//	sleep          print "ready", sleep forever, ignoring SIGTERM: only
//	               SIGKILL stops it
//	echo TEXT...   print TEXT and exit 0
//	stderr TEXT... print TEXT on stderr and exit 0
//	lines N        print "line 1" to "line N" and exit 0
//	env NAME       print the value of an environment variable, exit 0
//	exit CODE      exit with CODE
//	alloc MIB      print "ready", wait for SIGUSR1, then allocate and touch
//	               MIB MiB, print "allocated", sleep
//	listen PORT    answer every TCP connection with the hostname
//	dial ADDR      connect to ADDR (retrying for 10 s while nothing
//	               listens there yet), print what it says, exit 0 (1 on
//	               error)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/klab-dev/klab/cluster/app"
	"github.com/klab-dev/klab/cluster/app/shell"
)

func main() {
	// The image links /bin/sh and the other applets to this program, as
	// klab/app links them to klab: exec runs the shell.
	if shell.IsApplet(os.Args[0]) {
		os.Exit(shell.Main(os.Args))
	}
	if len(os.Args) < 2 {
		fail("usage: klabtest pause|sleep|echo|lines|env|exit|alloc|listen|dial [args]")
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "pause":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		// A signal that comes before the handler is lost: PID 1 has no
		// default action. Tests wait for this line before they signal.
		fmt.Println("ready")
		<-sigs
	case "sleep":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		sleepForever()
	case "echo":
		fmt.Println(strings.Join(args, " "))
	case "stderr":
		fmt.Fprintln(os.Stderr, strings.Join(args, " "))
	case "lines":
		for i := 1; i <= number(args); i++ {
			fmt.Printf("line %d\n", i)
		}
	case "env":
		if len(args) != 1 {
			fail("usage: klabtest env NAME")
		}
		fmt.Println(os.Getenv(args[0]))
	case "exit":
		os.Exit(number(args))
	case "alloc":
		proceed := make(chan os.Signal, 1)
		signal.Notify(proceed, syscall.SIGUSR1)
		fmt.Println("ready")
		<-proceed
		mem := make([]byte, number(args)<<20)
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
		fmt.Println("allocated")
		sleepForever()
	case "app":
		// klab's app, as klab/app's entrypoint runs it (the web stand-ins
		// run it with --stand-in).
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		os.Exit(app.Run(ctx, app.Options{Args: args, Env: os.Environ(), Stdout: os.Stdout, Stderr: os.Stderr}))
	case "listen":
		listen(number(args))
	case "dial":
		if len(args) != 1 {
			fail("usage: klabtest dial ADDR")
		}
		conn, err := dial(args[0])
		if err != nil {
			fail(err.Error())
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		reply, err := io.ReadAll(conn)
		if err != nil {
			fail(err.Error())
		}
		fmt.Println(string(reply))
	default:
		fail("unknown command " + os.Args[1])
	}
}

func listen(port int) {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		fail(err.Error())
	}
	hostname, _ := os.Hostname()
	for {
		conn, err := l.Accept()
		if err != nil {
			fail(err.Error())
		}
		conn.Write([]byte(hostname))
		conn.Close()
	}
}

// sleepForever blocks without a goroutine that could ever wake it up being
// noticed: `select {}` alone would end in the runtime's deadlock error.
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// dial connects to addr, trying again while the connection is refused:
// the listener starts in another container at the same time.
func dial(addr string) (net.Conn, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return conn, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func number(args []string) int {
	if len(args) != 1 {
		fail("want one number")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		fail(err.Error())
	}
	return n
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "klabtest:", msg)
	os.Exit(1)
}
