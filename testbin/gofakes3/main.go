// The lab's S3-compatible object store (scripts/testbin gofakes3): gofakes3 over its in-memory
// backend, path-style buckets, plain HTTP, every request signed (AWS Signature Version 4, sigv4.go)
// with the key pair in S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY. The buckets named by -bucket exist
// from the start; what is stored lives as long as the process (a lab is not kept between runs).
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	listen := flag.String("listen", ":9000", "address to serve S3 on")
	buckets := flag.String("bucket", "", "comma-separated buckets to create at start")
	flag.Parse()
	creds := credentials{accessKeyID: os.Getenv("S3_ACCESS_KEY_ID"), secretAccessKey: os.Getenv("S3_SECRET_ACCESS_KEY")}
	if creds.accessKeyID == "" || creds.secretAccessKey == "" {
		log.Fatal("S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set: the store accepts only requests signed with them")
	}

	backend := s3mem.New()
	for _, name := range strings.Split(*buckets, ",") {
		if name == "" {
			continue
		}
		if err := backend.CreateBucket(name); err != nil {
			log.Fatalf("creating bucket %q: %v", name, err)
		}
	}
	faker := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.GlobalLog(gofakes3.LogErr, gofakes3.LogWarn)))
	server := &http.Server{Addr: *listen, Handler: requireSignature(creds, faker.Server()), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("serving S3 on %s, buckets %q", *listen, *buckets)
	log.Fatal(server.ListenAndServe())
}
