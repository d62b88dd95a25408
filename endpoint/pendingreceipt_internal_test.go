package endpoint

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestPendingReceiptDoneAndWaitAgreeWithSettle checks a receipt's Done, Err, Receipt and Wait
// whether the outcome is known before Done is first asked for or after.
func TestPendingReceiptDoneAndWaitAgreeWithSettle(t *testing.T) {
	refused := errors.New("refused")
	for _, tc := range []struct {
		name        string
		doneFirst   bool
		err         error
		wantReceipt Receipt
	}{
		{"settled first", false, nil, Receipt{ID: "m1", Stream: "INST", Seq: 7}},
		{"Done first", true, nil, Receipt{ID: "m1", Stream: "INST", Seq: 7}},
		{"refused, settled first", false, refused, Receipt{}},
		{"refused, Done first", true, refused, Receipt{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &PendingReceipt{id: "m1", subject: "cotal.main.inst.u.a"}
			var done <-chan struct{}
			if tc.doneFirst {
				done = p.Done()
				select {
				case <-done:
					t.Fatal("Done is closed before the outcome is known")
				default:
				}
				if p.Err() != nil || p.Receipt() != (Receipt{}) {
					t.Fatalf("before the outcome: Err %v, Receipt %+v", p.Err(), p.Receipt())
				}
			}
			p.settle(tc.wantReceipt, tc.err)
			if !tc.doneFirst {
				done = p.Done()
			}
			select {
			case <-done:
			default:
				t.Fatal("Done is not closed once the outcome is known")
			}
			r, err := p.Wait(context.Background())
			if !errors.Is(err, tc.err) || !errors.Is(p.Err(), tc.err) {
				t.Fatalf("Wait error %v, Err %v, want %v", err, p.Err(), tc.err)
			}
			if r != tc.wantReceipt || p.Receipt() != tc.wantReceipt {
				t.Fatalf("Wait receipt %+v, Receipt %+v, want %+v", r, p.Receipt(), tc.wantReceipt)
			}
		})
	}
}

// TestPendingReceiptWaitersWakeOnSettle has many goroutines ask for Done and Wait while the
// outcome arrives; every one of them returns with it.
func TestPendingReceiptWaitersWakeOnSettle(t *testing.T) {
	p := &PendingReceipt{id: "m1", subject: "cotal.main.inst.u.a"}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				<-p.Done()
				return
			}
			if _, err := p.Wait(context.Background()); err != nil {
				t.Errorf("Wait: %v", err)
			}
		}()
	}
	p.settle(Receipt{ID: "m1", Seq: 1}, nil)
	wg.Wait()
	if p.Receipt().Seq != 1 {
		t.Fatalf("Receipt %+v after settle", p.Receipt())
	}
}
