//go:build !linux

package netroute

import (
	"errors"
	"net/netip"
)

var errUnsupported = errors.New("routes are set on Linux only")

// ReplaceVia is Linux only.
func ReplaceVia(dst netip.Prefix, gw netip.Addr) error { return errUnsupported }

// ReplaceLocal is Linux only.
func ReplaceLocal(dst netip.Prefix) error { return errUnsupported }

// Lookup is Linux only.
func Lookup(dst netip.Addr) (netip.Addr, bool, error) { return netip.Addr{}, false, errUnsupported }
