package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"os"
	"runtime/pprof"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestScratch(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now()
	m, err := space.Start(ctx, space.Options{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	fmt.Println("start", time.Since(t0))
	N := 300
	t0 = time.Now()
	creds := make([][]byte, N)
	for i := range N {
		c, err := m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: fmt.Sprintf("a%d", i), Profile: provisioner.ProfileAgent, NoExpiry: true}, true)
		if err != nil {
			t.Fatal(err)
		}
		creds[i], _ = c.Creds()
	}
	fmt.Println("mint", N, time.Since(t0))
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	t0 = time.Now()
	eps := make([]*endpoint.Endpoint, N)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range N {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			e, err := endpoint.Connect(ctx, endpoint.Options{InProcess: m.InProcess(), Space: "main", Creds: creds[i]})
			if err != nil {
				t.Error(err)
				return
			}
			eps[i] = e
		}()
	}
	wg.Wait()
	fmt.Println("connect", N, time.Since(t0))
	for {
		n := 0
		for _, p := range eps[0].Roster().Snapshot() {
			if p.Online {
				n++
			}
		}
		if n >= N {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println("converged observer", time.Since(t0))
	time.Sleep(3 * time.Second)
	c0, w0 := cpuNow(), time.Now()
	time.Sleep(6 * time.Second)
	fmt.Printf("cpu share %.1f%%\n", 100*float64(cpuNow()-c0)/float64(time.Since(w0)))
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	f,_:=os.Create("/tmp/heap.prof"); pprof.WriteHeapProfile(f); f.Close()
	fmt.Println("heap per ep KiB", float64(ms1.HeapAlloc-ms0.HeapAlloc)/float64(N)/1024)
	t0 = time.Now()
	for _, e := range eps {
		wg.Add(1)
		go func() { defer wg.Done(); e.Close(ctx) }()
	}
	wg.Wait()
	fmt.Println("close", time.Since(t0))
}
