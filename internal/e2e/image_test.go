package e2e

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/image"
	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestImage builds the shipped image (package image, as make image does), reads it
// back from its OCI layout, checks its layout (binaries, CA certificates, users, /tmp,
// the entrypoint), unpacks it, and runs the node binary from it in the one-node lab:
// it peers with BIRD and forwards UDP to a sink through XDP. The same build twice
// gives the same digest.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	digest, err := image.Build(t.Context(), image.Options{Repo: repo, Version: "test", Layout: filepath.Join(dir, "oci"), Tarball: filepath.Join(dir, "image.tar")})
	if err != nil {
		t.Fatal(err)
	}
	again, err := image.Build(t.Context(), image.Options{Repo: repo, Version: "test", Layout: filepath.Join(dir, "oci2")})
	if err != nil {
		t.Fatal(err)
	}
	if again != digest {
		t.Errorf("the same build twice: digests %s and %s, want one", digest, again)
	}
	p, err := layout.FromPath(filepath.Join(dir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := p.Image(digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/usr/local/bin/node" || cfg.OS != "linux" {
		t.Errorf("image config: entrypoint %v, os %s", cfg.Config.Entrypoint, cfg.OS)
	}
	if st, err := os.Stat(filepath.Join(dir, "image.tar")); err != nil || st.Size() < 1<<20 {
		t.Errorf("tarball: %v", err)
	}
	// Unpack the image's filesystem as a runtime would.
	root := filepath.Join(dir, "rootfs")
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	modes := map[string]os.FileMode{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, filepath.Clean("/"+h.Name))
		modes[filepath.Clean("/"+h.Name)] = h.FileInfo().Mode()
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, h.FileInfo().Mode().Perm())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for path, want := range map[string]os.FileMode{"/usr/local/bin/node": 0o755, "/usr/local/bin/ctl": 0o755, "/usr/local/bin/kubesetup": 0o755, "/etc/ssl/certs/ca-certificates.crt": 0o644,
		"/etc/passwd": 0o644, "/etc/group": 0o644, "/tmp": os.ModeDir | os.ModeSticky | 0o777} {
		if got, ok := modes[path]; !ok || got != want {
			t.Errorf("image: %s mode %v (present %v), want %v", path, got, ok, want)
		}
	}
	// The chart's hook jobs run the image's kubesetup.
	if out, err := exec.Command(filepath.Join(root, "usr/local/bin/kubesetup"), "version").CombinedOutput(); err != nil || string(out) != "kubesetup test\n" {
		t.Errorf("the image's kubesetup version: %q, %v; want the version stamped", out, err)
	}
	// The image's node, as shipped, in the lab: BIRD's routes in, UDP forwarded.
	sk := startSkeleton(t, lab.SkeletonConfig{NodeBinary: filepath.Join(root, "usr/local/bin/node")})
	sink, err := sk.Listen(sk.Sink1)
	if err != nil {
		t.Fatal(err)
	}
	dst := lab.SkeletonRoutes[0].Prefix.Addr().Next()
	err = lab.WaitFor(t.Context(), 90*time.Second, "the image's node forwarding to sink1", func() (bool, error) {
		if err := sk.Send(dst, 10); err != nil {
			return false, err
		}
		time.Sleep(100 * time.Millisecond)
		return sink.Count(dst) > 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := sk.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m[`fibfleet_xdp_packets_total{action="redirect",reason="forwarded"}`] < 1 {
		t.Errorf("the image's node forwarded nothing in XDP: %v", m[`fibfleet_xdp_packets_total{action="redirect",reason="forwarded"}`])
	}
}
