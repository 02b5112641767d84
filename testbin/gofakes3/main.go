// The lab's S3-compatible object store (scripts/testbin gofakes3): gofakes3 over its in-memory
// backend, path-style buckets, plain HTTP. The buckets named by -bucket exist from the start; what
// is stored lives as long as the process (a lab is not kept between runs).
package main

import (
	"flag"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	listen := flag.String("listen", ":9000", "address to serve S3 on")
	buckets := flag.String("bucket", "", "comma-separated buckets to create at start")
	flag.Parse()

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
	server := &http.Server{Addr: *listen, Handler: faker.Server(), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("serving S3 on %s, buckets %q", *listen, *buckets)
	log.Fatal(server.ListenAndServe())
}
