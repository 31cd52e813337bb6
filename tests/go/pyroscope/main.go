// A Go service profiled by grafana/pyroscope-go, the real client of agentprof receive's
// /ingest. Every request it sends also goes, byte for byte, into -sent (the query, and the
// `profile` part of the body), so a test compares what agentprof stored with what the
// client sent.
//
//	pyroscope -server http://127.0.0.1:9529 -sent DIR -run 5s
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grafana/pyroscope-go"
)

type recorder struct {
	dir string
	n   atomic.Int64
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body.Close()
	n := r.n.Add(1)
	stem := filepath.Join(r.dir, fmt.Sprintf("%04d", n))
	_, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err == nil {
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			data, _ := io.ReadAll(p)
			if err := os.WriteFile(stem+"."+p.FormName(), data, 0o644); err != nil {
				return nil, err
			}
		}
	}
	if err := os.WriteFile(stem+".query", []byte(req.URL.RawQuery), 0o644); err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		_ = os.WriteFile(stem+".status", []byte(resp.Status), 0o644)
	}
	return resp, err
}

var sink atomic.Int64

//go:noinline
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := 0
	for time.Now().Before(end) {
		for i := 0; i < 100000; i++ {
			x += i * i
		}
	}
	sink.Add(int64(x))
}

//go:noinline
func allocate() {
	b := make([][]byte, 0, 64)
	for i := 0; i < 64; i++ {
		b = append(b, make([]byte, 4096))
	}
	sink.Add(int64(len(b)))
}

func main() {
	server := flag.String("server", "", "agentprof receive's address")
	sent := flag.String("sent", "", "where what is sent is written")
	run := flag.Duration("run", 5*time.Second, "how long to run")
	flag.Parse()
	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(1)
	if err := os.MkdirAll(*sent, 0o755); err != nil {
		log.Fatal(err)
	}
	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: "pyro.app",
		ServerAddress:   *server,
		Tags:            map[string]string{"region": "eu", "team": "core"},
		HTTPClient:      &http.Client{Transport: &recorder{dir: *sent}, Timeout: 30 * time.Second},
		UploadRate:      time.Second,
		ProfileTypes: []pyroscope.ProfileType{
			pyroscope.ProfileCPU, pyroscope.ProfileAllocObjects, pyroscope.ProfileAllocSpace,
			pyroscope.ProfileInuseObjects, pyroscope.ProfileInuseSpace, pyroscope.ProfileGoroutines,
			pyroscope.ProfileMutexCount, pyroscope.ProfileMutexDuration,
			pyroscope.ProfileBlockCount, pyroscope.ProfileBlockDuration,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	end := time.Now().Add(*run)
	for time.Now().Before(end) {
		spin(50 * time.Millisecond)
		allocate()
		mu.Lock()
		go func() { mu.Lock(); mu.Unlock() }()
		time.Sleep(time.Millisecond)
		mu.Unlock()
	}
	if err := p.Stop(); err != nil {
		log.Fatal(err)
	}
}
