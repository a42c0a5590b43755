// Package image builds fibfleet's container image from scratch, with no daemon and
// no base image to pull: the node, ctl and kubesetup as static binaries, the CA
// certificates, a passwd and group file with root and a non-root user, and /tmp, in
// one layer, written as an OCI image layout (and, if asked, a tarball `docker load`
// and `podman load` read). The image the tests unpack and run is the one this writes.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Options say what Build builds.
type Options struct {
	// Repo is the module's root (where go.mod is): the binaries are built from it.
	Repo string
	// Version is stamped into the binaries (main.version) and the image's labels.
	Version string
	// Ref names the image in the layout and the tarball (default
	// ghcr.io/fibfleet/fibfleet:<Version>).
	Ref string
	// Layout is the directory of the OCI image layout to write (replaced).
	Layout string
	// Tarball, when set, is a docker-archive tarball of the same image.
	Tarball string
	// CACerts is the CA bundle to ship (default: Debian's
	// /etc/ssl/certs/ca-certificates.crt, from the ca-certificates package).
	CACerts string
	// Log, when set, is told of each step.
	Log func(format string, args ...any)
}

// Binaries are the image's programs, under /usr/local/bin: the node, ctl, and the
// Helm chart's hook jobs (kubesetup).
var Binaries = []string{"node", "ctl", "kubesetup"}

// NonRootUID is the image's non-root user (as distroless's "nonroot").
const NonRootUID = 65532

// Build builds the binaries and writes the image; it returns its digest.
func Build(ctx context.Context, o Options) (v1.Hash, error) {
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Ref == "" {
		o.Ref = "ghcr.io/fibfleet/fibfleet:" + o.Version
	}
	if o.CACerts == "" {
		o.CACerts = "/etc/ssl/certs/ca-certificates.crt"
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ref, err := name.NewTag(o.Ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image: reference %q: %w", o.Ref, err)
	}
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image: the CA certificates (apt-get install ca-certificates, or give their bundle): %w", err)
	}
	bin, err := os.MkdirTemp("", "fibfleet-image-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(bin)
	logf("building %v (static, version %s)", Binaries, o.Version)
	args := []string{"build", "-trimpath", "-ldflags", "-s -w -X main.version=" + o.Version, "-o", bin + "/"}
	for _, b := range Binaries {
		args = append(args, "./cmd/"+b)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = o.Repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		return v1.Hash{}, fmt.Errorf("image: go build: %w\n%s", err, out)
	}
	files := []file{
		{path: "etc/", mode: 0o755, dir: true},
		{path: "etc/passwd", mode: 0o644, body: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRootUID, NonRootUID))},
		{path: "etc/group", mode: 0o644, body: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRootUID))},
		{path: "etc/ssl/", mode: 0o755, dir: true},
		{path: "etc/ssl/certs/", mode: 0o755, dir: true},
		{path: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: certs},
		{path: "home/", mode: 0o755, dir: true},
		{path: "home/nonroot/", mode: 0o700, dir: true, uid: NonRootUID},
		{path: "root/", mode: 0o700, dir: true},
		{path: "tmp/", mode: 0o1777, dir: true},
		{path: "usr/", mode: 0o755, dir: true},
		{path: "usr/local/", mode: 0o755, dir: true},
		{path: "usr/local/bin/", mode: 0o755, dir: true},
	}
	for _, b := range Binaries {
		body, err := os.ReadFile(filepath.Join(bin, b))
		if err != nil {
			return v1.Hash{}, err
		}
		files = append(files, file{path: "usr/local/bin/" + b, mode: 0o755, body: body})
	}
	layer, err := layerOf(files)
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return v1.Hash{}, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	// The node needs capabilities in its effective set (BPF, NET_ADMIN, PERFMON,
	// NET_BIND_SERVICE), which Kubernetes grants to UID 0 only: the image runs as
	// root; nonroot is there for ctl and for runtimes that grant ambient capabilities.
	cfg.Config = v1.Config{
		Entrypoint: []string{"/usr/local/bin/node"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		User:       "0",
		Labels: map[string]string{
			"org.opencontainers.image.title":   "fibfleet",
			"org.opencontainers.image.version": o.Version,
			"org.opencontainers.image.source":  "https://github.com/fibfleet/fibfleet",
		},
	}
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()} // reproducible: the same inputs, the same digest
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	if err := os.RemoveAll(o.Layout); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(o.Layout, empty.Index)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image: write the OCI layout %s: %w", o.Layout, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.String()})); err != nil {
		return v1.Hash{}, fmt.Errorf("image: write the OCI layout %s: %w", o.Layout, err)
	}
	logf("wrote the OCI layout %s (%s, %s)", o.Layout, ref, digest)
	if o.Tarball != "" {
		if err := tarball.WriteToFile(o.Tarball, ref, img); err != nil {
			return v1.Hash{}, fmt.Errorf("image: write the tarball %s: %w", o.Tarball, err)
		}
		logf("wrote the tarball %s", o.Tarball)
	}
	return digest, nil
}

// file is one entry of the image's layer.
type file struct {
	path string
	mode int64
	dir  bool
	uid  int
	body []byte
}

// layerOf makes the layer, its entries owned by root (but for those that say) and
// dated at the epoch, so that the same files give the same digest.
func layerOf(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.path, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}
