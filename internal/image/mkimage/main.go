// Command mkimage builds fibfleet's container image from scratch (package image): an
// OCI image layout and, with -tarball, an archive `docker load` or `podman load`
// reads. Run it from the repository's root (make image does).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/fibfleet/fibfleet/internal/image"
)

func main() {
	out := flag.String("layout", "bin/image", "the OCI image layout to write (replaced)")
	tb := flag.String("tarball", "", "also write the image as a docker-archive tarball here")
	version := flag.String("version", "dev", "the version stamped into the binaries and the image's labels")
	ref := flag.String("ref", "", "the image's name (default ghcr.io/fibfleet/fibfleet:<version>)")
	flag.Parse()
	digest, err := image.Build(context.Background(), image.Options{Repo: ".", Version: *version, Ref: *ref, Layout: *out, Tarball: *tb,
		Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "mkimage: "+f+"\n", a...) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}
