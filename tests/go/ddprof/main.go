// A Go service profiled by dd-trace-go's profiler, uploading to the agent address given
// (agentprof receive in the tests), with the options of DataKit's push-mode example.
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/DataDog/dd-trace-go/v2/profiler"
)

var sink [][]byte

// busyWork is the function the CPU profile should be about.
func busyWork(stop <-chan struct{}) {
	x := 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		for i := 0; i < 1_000_000; i++ {
			x += i * i
		}
		_ = x
	}
}

func main() {
	agent := flag.String("agent", "localhost:9529", "agent address")
	period := flag.Duration("period", 2*time.Second, "upload period")
	run := flag.Duration("run", 10*time.Second, "how long to run")
	flag.Parse()
	err := profiler.Start(
		profiler.WithService("dd-service"),
		profiler.WithEnv("dd-env"),
		profiler.WithVersion("dd-1.0.0"),
		profiler.WithTags("k:1", "k:2"),
		profiler.WithAgentAddr(*agent),
		profiler.WithPeriod(*period),
		profiler.CPUDuration(*period/2),
		profiler.WithProfileTypes(
			profiler.CPUProfile,
			profiler.HeapProfile,
			profiler.BlockProfile,
			profiler.MutexProfile,
			profiler.GoroutineProfile,
		),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer profiler.Stop()
	stop := make(chan struct{})
	go busyWork(stop)
	var mu sync.Mutex
	end := time.Now().Add(*run)
	for time.Now().Before(end) {
		mu.Lock()
		sink = append(sink, make([]byte, 100000))
		if len(sink) > 50 {
			sink = sink[1:]
		}
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	fmt.Println("done")
}
