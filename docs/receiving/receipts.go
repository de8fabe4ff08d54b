package webhooks

import "sync"

// Gap is the sequences skipped before an event, From to To included: fetch them from
// GET /v3/events?webhook=…&after=<From - 1>.
type Gap struct{ From, To int64 }

// Receipts records which events each stream (one per webhook) has received: every id once, and the
// sequences skipped. In memory to keep it short: keep both in your database, with a unique key on
// (stream, id) so that two deliveries of one event at once take it once.
type Receipts struct {
	mu      sync.Mutex
	seen    map[[2]string]bool
	highest map[string]int64
}

// NewReceipts returns empty receipts.
func NewReceipts() *Receipts {
	return &Receipts{seen: map[[2]string]bool{}, highest: map[string]int64{}}
}

// Record returns first = false for an event already received (answer 2xx, do nothing), and the gap
// before it, if any. A sequence of 0 is none: webhook.test events carry no sequence.
func (r *Receipts) Record(stream, id string, sequence int64) (first bool, gap *Gap) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := [2]string{stream, id}
	if r.seen[key] {
		return false, nil
	}
	r.seen[key] = true
	if sequence == 0 {
		return true, nil
	}
	highest := r.highest[stream]
	if sequence > highest {
		r.highest[stream] = sequence
	}
	if sequence > highest+1 {
		return true, &Gap{From: highest + 1, To: sequence - 1}
	}
	return true, nil
}
