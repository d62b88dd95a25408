// Command workers runs a pool of three workers sharing the anycast role "resizer" (SPEC §4):
// a producer sends twenty tasks to the role, never to a worker, and each task is processed by
// exactly one of them. The role's work queue (TASK_<space>, consumed through the one durable
// svc_resizer that every holder of the role binds, SPEC §8) hands each task to one worker and
// removes it once acknowledged; a task whose worker fails is handed out again.
//
// How the tasks spread over the workers depends on who is free to pull, so the counts vary
// from run to run; their sum does not.
//
//	go run ./examples/workers
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

const (
	role    = "resizer"
	workers = 3
	tasks   = 20
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// tally counts which worker processed which task.
type tally struct {
	mu       sync.Mutex
	byWorker map[string]int
	byTask   map[string]int
	done     chan struct{} // closed once every task was processed
}

// record notes that worker processed task, and closes done when the last distinct task of
// the run arrives.
func (t *tally) record(worker, task string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byWorker[worker]++
	t.byTask[task]++
	if len(t.byTask) == tasks && t.byTask[task] == 1 {
		close(t.done)
	}
}

func run(ctx context.Context) (err error) {
	m, err := space.Start(ctx, space.Options{Memory: true})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := m.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
	}()

	t := &tally{byWorker: map[string]int{}, byTask: map[string]int{}, done: make(chan struct{})}
	for i := 1; i <= workers; i++ {
		name := fmt.Sprintf("resizer-%d", i)
		// The role is part of the credential (SPEC §9): only its holders bind svc_resizer.
		_, err := m.Endpoint(ctx, space.AgentSpec{Name: name, Grants: provisioner.Grants{Role: role},
			Endpoint: endpoint.Options{Handler: worker(name, t)}})
		if err != nil {
			return err
		}
	}

	producer, err := m.Endpoint(ctx, space.AgentSpec{Name: "producer"})
	if err != nil {
		return err
	}
	for i := 1; i <= tasks; i++ {
		task := wire.TextPart(fmt.Sprintf("resize photo-%02d.jpg to 640x480", i))
		if _, err := producer.SendAnycast(ctx, role, []wire.Part{task}); err != nil {
			return err
		}
	}
	fmt.Printf("producer sent %d tasks to the role %q\n", tasks, role)

	select {
	case <-t.done:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the workers: %w", ctx.Err())
	}
	return t.report()
}

// worker is a resizer's Handler. Returning nil acknowledges the task, which removes it from
// the queue; an error would put it back for any worker (SPEC §4).
func worker(name string, t *tally) endpoint.Handler {
	return func(_ context.Context, d endpoint.Delivery) error {
		if d.Meta.Kind != endpoint.MetaAnycast {
			return nil
		}
		t.record(name, d.Message.ID)
		return nil
	}
}

// report prints the per-worker counts and fails if any task was processed twice.
func (t *tally) report() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.byWorker))
	for name := range t.byWorker {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Printf("%s processed %d\n", name, t.byWorker[name])
	}
	for task, n := range t.byTask {
		if n != 1 {
			return fmt.Errorf("task %s was processed %d times", task, n)
		}
	}
	fmt.Printf("%d tasks processed, each exactly once\n", len(t.byTask))
	return nil
}
