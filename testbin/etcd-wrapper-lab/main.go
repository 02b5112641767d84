// The lab's stand-in for gardener/etcd-wrapper, which druid runs as each member's etcd container
// (etcd-wrapper is not on the Go module proxy these machines reach). As etcd-wrapper does, before
// etcd starts it has the backup-restore sidecar initialize the data directory
// (GET /initialization/start?mode=full, then /initialization/status until "Successful": the
// sidecar validates the data, restores it from the store when it is missing or corrupt, or adds
// the member as a learner on a scale-up), fetches the member's configuration (GET /config) and
// starts etcd with it. Unlike etcd-wrapper it execs the etcd binary instead of embedding etcd,
// always asks for full validation (etcd-wrapper asks for sanity after a clean SIGTERM), and serves
// no /readyz: the lab's readiness probe asks etcd's metrics listener.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	hostPort := flag.String("backup-restore-host-port", "", "the sidecar's host:port")
	caBundle := flag.String("backup-restore-ca-cert-bundle-path", "", "CA bundle that verifies the sidecar's TLS certificate")
	etcd := flag.String("etcd", "/usr/local/bin/etcd", "the etcd binary")
	flag.Parse()
	if *hostPort == "" || *caBundle == "" {
		fail("--backup-restore-host-port and --backup-restore-ca-cert-bundle-path are required")
	}
	pem, err := os.ReadFile(*caBundle)
	if err != nil {
		fail("reading the CA bundle: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fail("no certificate in %s", *caBundle)
	}
	// The sidecar answers /config only after asking the cluster for its members and learners,
	// which takes over a minute while no member is up yet (a new cluster).
	client := &http.Client{
		Timeout:   5 * time.Minute,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	base := "https://" + *hostPort
	for {
		status, err := get(client, base+"/initialization/status")
		switch {
		case err != nil:
			say("initialization status: %v", err)
		case status == "Successful":
			say("initialization succeeded")
		case status == "New":
			say("initialization status New: triggering it (full validation)")
			if _, err := get(client, base+"/initialization/start?mode=full"); err != nil {
				say("triggering initialization: %v", err)
			}
		default:
			say("initialization status %q", status)
		}
		if err == nil && status == "Successful" {
			break
		}
		time.Sleep(time.Second)
	}
	var config string
	for {
		config, err = get(client, base+"/config")
		if err == nil {
			break
		}
		say("fetching the etcd configuration: %v", err)
		time.Sleep(time.Second)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	path := filepath.Join(home, "etcd.conf.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		fail("writing %s: %v", path, err)
	}
	say("starting %s --config-file=%s", *etcd, path)
	if err := syscall.Exec(*etcd, []string{*etcd, "--config-file=" + path}, os.Environ()); err != nil {
		fail("exec %s: %v", *etcd, err)
	}
}

func get(client *http.Client, url string) (string, error) {
	response, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return "", err
	}
	if response.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: HTTP %d: %s", url, response.StatusCode, body)
	}
	return string(body), nil
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().UTC().Format(time.RFC3339)+" etcd-wrapper-lab: "+format+"\n", args...)
}

func fail(format string, args ...any) {
	say(format, args...)
	os.Exit(1)
}
