// The reference's push-mode example as written, with dd-trace-go's v1 import path
// (gopkg.in/DataDog/dd-trace-go.v1/profiler), uploading to the agent address given and
// with a short period, so the tests see that an application set up as the reference
// says reaches agentprof receive.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"gopkg.in/DataDog/dd-trace-go.v1/profiler"
)

// spin is what the CPU profile should be about.
func spin(until time.Time) int {
	x := 0
	for time.Now().Before(until) {
		for i := 0; i < 1_000_000; i++ {
			x += i * i
		}
	}
	return x
}

func main() {
	agent := flag.String("agent", "localhost:9529", "agent address")
	period := flag.Duration("period", 2*time.Second, "upload period")
	run := flag.Duration("run", 7*time.Second, "how long to run")
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
	fmt.Println(spin(time.Now().Add(*run)) != 1)
}
