// The lab's stand-in for gardener/etcd-wrapper, which druid runs as each member's etcd container
// (etcd-wrapper is not on the Go module proxy these machines reach). As etcd-wrapper does, before
// etcd starts it has the backup-restore sidecar initialize the data directory
// (GET /initialization/start?mode=full, then /initialization/status until "Successful": the
// sidecar validates the data, restores it from the store when it is missing or corrupt, or adds
// the member as a learner on a scale-up), fetches the member's configuration (GET /config) and
// starts etcd with it. Unlike etcd-wrapper it execs the etcd binary instead of embedding etcd,
// always asks for full validation (etcd-wrapper asks for sanity after a clean SIGTERM).
//
// It takes the arguments etcd-druid's StatefulSet gives etcd-wrapper (`start-etcd
// --backup-restore-host-port=… --etcd-server-name=… --backup-restore-tls-enabled=…
// --backup-restore-ca-cert-bundle-path=… --etcd-client-cert-path=… --etcd-client-key-path=…
// --etcd-client-port=… --etcd-wrapper-port=…`). With --etcd-wrapper-port it runs etcd as a child and
// serves /readyz there, as druid's readiness probe expects (HTTPS when the sidecar's TLS is on, with
// the etcd client certificate: the kubelet does not verify it): 200 once etcd's /health, asked on
// loopback with the client certificate, says healthy. Without it (the lab's own StatefulSet, whose
// probe asks etcd's metrics listener) it execs etcd.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// pollInterval is how often the sidecar's initialization status and /config are asked again:
// each answer is a cheap local HTTPS call, and a coarser interval only adds to every member's start.
const pollInterval = 250 * time.Millisecond

func main() {
	// etcd-wrapper's sub-command, as druid's StatefulSet passes it.
	if len(os.Args) > 1 && os.Args[1] == "start-etcd" {
		os.Args = append(os.Args[:1], os.Args[2:]...)
	}
	hostPort := flag.String("backup-restore-host-port", "", "the sidecar's host:port")
	brTLS := flag.Bool("backup-restore-tls-enabled", true, "whether the sidecar serves TLS")
	caBundle := flag.String("backup-restore-ca-cert-bundle-path", "", "CA bundle that verifies the sidecar's TLS certificate")
	flag.String("etcd-server-name", "", "etcd's TLS server name (accepted as etcd-wrapper takes it; /readyz asks etcd on loopback)")
	clientCert := flag.String("etcd-client-cert-path", "", "client certificate for etcd (and /readyz's serving certificate)")
	clientKey := flag.String("etcd-client-key-path", "", "its key")
	clientPort := flag.Int("etcd-client-port", 2379, "etcd's client port")
	wrapperPort := flag.Int("etcd-wrapper-port", 0, "where /readyz is served; 0: none, etcd is exec'd")
	etcd := flag.String("etcd", "/usr/local/bin/etcd", "the etcd binary")
	flag.Parse()
	if *hostPort == "" || (*brTLS && *caBundle == "") {
		fail("--backup-restore-host-port is required, and --backup-restore-ca-cert-bundle-path unless --backup-restore-tls-enabled=false")
	}
	transport := &http.Transport{}
	base := "http://" + *hostPort
	if *brTLS {
		pem, err := os.ReadFile(*caBundle)
		if err != nil {
			fail("reading the CA bundle: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fail("no certificate in %s", *caBundle)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		base = "https://" + *hostPort
	}
	// The sidecar answers /config only after asking the cluster for its members and learners,
	// which takes over a minute while no member is up yet (a new cluster).
	client := &http.Client{Timeout: 5 * time.Minute, Transport: transport}
	var err error
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
		time.Sleep(pollInterval)
	}
	var config string
	for {
		config, err = get(client, base+"/config")
		if err == nil {
			break
		}
		say("fetching the etcd configuration: %v", err)
		time.Sleep(pollInterval)
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
	if *wrapperPort == 0 {
		if err := syscall.Exec(*etcd, []string{*etcd, "--config-file=" + path}, os.Environ()); err != nil {
			fail("exec %s: %v", *etcd, err)
		}
	}
	os.Exit(runWithReadyz(*etcd, path, *wrapperPort, *clientPort, *brTLS, *clientCert, *clientKey))
}

// runWithReadyz runs etcd as a child (signals forwarded) and serves /readyz; answers etcd's exit code.
func runWithReadyz(etcd, config string, wrapperPort, clientPort int, serveTLS bool, certFile, keyFile string) int {
	health := &http.Client{Timeout: 3 * time.Second}
	scheme := "http"
	if certFile != "" && keyFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			fail("loading the etcd client certificate: %v", err)
		}
		scheme = "https"
		// etcd's own CA is in its configuration, not among the arguments: on loopback, in its own pod,
		// the answer is trusted without verifying the serving certificate.
		health.Transport = &http.Transport{TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12, //nolint:gosec
		}}
	}
	healthURL := fmt.Sprintf("%s://127.0.0.1:%d/health", scheme, clientPort)
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := etcdHealthy(health, healthURL); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	server := &http.Server{Addr: fmt.Sprintf(":%d", wrapperPort), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		var err error
		if serveTLS {
			err = server.ListenAndServeTLS(certFile, keyFile)
		} else {
			err = server.ListenAndServe()
		}
		if err != nil && err != http.ErrServerClosed {
			fail("serving /readyz on :%d: %v", wrapperPort, err)
		}
	}()
	child := exec.Command(etcd, "--config-file="+config)
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		fail("starting %s: %v", etcd, err)
	}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range signals {
			_ = child.Process.Signal(s)
		}
	}()
	err := child.Wait()
	if exit, ok := err.(*exec.ExitError); ok {
		say("etcd ended: %v", exit)
		return exit.ExitCode()
	}
	if err != nil {
		say("waiting for etcd: %v", err)
		return 1
	}
	return 0
}

func etcdHealthy(client *http.Client, url string) error {
	body, err := get(client, url)
	if err != nil {
		return err
	}
	var answer struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil || answer.Health != "true" {
		return fmt.Errorf("etcd /health: %s", body)
	}
	return nil
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
