// Package kernels runs the dataplane's tests on the kernels operators run, under
// qemu: the kernel matrix (`make kernels`, part of `make test`). A kernel is Debian's
// package, fetched with apt into a cache and never installed on the host; the
// virtual machine boots it with an initramfs holding a static /init (vminit) and
// static test binaries, runs them as root with bpffs mounted, prints their output on
// the serial console and powers off. TCG (software emulation) is enough: the tests
// load programs and run them with BPF_PROG_TEST_RUN, they measure nothing.
package kernels

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Kernel is one kernel of the matrix: the image Debian's linux-image-amd64 depends on
// in a suite.
type Kernel struct {
	// Name is the series ("6.1"): the package must be linux-image-<Name>.*.
	Name string
	// Release is the apt target release whose candidate is taken ("": the default,
	// bookworm with its security updates).
	Release string
}

// Debian12 are Debian 12's kernels: its own and the one from bookworm-backports.
var Debian12 = []Kernel{{Name: "6.1"}, {Name: "6.12", Release: "bookworm-backports"}}

// Mirror is the Debian mirror apt fetches from (FIBFLEET_DEBIAN_MIRROR overrides it).
func Mirror() string {
	if m := os.Getenv("FIBFLEET_DEBIAN_MIRROR"); m != "" {
		return strings.TrimSuffix(m, "/")
	}
	return "http://deb.debian.org"
}

// Fetcher downloads kernel images into Dir, with apt lists of its own there (the
// host's apt configuration and package state are not touched).
type Fetcher struct {
	Dir     string
	updated bool
}

// aptOptions point apt at the fetcher's own sources and lists.
func (f *Fetcher) aptOptions() []string {
	return []string{
		"-o", "Dir::Etc::sourcelist=" + filepath.Join(f.Dir, "sources.list"),
		"-o", "Dir::Etc::sourceparts=-",
		"-o", "Dir::State::Lists=" + filepath.Join(f.Dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(f.Dir, "cache"),
		"-o", "APT::Get::List-Cleanup=0",
		"-o", "Debug::NoLocking=1",
		"-o", "APT::Sandbox::User=root",
	}
}

func (f *Fetcher) update(ctx context.Context) error {
	if f.updated {
		return nil
	}
	for _, d := range []string{"lists/partial", "cache/archives/partial", "debs"} {
		if err := os.MkdirAll(filepath.Join(f.Dir, d), 0o755); err != nil {
			return err
		}
	}
	const key = "/usr/share/keyrings/debian-archive-keyring.gpg"
	if _, err := os.Stat(key); err != nil {
		return fmt.Errorf("kernels: %s is missing: apt-get install debian-archive-keyring", key)
	}
	m := Mirror()
	var src strings.Builder
	for _, s := range []string{m + "/debian bookworm", m + "/debian bookworm-updates", m + "/debian-security bookworm-security", m + "/debian bookworm-backports"} {
		fmt.Fprintf(&src, "deb [signed-by=%s] %s main\n", key, s)
	}
	if err := os.WriteFile(filepath.Join(f.Dir, "sources.list"), []byte(src.String()), 0o644); err != nil {
		return err
	}
	if out, err := f.apt(ctx, "", "apt-get", "update", "-qq"); err != nil {
		return fmt.Errorf("kernels: apt-get update (from %s; set FIBFLEET_DEBIAN_MIRROR for another mirror): %w\n%s", m, err, out)
	}
	f.updated = true
	return nil
}

func (f *Fetcher) apt(ctx context.Context, dir, tool string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, tool, append(f.aptOptions(), args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	return cmd.CombinedOutput()
}

// Fetch returns the path of the kernel's image (vmlinuz) and its package's name,
// downloading and unpacking it unless the cache has it.
func (f *Fetcher) Fetch(ctx context.Context, k Kernel) (vmlinuz, pkg string, err error) {
	if err := f.update(ctx); err != nil {
		return "", "", err
	}
	args := []string{"depends", "linux-image-amd64"}
	if k.Release != "" {
		args = append([]string{"-t", k.Release}, args...)
	}
	out, err := f.apt(ctx, "", "apt-cache", args...)
	if err != nil {
		return "", "", fmt.Errorf("kernels: apt-cache %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if dep, ok := strings.CutPrefix(strings.TrimSpace(line), "Depends: "); ok && strings.HasPrefix(dep, "linux-image-"+k.Name+".") {
			pkg = dep
			break
		}
	}
	if pkg == "" {
		return "", "", fmt.Errorf("kernels: linux-image-amd64 (release %q) depends on no linux-image-%s.*:\n%s", k.Release, k.Name, out)
	}
	vmlinuz = filepath.Join(f.Dir, pkg, "vmlinuz")
	if _, err := os.Stat(vmlinuz); err == nil {
		return vmlinuz, pkg, nil
	}
	debs := filepath.Join(f.Dir, "debs")
	if out, err := f.apt(ctx, debs, "apt-get", "download", "-qq", pkg); err != nil {
		return "", "", fmt.Errorf("kernels: apt-get download %s: %w\n%s", pkg, err, out)
	}
	matches, _ := filepath.Glob(filepath.Join(debs, pkg+"_*.deb"))
	if len(matches) == 0 {
		return "", "", fmt.Errorf("kernels: apt-get download %s left no .deb in %s", pkg, debs)
	}
	if err := extractVmlinuz(ctx, matches[0], vmlinuz); err != nil {
		return "", "", err
	}
	for _, m := range matches {
		os.Remove(m) // the image is all the matrix needs of the 70-100 MB package
	}
	return vmlinuz, pkg, nil
}

// extractVmlinuz copies ./boot/vmlinuz-* out of a kernel package.
func extractVmlinuz(ctx context.Context, deb, to string) error {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	r, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kernels: dpkg-deb: %w", err)
	}
	defer cmd.Wait()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("kernels: %s holds no boot/vmlinuz-*", deb)
		}
		if err != nil {
			return fmt.Errorf("kernels: read %s: %w", deb, err)
		}
		if !strings.HasPrefix(h.Name, "./boot/vmlinuz-") {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		tmp := to + ".part"
		w, err := os.Create(tmp)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, tr); err != nil {
			w.Close()
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, r) // let dpkg-deb finish writing
		return os.Rename(tmp, to)
	}
}

// Initramfs writes a newc archive (with the cpio command) holding vminit as /init,
// the test binaries as /tests/<name>.test and their arguments, one per line, in
// /args.
func Initramfs(ctx context.Context, out, init string, tests map[string]string, args []string) error {
	root, err := os.MkdirTemp("", "fibfleet-initramfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	files := map[string]string{"init": init}
	for name, bin := range tests {
		files["tests/"+name+".test"] = bin
	}
	for dst, src := range files {
		if err := copyFile(src, filepath.Join(root, dst), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(root, "args"), []byte(strings.Join(args, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	var list strings.Builder
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != root {
			rel, _ := filepath.Rel(root, p)
			list.WriteString(rel + "\n")
		}
		return err
	})
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, "cpio", "-o", "-H", "newc", "--quiet")
	cmd.Dir, cmd.Stdin, cmd.Stdout = root, strings.NewReader(list.String()), f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kernels: cpio: %w: %s", err, stderr.String())
	}
	return f.Close()
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}

// Marker starts every line vminit prints for the host (vminit.Marker).
const Marker = "=== fibfleet-vm:"

// Result is what a boot reported.
type Result struct {
	// Release is the kernel's uname -r, as the guest saw it.
	Release string
	// Exit is each test binary's exit status (-1: it did not run to the end).
	Exit map[string]int
	// Done says vminit ran every binary and powered off.
	Done bool
	// SetupError is vminit's own failure (mounts, loopback), if any.
	SetupError string
}

// Boot boots a kernel with an initramfs under qemu (TCG), copies the serial console
// to console and returns what vminit reported. The context bounds the whole boot.
func Boot(ctx context.Context, vmlinuz, initrd string, memMB int, console io.Writer) (Result, error) {
	res := Result{Exit: map[string]int{}}
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64",
		"-nodefaults", "-display", "none", "-no-reboot", "-accel", "tcg", "-cpu", "max", "-smp", "2",
		"-m", strconv.Itoa(memMB), "-kernel", vmlinuz, "-initrd", initrd,
		"-append", "console=ttyS0 panic=-1 quiet", "-serial", "stdio")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("kernels: start qemu-system-x86_64 (apt-get install qemu-system-x86): %w", err)
	}
	s := bufio.NewScanner(out)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	running := ""
	for s.Scan() {
		line := s.Text()
		fmt.Fprintln(console, line)
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), Marker)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		switch {
		case len(f) == 2 && f[0] == "kernel":
			res.Release = f[1]
		case len(f) == 2 && f[0] == "begin":
			running = f[1]
			res.Exit[running] = -1
		case len(f) == 3 && f[0] == "exit":
			res.Exit[f[1]], _ = strconv.Atoi(f[2])
			running = ""
		case len(f) >= 1 && f[0] == "done":
			res.Done = true
		case len(f) >= 1 && f[0] == "setup-failed":
			res.SetupError = strings.Join(f[1:], " ")
		}
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		if running != "" {
			return res, fmt.Errorf("kernels: the virtual machine timed out while %s ran", running)
		}
		return res, errors.New("kernels: the virtual machine timed out")
	}
	if err != nil && !res.Done {
		return res, fmt.Errorf("kernels: qemu: %w", err)
	}
	return res, nil
}
