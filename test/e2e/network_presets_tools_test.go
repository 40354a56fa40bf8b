//go:build e2e

package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/sumdb/note"
	modzip "golang.org/x/mod/zip"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
)

// The presets against the real package managers (issue 26): a project with go.mod,
// package.json + package-lock.json, requirements.txt and Cargo.toml gets the policy `configure`
// proposes for it (netpolicy.DetectPresets → allow:@go,@npm,@pypi,@crates), and under it the
// real `go mod download` (module proxy and checksum database), `npm ci`, `pip install` and
// `cargo vendor` (crates.io's sparse index and its downloads) in the guest, run
// by `limactl mcp shell` as the agent, fetch the project's dependencies from registries on the
// host's loopback under their real names and default port (443, a TLS server with a CA of its
// own that the commands are told to trust), with the tools' default settings otherwise. A host
// of another ecosystem, served by the same server under the same address, stays refused.
//
// The tools are the host's (go, node + npm, pip, cargo: the e2e image carries none of them), copied
// into the guest once (tools dir below) — the same binaries the host runs, on the guest's
// Debian of the same release.
func TestPresetsRealTools(t *testing.T) {
	reg := startRegistries(t)
	tools := copyFetchToolsToGuest(t)
	mapNamesToHost(t, "# limactl-mcp-e2e-registries", registryNames...)

	dir := homeWorkdir(t)
	discardOnCleanup(t, dir)
	reg.writeProject(t, dir)
	policy := netpolicy.ProposedPolicy(netpolicy.DetectPresets(dir))
	if policy != "allow:@go,@npm,@pypi,@crates" {
		t.Fatalf("the policy proposed for a Go + npm + Python + Rust project is %q", policy)
	}

	// Each fetch in a fresh cache of its own; the times are what docs/network.md gives.
	goFetch := `GOPATH=$tmp/gopath GOFLAGS=-modcacherw GOSUMDB='` + reg.sumdbKey + `' SSL_CERT_FILE=$PWD/registry-ca.pem go mod download 2>&1; echo "GO-EXIT=$?"
t1=$(stamp)
cat "$tmp/gopath/pkg/mod/example.com/e2edep@v1.0.0/dep.go" 2>&1 | grep -o 'hello from the module proxy'
`
	// The registry's CA for npm, unless the session's relay reads the registry's HTTPS (then
	// npm trusts the session CA, as the shell sets it up, and the relay the registry's).
	npmFetch := func(registryCA bool) string {
		ca := ""
		if registryCA {
			ca = "NODE_EXTRA_CA_CERTS=$PWD/registry-ca.pem "
		}
		return `npm_config_cache=$tmp/npm ` + ca + `node "$T/npm/bin/npm-cli.js" ci --no-fund --loglevel=warn 2>&1; echo "NPM-EXIT=$?"
t2=$(stamp)
node -e 'console.log(require("e2e-pad"))'
`
	}
	rest := `PYTHONPATH=$T/py REQUESTS_CA_BUNDLE=$PWD/registry-ca.pem python3 -m pip install -q --disable-pip-version-check --no-cache-dir --cert $PWD/registry-ca.pem --target $tmp/pydeps -r requirements.txt 2>&1; echo "PIP-EXIT=$?"
t3=$(stamp)
PYTHONPATH=$tmp/pydeps python3 -c 'import e2epkg; print(e2epkg.HELLO)'
CARGO_HOME=$tmp/cargo CARGO_HTTP_CAINFO=$PWD/registry-ca.pem "$T/cargo" vendor --quiet --locked $tmp/vendor >/dev/null 2>$tmp/cargo.err; echo "CARGO-EXIT=$?"; cat $tmp/cargo.err
t4=$(stamp)
grep -o 'hello from crates.io' $tmp/vendor/` + crateName + `/src/lib.rs
curl -sS --max-time 20 --cacert $PWD/registry-ca.pem -o /dev/null https://rubygems.org/api/v1/dependencies 2>&1; echo "GEMS-EXIT=$?"
python3 -c "print('TIMES go=%.1fs npm=%.1fs pip=%.1fs cargo=%.1fs' % ($t1-$t0, $t2-$t1, $t3-$t2, $t4-$t3))"
`
	script := func(parts ...string) string {
		return `set -u
T=` + tools + `
export PATH="$T:$T/go/bin:$PATH"
tmp=$(mktemp -d)
stamp() { date +%s.%N; }
t0=$(stamp)
` + strings.Join(parts, "") + `rm -rf "$tmp"`
	}

	run := func(t *testing.T, network, script string, env ...string) (string, string) {
		t.Helper()
		reg.reset()
		stdout, stderr, code := mcpShell(t, dir, env, "--network="+network, "--no-review", instanceName, "--", "sh", "-c", script)
		t.Logf("under %s: exit %d\nstdout:\n%s\nstderr:\n%s", network, code, stdout, stderr)
		t.Logf("the registries got: %s", strings.Join(reg.seen(), ", "))
		if m := regexp.MustCompile(`TIMES .*`).FindString(stdout); m != "" {
			t.Logf("%s: %s", network, m)
		}
		return stdout, stderr
	}
	fetched := func(t *testing.T, network, stdout string) {
		t.Helper()
		for _, want := range []string{"GO-EXIT=0", "hello from the module proxy", "NPM-EXIT=0", "hello from the npm registry", "PIP-EXIT=0", "hello from PyPI", "CARGO-EXIT=0", "hello from crates.io"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("under %s the fetch did not give %q", network, want)
			}
		}
		seen := reg.seen()
		for _, want := range []string{
			"proxy.golang.org GET /example.com/e2edep/@v/v1.0.0.zip",
			"sum.golang.org GET /lookup/example.com/e2edep@v1.0.0",
			"registry.npmjs.org GET /e2e-pad/-/e2e-pad-1.0.0.tgz",
			"pypi.org GET /simple/e2epkg/",
			"files.pythonhosted.org GET /packages/e2/e2epkg-1.0-py3-none-any.whl",
			"index.crates.io GET /config.json",
			"index.crates.io GET " + crateIndexPath,
			"static.crates.io GET /crates/" + crateName + "/1.0.0/download",
		} {
			if !slices.Contains(seen, want) {
				t.Errorf("under %s the registries never got %q", network, want)
			}
		}
	}

	t.Run("the proposed presets fetch the project's dependencies", func(t *testing.T) {
		out, _ := run(t, policy, script(goFetch, npmFetch(true), rest))
		fetched(t, policy, out)
		if strings.Contains(out, "GEMS-EXIT=0") || !strings.Contains(out, "GEMS-EXIT=") {
			t.Errorf("a host of no proposed preset (rubygems.org) was reached")
		}
		for _, r := range reg.seen() {
			if strings.HasPrefix(r, "rubygems.org ") {
				t.Errorf("the registry server got a request for a host outside the policy: %s", r)
			}
		}
	})
	t.Run("the same fetch with the network open", func(t *testing.T) {
		// The baseline of the times: no proxy, the Lima user's commands.
		out, _ := run(t, "open", script(goFetch, npmFetch(true), rest))
		fetched(t, "open", out)
		if !strings.Contains(out, "GEMS-EXIT=0") {
			t.Errorf("under open the rubygems host was not reached: the refusal above proves nothing")
		}
	})
	t.Run("go needs the checksum database of @go", func(t *testing.T) {
		// The module proxy alone: go refuses a module it cannot check.
		out, _ := run(t, "allow:proxy.golang.org,@npm,@pypi,@crates", script(goFetch))
		if strings.Contains(out, "GO-EXIT=0") || !strings.Contains(out, "GO-EXIT=") || !strings.Contains(out, "sum.golang.org") {
			t.Errorf("go mod download without sum.golang.org did not fail on it")
		}
	})
	t.Run("@npm-read installs and refuses a publish", func(t *testing.T) {
		// registry.npmjs.org read only: the session's relay on the host terminates its TLS (the
		// test hook sends it to this server, whose CA it trusts) and lets GETs and the audit's POST
		// through; npm publish's PUT, with a token the agent holds, never leaves the relay.
		const readPolicy = "allow:@go,@npm-read,@pypi,@crates"
		publish := `printf '//registry.npmjs.org/:_authToken=agents-own-token\n' > $tmp/npmrc
NPM_CONFIG_USERCONFIG=$tmp/npmrc npm_config_cache=$tmp/npm node "$T/npm/bin/npm-cli.js" publish --loglevel=warn 2>&1; echo "PUBLISH-EXIT=$?"
`
		env := []string{secrets.TestUpstreamEnv + "=registry.npmjs.org:443=127.0.0.1:443", secrets.TestCAEnv + "=" + writeHookCA(t, reg.caPEM)}
		out, stderr := run(t, readPolicy, script(goFetch, npmFetch(false), rest, publish), env...)
		fetched(t, readPolicy, out)
		if strings.Contains(out, "PUBLISH-EXIT=0") || !strings.Contains(out, "PUBLISH-EXIT=") {
			t.Errorf("npm publish was not refused")
		}
		for _, r := range reg.seen() {
			if strings.HasPrefix(r, "registry.npmjs.org ") && !strings.HasPrefix(r, "registry.npmjs.org GET ") && r != "registry.npmjs.org POST /-/npm/v1/security/advisories/bulk" {
				t.Errorf("a write reached the registry: %s", r)
			}
		}
		if !strings.Contains(stderr, "the relay on the host reads the HTTPS of") {
			t.Errorf("the shell did not say that the relay reads the registry's HTTPS")
		}
		st, _, code := plugin(t, dir, "status", instanceName, "--session", "default")
		if code != 0 || !regexp.MustCompile(`requests:   registry\.npmjs\.org: \d+ HTTPS requests allowed by the network rules, 1 refused \(the last: PUT /e2e-project\)`).MatchString(st) {
			t.Errorf("status does not show the refused publish:\n%s", st)
		}
	})
}

// registryNames are the names the registry server answers for: the presets' hosts the tools
// use, and one of a preset the project does not need.
var registryNames = []string{"proxy.golang.org", "sum.golang.org", "registry.npmjs.org", "pypi.org", "files.pythonhosted.org",
	"index.crates.io", "static.crates.io", "rubygems.org"}

// registries is one TLS server on the host's 127.0.0.1:443 answering as the Go module proxy
// and checksum database, the npm registry, PyPI (simple index and files) and crates.io (its
// sparse index and downloads), each with one package, and as rubygems.org (nothing: a host
// of a preset the project does not need), recording each request as "HOST METHOD PATH".
type registries struct {
	caPEM           []byte
	sumdbKey        string
	goMod, npmLock  []byte
	npmTgz, pyWheel []byte
	goZip           []byte
	wheelHash       string
	crate           []byte
	cargoLock       []byte
	mu              sync.Mutex
	got             []string
}

const (
	goModule   = "example.com/e2edep"
	goVersion  = "v1.0.0"
	goModFile  = "module example.com/e2edep\n\ngo 1.21\n"
	goDepFile  = "package e2edep\n\n// Hello is what the test looks for.\nconst Hello = \"hello from the module proxy\"\n"
	npmPackage = "e2e-pad"
	pyWheel    = "e2epkg-1.0-py3-none-any.whl"
	crateName  = "e2ecrate"
	// crateIndexPath is the crate's file in the sparse index (names of 4 characters or more:
	// the first two, the next two, the name).
	crateIndexPath = "/e2/ec/" + crateName
)

func startRegistries(t *testing.T) *registries {
	t.Helper()
	r := &registries{}
	r.buildPackages(t)

	skey, vkey, err := note.GenerateKey(rand.Reader, "sum.golang.org")
	mustT(t, err)
	r.sumdbKey = vkey
	sumLines := r.goSumLines(t)
	sumSrv := sumdb.NewServer(sumdb.NewTestServer(skey, func(path, vers string) ([]byte, error) {
		if path == goModule && vers == goVersion {
			return sumLines, nil
		}
		return nil, fmt.Errorf("no module %s@%s", path, vers)
	}))

	ca, err := secrets.OpenCA(t.TempDir(), registryNames)
	mustT(t, err)
	r.caPEM = ca.CertPEM()
	leaves := map[string]*tls.Certificate{}
	for _, n := range registryNames {
		leaf, err := ca.Leaf(n)
		mustT(t, err)
		leaves[n] = leaf
	}
	cfg := &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if leaf := leaves[h.ServerName]; leaf != nil {
			return leaf, nil
		}
		return nil, fmt.Errorf("no certificate for %q", h.ServerName)
	}}
	// Port 443: the tools' default URLs, with no port to configure. Nothing else on the test
	// machine listens there; if something does, the test says so rather than trying another.
	ln, err := tls.Listen("tcp", "127.0.0.1:443", cfg)
	if err != nil {
		t.Fatalf("the registries need the host's 127.0.0.1:443 (the tools' default port): %v", err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		host := strings.TrimSuffix(req.Host, ":443")
		r.mu.Lock()
		r.got = append(r.got, host+" "+req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		r.serve(w, req, host, sumSrv)
	}), ReadHeaderTimeout: 30 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return r
}

func (r *registries) serve(w http.ResponseWriter, req *http.Request, host string, sumSrv http.Handler) {
	p := req.URL.Path
	send := func(ctype string, body []byte) {
		w.Header().Set("Content-Type", ctype)
		w.Write(body)
	}
	switch {
	case host == "proxy.golang.org" && p == "/"+goModule+"/@v/list":
		send("text/plain", []byte(goVersion+"\n"))
	case host == "proxy.golang.org" && p == "/"+goModule+"/@v/"+goVersion+".info":
		send("application/json", []byte(`{"Version":"`+goVersion+`","Time":"2026-01-02T03:04:05Z"}`))
	case host == "proxy.golang.org" && p == "/"+goModule+"/@v/"+goVersion+".mod":
		send("text/plain", []byte(goModFile))
	case host == "proxy.golang.org" && p == "/"+goModule+"/@v/"+goVersion+".zip":
		send("application/zip", r.goZip)
	case host == "sum.golang.org":
		sumSrv.ServeHTTP(w, req)
	case host == "registry.npmjs.org" && p == "/"+npmPackage+"/-/"+npmPackage+"-1.0.0.tgz":
		send("application/octet-stream", r.npmTgz)
	case host == "registry.npmjs.org" && strings.HasPrefix(p, "/-/npm/v1/security/"):
		send("application/json", []byte("{}"))
	case host == "pypi.org" && p == "/simple/e2epkg/":
		send("text/html", []byte(`<!DOCTYPE html><html><body><a href="https://files.pythonhosted.org/packages/e2/`+pyWheel+`#sha256=`+r.wheelHash+`">`+pyWheel+`</a></body></html>`))
	case host == "files.pythonhosted.org" && p == "/packages/e2/"+pyWheel:
		send("application/octet-stream", r.pyWheel)
	case host == "index.crates.io" && p == "/config.json":
		send("application/json", []byte(`{"dl":"https://static.crates.io/crates","api":"https://crates.io"}`))
	case host == "index.crates.io" && p == crateIndexPath:
		sum := sha256.Sum256(r.crate)
		send("text/plain", []byte(`{"name":"`+crateName+`","vers":"1.0.0","deps":[],"cksum":"`+hex.EncodeToString(sum[:])+`","features":{},"yanked":false}`+"\n"))
	case host == "static.crates.io" && p == "/crates/"+crateName+"/1.0.0/download":
		send("application/x-tar", r.crate)
	case host == "rubygems.org":
		send("application/octet-stream", nil)
	default:
		http.NotFound(w, req)
	}
}

// buildPackages makes the one package of each registry: a Go module zip, an npm tarball (and
// the project's lock naming it with its integrity), a wheel, a crate (and the project's
// Cargo.lock naming it with its checksum).
func (r *registries) buildPackages(t *testing.T) {
	t.Helper()
	var zbuf bytes.Buffer
	mustT(t, modzip.Create(&zbuf, module.Version{Path: goModule, Version: goVersion}, []modzip.File{
		memFile{"go.mod", goModFile}, memFile{"dep.go", goDepFile},
	}))
	r.goZip = zbuf.Bytes()

	r.npmTgz = tarGz(t, []struct{ name, body string }{
		{"package/package.json", `{"name":"` + npmPackage + `","version":"1.0.0","main":"index.js"}` + "\n"},
		{"package/index.js", "module.exports = 'hello from the npm registry';\n"},
	})
	sum := sha512.Sum512(r.npmTgz)
	lock := map[string]any{
		"name": "e2e-project", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
		"packages": map[string]any{
			"": map[string]any{"name": "e2e-project", "version": "1.0.0", "dependencies": map[string]string{npmPackage: "1.0.0"}},
			"node_modules/" + npmPackage: map[string]any{
				"version":   "1.0.0",
				"resolved":  "https://registry.npmjs.org/" + npmPackage + "/-/" + npmPackage + "-1.0.0.tgz",
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:]),
			},
		},
	}
	var err error
	r.npmLock, err = json.MarshalIndent(lock, "", "  ")
	mustT(t, err)

	files := []struct{ name, body string }{
		{"e2epkg/__init__.py", "HELLO = 'hello from PyPI'\n"},
		{"e2epkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: e2epkg\nVersion: 1.0\n"},
		{"e2epkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: limactl-mcp-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	var wbuf bytes.Buffer
	zw := zip.NewWriter(&wbuf)
	for _, f := range files {
		h := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(h[:]), len(f.body))
		fw, err := zw.Create(f.name)
		mustT(t, err)
		fw.Write([]byte(f.body))
	}
	record.WriteString("e2epkg-1.0.dist-info/RECORD,,\n")
	fw, err := zw.Create("e2epkg-1.0.dist-info/RECORD")
	mustT(t, err)
	fw.Write([]byte(record.String()))
	mustT(t, zw.Close())
	r.pyWheel = wbuf.Bytes()
	wh := sha256.Sum256(r.pyWheel)
	r.wheelHash = hex.EncodeToString(wh[:])

	r.crate = tarGz(t, []struct{ name, body string }{
		{crateName + "-1.0.0/Cargo.toml", "[package]\nname = \"" + crateName + "\"\nversion = \"1.0.0\"\nedition = \"2021\"\n"},
		{crateName + "-1.0.0/src/lib.rs", "pub const HELLO: &str = \"hello from crates.io\";\n"},
	})
	cs := sha256.Sum256(r.crate)
	// As cargo writes it (--locked refuses a lock it would write otherwise).
	r.cargoLock = []byte("# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n" +
		"[[package]]\nname = \"e2e-project\"\nversion = \"1.0.0\"\ndependencies = [\n \"" + crateName + "\",\n]\n\n" +
		"[[package]]\nname = \"" + crateName + "\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"" + hex.EncodeToString(cs[:]) + "\"\n")
}

// tarGz is a gzipped tar of files (mode 0644, a fixed time).
func tarGz(t *testing.T, files []struct{ name, body string }) []byte {
	t.Helper()
	var tbuf bytes.Buffer
	gz := gzip.NewWriter(&tbuf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		mustT(t, tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(1767322000, 0), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(f.body))
		mustT(t, err)
	}
	mustT(t, tw.Close())
	mustT(t, gz.Close())
	return tbuf.Bytes()
}

// goSumLines are the module's go.sum lines, which the checksum database serves.
func (r *registries) goSumLines(t *testing.T) []byte {
	t.Helper()
	zf := filepath.Join(t.TempDir(), "m.zip")
	mustT(t, os.WriteFile(zf, r.goZip, 0o644))
	zipHash, err := dirhash.HashZip(zf, dirhash.Hash1)
	mustT(t, err)
	modHash, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(goModFile)), nil
	})
	mustT(t, err)
	return []byte(fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", goModule, goVersion, zipHash, goModule, goVersion, modHash))
}

// writeProject writes the project: go.mod, package.json + package-lock.json, requirements.txt,
// Cargo.toml + Cargo.lock + src/main.rs (each naming the one package of its registry) and
// registry-ca.pem, owned by the VM's user.
func (r *registries) writeProject(t *testing.T, dir string) {
	t.Helper()
	files := map[string][]byte{
		"go.mod":            []byte("module example.com/project\n\ngo 1.21\n\nrequire " + goModule + " " + goVersion + "\n"),
		"package.json":      []byte(`{"name":"e2e-project","version":"1.0.0","dependencies":{"` + npmPackage + `":"1.0.0"}}` + "\n"),
		"package-lock.json": r.npmLock,
		"requirements.txt":  []byte("e2epkg==1.0\n"),
		"Cargo.toml":        []byte("[package]\nname = \"e2e-project\"\nversion = \"1.0.0\"\nedition = \"2021\"\n\n[dependencies]\n" + crateName + " = \"1.0.0\"\n"),
		"Cargo.lock":        r.cargoLock,
		"src/main.rs":       []byte("fn main() {}\n"),
		"registry-ca.pem":   r.caPEM,
	}
	src := filepath.Join(dir, "src")
	mustT(t, os.MkdirAll(src, 0o755))
	mustT(t, os.Chown(src, vmUID(t), vmGID(t)))
	for name, data := range files {
		p := filepath.Join(dir, name)
		mustT(t, os.WriteFile(p, data, 0o644))
		mustT(t, os.Chown(p, vmUID(t), vmGID(t)))
	}
}

func (r *registries) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func (r *registries) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = nil
}

// memFile is a file of a Go module zip, from memory.
type memFile struct{ path, body string }

func (f memFile) Path() string                 { return f.path }
func (f memFile) Lstat() (os.FileInfo, error)  { return memInfo(f), nil }
func (f memFile) Open() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(f.body)), nil }

type memInfo memFile

func (i memInfo) Name() string       { return filepath.Base(i.path) }
func (i memInfo) Size() int64        { return int64(len(i.body)) }
func (i memInfo) Mode() os.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return time.Unix(1767322000, 0) }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// mapNamesToHost points names at the host (host.lima.internal's address) in the guest's
// /etc/hosts, on lines of marker, removed when the test ends.
func mapNamesToHost(t *testing.T, marker string, names ...string) {
	t.Helper()
	line := "$(getent hosts host.lima.internal | awk '{print $1; exit}') " + strings.Join(names, " ") + " " + marker
	guestShell(t, `sudo sed -i '/`+marker+`$/d' /etc/hosts; echo "`+line+`" | sudo tee -a /etc/hosts >/dev/null`)
	t.Cleanup(func() { guestShell(t, `sudo sed -i '/`+marker+`$/d' /etc/hosts`) })
}

// fetchToolsDir holds, in the guest, the host's go (the command alone: module downloads build
// nothing), node and npm, and pip (run by the guest's python3 from PYTHONPATH).
const fetchToolsDir = "/usr/local/lib/limactl-mcp-e2e-fetch-tools"

// copyFetchToolsToGuest copies the host's go, node, npm and pip into fetchToolsDir (about
// 150 MB, copyToGuest) and returns it.
func copyFetchToolsToGuest(t *testing.T) string {
	t.Helper()
	goroot := strings.TrimSpace(hostOutput(t, "go", "env", "GOROOT"))
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the host has no node (hack/e2e/install-clients.sh installs it): %v", err)
	}
	node, err = filepath.EvalSymlinks(node)
	mustT(t, err)
	npmDir := strings.TrimSpace(hostOutput(t, "npm", "root", "-g")) + "/npm"
	pipDir := filepath.Dir(strings.TrimSpace(hostOutput(t, "python3", "-c", "import pip; print(pip.__file__)")))
	for _, p := range []string{filepath.Join(goroot, "bin", "go"), filepath.Join(goroot, "go.env"), npmDir + "/bin/npm-cli.js", pipDir + "/__main__.py"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the host's tools: %v", err)
		}
	}
	cargo := hostCargo(t)
	stamp := fmt.Sprintf("%s %s %s %s %s", strings.TrimSpace(hostOutput(t, "go", "version")), strings.TrimSpace(hostOutput(t, "node", "--version")),
		strings.TrimSpace(hostOutput(t, "npm", "--version")), strings.TrimSpace(hostOutput(t, "python3", "-m", "pip", "--version")),
		strings.TrimSpace(hostOutput(t, cargo, "--version")))
	// go finds its GOROOT as the directory above bin that has pkg/tool.
	copyToGuest(t, "go, node, npm, pip and cargo", fetchToolsDir, stamp,
		[]string{
			"-C", filepath.Dir(goroot), "--transform", "s,^" + regexp.QuoteMeta(filepath.Base(goroot)) + "/,go/,",
			filepath.Base(goroot) + "/bin/go", filepath.Base(goroot) + "/go.env", filepath.Base(goroot) + "/VERSION",
			"--transform", "s,^" + regexp.QuoteMeta(filepath.Base(node)) + "$,node,", "-C", filepath.Dir(node), filepath.Base(node),
			"-C", filepath.Dir(npmDir), "npm",
			"--transform", "s,^pip/,py/pip/,", "-C", filepath.Dir(pipDir), "pip",
			"--transform", "s,^" + regexp.QuoteMeta(filepath.Base(cargo)) + "$,cargo,", "-C", filepath.Dir(cargo), filepath.Base(cargo),
		},
		`sudo mkdir -p "$new/go/pkg/tool"; sudo chmod -R a+rX "$new"`,
		fetchToolsDir+"/node --version; "+fetchToolsDir+"/go/bin/go version; PYTHONPATH="+fetchToolsDir+"/py python3 -m pip --version; "+fetchToolsDir+"/cargo --version")
	return fetchToolsDir
}

// hostCargo is the host's cargo itself: rustup's (`rustup which cargo`: the command on PATH is
// rustup's proxy, which would look for a toolchain in the guest), a binary that needs only the
// C library. The machines this runs on have Rust through rustup (~/.cargo/bin).
func hostCargo(t *testing.T) string {
	t.Helper()
	rustup, err := exec.LookPath("rustup")
	if err != nil {
		home, _ := os.UserHomeDir()
		rustup = filepath.Join(home, ".cargo", "bin", "rustup")
	}
	out, err := exec.Command(rustup, "which", "cargo").Output()
	if err != nil {
		t.Fatalf("the host has no cargo of rustup's (%s which cargo: %v): the crates preset is tried with it", rustup, err)
	}
	cargo, err := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	mustT(t, err)
	return cargo
}

func hostOutput(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out)
}
