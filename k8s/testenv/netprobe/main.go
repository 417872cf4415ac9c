// netprobe ADDR:PORT|dns:NAME...: tries one TCP connection to each
// address (2 s each) and prints "ADDR:PORT open", "refused" or "timeout"
// (or the error) on a line per address; for dns:NAME it prints "dns:NAME"
// and the addresses the pod's resolver (its /etc/resolv.conf, as the
// kubelet wrote it) gives, or "error ...". Then it exits 0. The
// NetworkPolicy and DNS test of cluster.sh's clusters runs it as a pod
// outside wirespeed's run: its log says what a pod there can reach.
// Standard library only.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

func probe(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
		return "open"
	}
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "error " + err.Error()
}

func resolve(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := &net.Resolver{PreferGo: true}
	addrs, err := r.LookupHost(ctx, name)
	if err != nil {
		return "error " + err.Error()
	}
	return strings.Join(addrs, " ")
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: netprobe ADDR:PORT...")
		os.Exit(2)
	}
	for _, a := range os.Args[1:] {
		if name, ok := strings.CutPrefix(a, "dns:"); ok {
			fmt.Printf("%s %s\n", a, resolve(name))
			continue
		}
		fmt.Printf("%s %s\n", a, probe(a))
	}
}
