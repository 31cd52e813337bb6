// pprofsvc is the Go service agentprof's tests pull profiles from: net/http/pprof with
// mutex and block profiling on, CPU burners, allocators, parked goroutines, and a second
// listener whose handlers are cut off after one second by net/http's TimeoutHandler, as many
// services wrap their mux, so a longer CPU profile gets the server's own error text.
package main

import (
	"crypto/sha256"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"sync"
	"time"
)

var (
	retained [][]byte
	sink     []byte
	mu       sync.Mutex
	counter  int
	grown    [][]byte
)

//go:noinline
func burnCPU(seed byte) {
	buf := []byte{seed}
	for {
		sum := sha256.Sum256(buf)
		buf = sum[:]
	}
}

//go:noinline
func allocSmall() {
	for i := 0; ; i++ {
		sink = make([]byte, 512)
		if i%64 == 0 {
			mu.Lock()
			retained = append(retained, make([]byte, 4096))
			if len(retained) > 2000 {
				retained = retained[1000:]
			}
			mu.Unlock()
		}
		if i%1000 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

//go:noinline
func contend() {
	for {
		mu.Lock()
		counter++
		time.Sleep(50 * time.Microsecond)
		mu.Unlock()
	}
}

//go:noinline
func pingPong(in, out chan int) {
	for v := range in {
		time.Sleep(100 * time.Microsecond)
		out <- v + 1
	}
}

//go:noinline
func parkForever(ch chan struct{}) {
	<-ch
}

// branch makes a distinct stack for every path: each level calls one of 16 functions
// chosen by a hex digit of the path, so a heap profile with many stacks (within Go's
// 32-frame limit) can be built for benchmarks.
//
//go:noinline
func branch(depth, path int) {
	if depth == 0 {
		retainedBig = append(retainedBig, make([]byte, 64+path%7))
		return
	}
	choosers[path&15](depth-1, path>>4)
}

var retainedBig [][]byte

//go:noinline
func c0(depth, path int) { branch(depth, path) }

//go:noinline
func c1(depth, path int) { branch(depth, path) }

//go:noinline
func c2(depth, path int) { branch(depth, path) }

//go:noinline
func c3(depth, path int) { branch(depth, path) }

//go:noinline
func c4(depth, path int) { branch(depth, path) }

//go:noinline
func c5(depth, path int) { branch(depth, path) }

//go:noinline
func c6(depth, path int) { branch(depth, path) }

//go:noinline
func c7(depth, path int) { branch(depth, path) }

//go:noinline
func c8(depth, path int) { branch(depth, path) }

//go:noinline
func c9(depth, path int) { branch(depth, path) }

//go:noinline
func c10(depth, path int) { branch(depth, path) }

//go:noinline
func c11(depth, path int) { branch(depth, path) }

//go:noinline
func c12(depth, path int) { branch(depth, path) }

//go:noinline
func c13(depth, path int) { branch(depth, path) }

//go:noinline
func c14(depth, path int) { branch(depth, path) }

//go:noinline
func c15(depth, path int) { branch(depth, path) }

var choosers [16]func(int, int)

func init() {
	choosers = [16]func(int, int){c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15}
}

func main() {
	bigheap := flag.Int("bigheap", 0, "allocate along 2^N distinct stacks at start (heap profile size)")
	burners := flag.Int("burners", 2, "CPU burning goroutines")
	tlsCert := flag.String("tlscert", "", "also serve https with this certificate (PEM)...")
	tlsKey := flag.String("tlskey", "", "...and key; a second https listener requires a client certificate")
	listen := flag.String("listen", "127.0.0.1:0", "the pprof listener's address (a pod's IP and port)")
	flag.Parse()
	// A pod's load on demand: /ctl/burn?n=N starts N more CPU burners, /ctl/grow?mb=N keeps
	// N MiB more live.
	http.HandleFunc("/ctl/burn", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		for i := 0; i < n; i++ {
			go burnCPU(byte(100 + i))
		}
		fmt.Fprintln(w, "ok")
	})
	http.HandleFunc("/ctl/grow", func(w http.ResponseWriter, r *http.Request) {
		var mb int
		fmt.Sscan(r.URL.Query().Get("mb"), &mb)
		for i := 0; i < mb; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(j)
			}
			grown = append(grown, b)
		}
		fmt.Fprintln(w, "ok")
	})
	if *bigheap > 0 {
		runtime.MemProfileRate = 1
	}
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)

	if *bigheap > 0 {
		for p := 0; p < 1<<*bigheap; p++ {
			branch((*bigheap+3)/4, p)
		}
	}
	for i := 0; i < *burners; i++ {
		go burnCPU(byte(i))
	}
	go allocSmall()
	go contend()
	go contend()
	a, b := make(chan int), make(chan int)
	go pingPong(a, b)
	go func() {
		for {
			a <- 1
			<-b
		}
	}()
	park := make(chan struct{})
	for i := 0; i < 50; i++ {
		go parkForever(park)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	short, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	addrs := fmt.Sprintf("%s %s", ln.Addr(), short.Addr())
	if *tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, auth := range []tls.ClientAuthType{tls.NoClientCert, tls.RequireAnyClientCert} {
			l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
				Certificates: []tls.Certificate{cert},
				ClientAuth:   auth,
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			addrs += " " + l.Addr().String()
			go http.Serve(l, nil)
		}
	}
	fmt.Println(addrs)
	os.Stdout.Sync()
	// Go 1.23 and later extend a WriteTimeout for a CPU profile's duration; a TimeoutHandler
	// still cuts the handler off, with a 503 and this text.
	limited := http.TimeoutHandler(http.DefaultServeMux, time.Second, "handler timeout of 1s exceeded")
	go (&http.Server{Handler: limited}).Serve(short)
	if err := http.Serve(ln, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
