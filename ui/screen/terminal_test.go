package screen

import (
	"fmt"
	"os"
	"testing"
)

func TestHoldOutputCatchesStrayPrints(t *testing.T) {
	stdout, stderr := os.Stdout, os.Stderr
	release := HoldOutput()
	fmt.Fprint(os.Stdout, "to stdout; ")
	fmt.Fprint(os.Stderr, "to stderr")
	held := release()
	if os.Stdout != stdout || os.Stderr != stderr {
		t.Fatal("release did not put os.Stdout and os.Stderr back")
	}
	if string(held) != "to stdout; to stderr" {
		t.Errorf("held %q", held)
	}
}
