package docker

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// BinaryEnv names the environment variable that points EnsureImage at the
// klab binary to put in the image, overriding ImageOptions.Binary. `make
// image` builds a static linux binary and sets it.
const BinaryEnv = "KLAB_BINARY"

// ErrUnusableBinary is wrapped by EnsureImage's errors about a klab binary
// that cannot be the only file of an image: not Linux, not the engine's
// architecture, or dynamically linked. The message says to run `make
// image`.
var ErrUnusableBinary = errors.New("the klab binary cannot run in a Docker container")

// makeImageHint ends every error about an unusable binary: the one command
// that produces a usable one.
const makeImageHint = "run `make image`, which builds a static linux klab at bin/klab and sets " + BinaryEnv + " to it"

// elfMachines maps Go's names of the architectures Docker runs on to their
// ELF machine.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// checkBinary verifies that the file at path can run as the only file of
// a FROM scratch image on an engine of the given architecture: a Linux ELF
// executable for that architecture, statically linked, since the image
// holds no dynamic loader and no C library.
func checkBinary(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		var formatErr *elf.FormatError
		if errors.As(err, &formatErr) {
			return fmt.Errorf("%w: %s is not a Linux executable: %s", ErrUnusableBinary, path, makeImageHint)
		}
		return fmt.Errorf("read the klab binary %s: %w", path, err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%w: %s is not an executable but an ELF %s: %s", ErrUnusableBinary, path, f.Type, makeImageHint)
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return fmt.Errorf("%w: %s is built for %s, not Linux: %s", ErrUnusableBinary, path, f.OSABI, makeImageHint)
	}
	if want, ok := elfMachines[arch]; ok && f.Machine != want {
		return fmt.Errorf("%w: %s is built for %s but the Docker engine runs on %s: %s", ErrUnusableBinary, path, f.Machine, arch, makeImageHint)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w: %s is dynamically linked, and the image has no dynamic loader: %s", ErrUnusableBinary, path, makeImageHint)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("read the libraries %s needs: %w", path, err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("%w: %s needs shared libraries (%v) that the image does not have: %s", ErrUnusableBinary, path, libs, makeImageHint)
	}
	return nil
}

// binaryBuildID derives a build ID from the binary's content: the first 12
// hex digits of its SHA-256, so that a rebuilt binary makes a new image and
// the same binary reuses the one it made.
func binaryBuildID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read the klab binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read the klab binary %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// imageBinary returns the binary EnsureImage puts in the image: $KLAB_BINARY,
// else the one named, else the running one.
func imageBinary(named string) (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		return p, nil
	}
	if named != "" {
		return named, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the running klab binary: %w", err)
	}
	return p, nil
}

// CurrentBuildID returns the build whose images EnsureImage with these
// options makes: opts.BuildID, else the one derived from the binary.
func CurrentBuildID(opts ImageOptions) (string, error) {
	if opts.BuildID != "" {
		return opts.BuildID, nil
	}
	binary, err := imageBinary(opts.Binary)
	if err != nil {
		return "", err
	}
	return binaryBuildID(binary)
}
