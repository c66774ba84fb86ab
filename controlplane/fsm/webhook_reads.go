package fsm

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
)

// Webhooks returns the account's endpoints in creation order, secrets included:
// callers that answer clients must leave the secret out.
func (f *FSM) Webhooks(accountID string) []Webhook {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ids := f.s.accountWebhooks[accountID]
	out := make([]Webhook, 0, len(ids))
	for _, id := range ids {
		out = append(out, f.s.webhooks[id].clone())
	}
	return out
}

// DueDelivery is a pending delivery with what it takes to send it.
// OldSecret is the endpoint's previous secret while it still signs beside
// Secret (RotateWebhookSecret); empty otherwise.
type DueDelivery struct {
	Delivery
	Event     Event
	Secret    string
	OldSecret string
}

// due reports whether d waits for an attempt at now. A first attempt is due at
// once whatever the clocks say, so a leader whose clock runs behind the one that
// wrote the event does not hold it back.
func due(d *Delivery, now int64) bool {
	return len(d.Attempts) == 0 || d.NextAt <= now
}

// DueOptions narrows DueDeliveries and NextDeliveryAt for a deliverer that
// keeps attempts in flight while it asks for more. The zero value narrows
// nothing.
type DueOptions struct {
	// Skip holds the ids (Delivery.ID) of the deliveries being attempted:
	// they are not returned, so none is sent twice at once.
	Skip map[string]bool
	// PerWebhook, when positive, caps the deliveries to one endpoint that are
	// returned plus those Busy counts for it, so that a backlog to a few slow
	// endpoints cannot take every slot of the deliverer.
	PerWebhook int
	// Busy counts the attempts in flight per endpoint (webhook id).
	Busy map[string]int
	// BusyAccounts counts the attempts in flight per account: the account
	// with the fewest is served first (DueDeliveries).
	BusyAccounts map[string]int
}

// room is how many more deliveries to the endpoint may be returned.
func (o DueOptions) room(webhookID string) int {
	if o.PerWebhook <= 0 {
		return math.MaxInt
	}
	return o.PerWebhook - o.Busy[webhookID]
}

// dueEntry is a due delivery as DueDeliveries ranks it: those to an endpoint
// whose last attempt failed after those to one that answers, then the
// longest waiting first, ties by id.
type dueEntry struct {
	d       *Delivery
	failing bool
}

func (a dueEntry) before(b dueEntry) bool {
	if a.failing != b.failing {
		return b.failing
	}
	return a.d.NextAt < b.d.NextAt || (a.d.NextAt == b.d.NextAt && a.d.ID() < b.d.ID())
}

// dueList is one account's first due deliveries by rank that fit their
// endpoints' caps, at most limit of them, kept sorted by insertion: the
// deliverer asks for a small batch, and sorting every pending delivery each
// round would cost it more than the scan. With a cap, an endpoint's
// deliveries in es are its first ones that fit (taken counts them): a later
// one of a full endpoint is passed over, an earlier one takes the place of
// its latest.
type dueList struct {
	account string
	es      []dueEntry
	taken   map[string]int // per webhook id, with a cap
	// DueDeliveries' merge: the first not yet handed out, and the
	// account's attempts in flight plus those handed out.
	next, served int
}

func (l *dueList) offer(e dueEntry, limit int, opt DueOptions) {
	if len(l.es) == limit && !e.before(l.es[limit-1]) {
		return
	}
	if w := e.d.WebhookID; opt.PerWebhook > 0 {
		room := opt.room(w)
		if room <= 0 {
			return
		}
		if l.taken == nil {
			l.taken = make(map[string]int)
		}
		if l.taken[w] >= room {
			j := len(l.es) - 1 // its latest: taken says es holds one
			for l.es[j].d.WebhookID != w {
				j--
			}
			if !e.before(l.es[j]) {
				return
			}
			l.es = slices.Delete(l.es, j, j+1)
			l.taken[w]--
		}
		l.taken[w]++
	}
	i, _ := slices.BinarySearchFunc(l.es, e, func(x, y dueEntry) int {
		if x.before(y) {
			return -1
		}
		return 1
	})
	l.es = slices.Insert(l.es, i, e)
	if len(l.es) > limit {
		if l.taken != nil {
			l.taken[l.es[limit].d.WebhookID]--
		}
		l.es = l.es[:limit]
	}
}

// dueHeap orders the accounts' lists: the fewest served first, ties to the
// higher ranked next delivery (distinct deliveries: a total order, so the
// answer does not depend on the order the scan met them).
type dueHeap []*dueList

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	return a.served < b.served || (a.served == b.served && a.es[a.next].before(b.es[b.next]))
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(*dueList)) }
func (h *dueHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	*h = old[:len(old)-1]
	return l
}

// DueDeliveries returns up to limit pending deliveries due at now (Unix ns),
// leaving out those opt skips and those past their endpoint's cap. It serves
// accounts in turn: each next one is of the account with the fewest attempts
// (in flight, opt.BusyAccounts, plus those already returned), and of its
// deliveries those to endpoints that answer go before those to endpoints
// whose last attempt failed, then the longest waiting (ties between accounts
// go the same way). So when every slot is held by receivers that hang, the
// first to free goes to an account that has none in flight, to a receiver
// that answers, and a healthy account's event still goes out within the
// contract's minute.
func (f *FSM) DueDeliveries(now int64, limit int, opt DueOptions) []DueDelivery {
	if limit <= 0 {
		return nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	lists := make(map[string]*dueList)
	for wid, keys := range f.s.pending.byHook {
		w := f.s.webhooks[wid]
		if (w != nil && w.Disabled()) || opt.room(wid) <= 0 {
			continue // waiting for EnableWebhook, or for its attempts in flight
		}
		failing := w != nil && w.FailingSince != 0
		var l *dueList // an endpoint's deliveries are one account's
		for key := range keys {
			d := f.s.deliveries.mem[key] // pending: in memory
			if !due(d, now) || opt.Skip[key] {
				continue
			}
			if l == nil {
				if l = lists[d.AccountID]; l == nil {
					l = &dueList{account: d.AccountID}
					lists[d.AccountID] = l
				}
			}
			l.offer(dueEntry{d: d, failing: failing}, limit, opt)
		}
	}
	h := make(dueHeap, 0, len(lists))
	for _, l := range lists {
		if len(l.es) > 0 {
			l.served = opt.BusyAccounts[l.account]
			h = append(h, l)
		}
	}
	heap.Init(&h)
	ds := make([]*Delivery, 0, limit)
	for len(ds) < limit && len(h) > 0 {
		l := h[0]
		ds = append(ds, l.es[l.next].d)
		l.next++
		l.served++
		if l.next == len(l.es) {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
	out := make([]DueDelivery, 0, len(ds))
	for _, d := range ds {
		e, ok := f.s.events.get(d.EventID)
		if !ok { // cannot happen: an event stays while it has deliveries
			panic("fsm: pending delivery " + d.ID() + " has no event")
		}
		dd := DueDelivery{Delivery: d.clone(), Event: *e}
		dd.Event.Video = dd.Event.Video.Clone()
		if e.Webhook != nil {
			dd.Event.Webhook = e.Webhook.public()
		}
		if w := f.s.webhooks[d.WebhookID]; w != nil {
			dd.Secret = w.Secret
			if w.OldSecret != "" && now < w.OldSecretUntil {
				dd.OldSecret = w.OldSecret
			}
		}
		out = append(out, dd)
	}
	return out
}

// NextDeliveryAt is when the earliest pending delivery is due (Unix ns); false
// when none is pending. An unattempted delivery is due at math.MinInt64: now.
// Deliveries to disabled endpoints wait for EnableWebhook, not for a time, and
// those opt skips or whose endpoint has no room under its cap wait for an
// attempt in flight to end: the deliverer hears of that without a timer.
func (f *FSM) NextDeliveryAt(opt DueOptions) (int64, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	next, found := int64(math.MaxInt64), false
	for wid, keys := range f.s.pending.byHook {
		if w := f.s.webhooks[wid]; (w != nil && w.Disabled()) || opt.room(wid) <= 0 {
			continue
		}
		for key := range keys {
			if opt.Skip[key] {
				continue
			}
			d := f.s.deliveries.mem[key]
			at := d.NextAt
			if len(d.Attempts) == 0 {
				at = math.MinInt64
			}
			next, found = min(next, at), true
		}
	}
	return next, found
}

// DeliveryFilter selects deliveries for operators; empty fields match all.
type DeliveryFilter struct {
	AccountID string
	WebhookID string
	EventID   string
	State     string
	Limit     int // 0 means all
}

// Deliveries returns the deliveries the filter selects, newest first.
func (f *FSM) Deliveries(q DeliveryFilter) []Delivery {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Delivery
	match := func(d *Delivery) bool {
		return (q.AccountID == "" || d.AccountID == q.AccountID) && (q.WebhookID == "" || d.WebhookID == q.WebhookID) &&
			(q.EventID == "" || d.EventID == q.EventID) && (q.State == "" || d.State == q.State)
	}
	if q.WebhookID != "" && q.EventID == "" {
		// One endpoint's: its index, newest first, read up to the limit and
		// the ties of the last one (the index breaks ties by key, this
		// answer by id ascending).
		var last int64
		f.s.deliveries.eachInGroup(q.WebhookID, "", func(_ string, d *Delivery) bool {
			if q.Limit > 0 && len(out) >= q.Limit && d.CreatedAt != last {
				return false
			}
			if match(d) {
				out, last = append(out, d.clone()), d.CreatedAt
			}
			return true
		})
	} else {
		prefix := ""
		if q.EventID != "" {
			prefix = deliveryKey(q.EventID, "")
		}
		// Without an event or an endpoint, every delivery kept is read: this
		// serves operators, not clients.
		f.s.deliveries.each(prefix, func(_ string, d *Delivery) bool {
			if match(d) {
				out = append(out, d.clone())
			}
			return true
		})
	}
	slices.SortFunc(out, func(a, b Delivery) int {
		if a.CreatedAt != b.CreatedAt {
			return cmp.Compare(b.CreatedAt, a.CreatedAt)
		}
		return cmp.Compare(a.ID(), b.ID())
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}

// Event returns the outbox event with that id.
func (f *FSM) Event(id string) (Event, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, ok := f.s.events.get(id)
	if !ok {
		return Event{}, false
	}
	out := *e
	out.Video = out.Video.Clone()
	if e.Webhook != nil {
		out.Webhook = e.Webhook.public()
	}
	return out, true
}

// PendingDeliveries counts the deliveries waiting for an attempt.
func (f *FSM) PendingDeliveries() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.pending.len()
}

// DeliveryPage is a page of an endpoint's deliveries, newest first.
type DeliveryPage struct {
	Deliveries []EndpointDelivery
	HasMore    bool
	// Disabled: the endpoint is disabled, so its pending deliveries wait.
	Disabled bool
}

// EndpointDelivery is a delivery with its event's type.
type EndpointDelivery struct {
	Delivery
	EventType string
}

// WebhookDeliveries lists the deliveries to one of the account's endpoints,
// newest first, up to limit, after the delivery startingAfter (its ID;
// "" for the newest). It reads the deliveries table's index by endpoint:
// the cost is the page, not the endpoint's history.
func (f *FSM) WebhookDeliveries(accountID, webhookID, startingAfter string, limit int) (DeliveryPage, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	w, ok := f.s.webhooks[webhookID]
	if !ok || w.AccountID != accountID {
		return DeliveryPage{}, fmt.Errorf("deliveries of %s: %w", webhookID, ErrWebhookNotFound)
	}
	page := DeliveryPage{Disabled: w.Disabled()}
	found := f.s.deliveries.eachInGroup(webhookID, startingAfter, func(_ string, d *Delivery) bool {
		if len(page.Deliveries) == limit {
			page.HasMore = true
			return false
		}
		ed := EndpointDelivery{Delivery: d.clone()}
		if e, ok := f.s.events.get(d.EventID); ok {
			ed.EventType = e.Type
		}
		page.Deliveries = append(page.Deliveries, ed)
		return true
	})
	if !found {
		return DeliveryPage{}, fmt.Errorf("deliveries of %s after %q: %w", webhookID, startingAfter, ErrDeliveryNotFound)
	}
	return page, nil
}

// FailingWebhooks returns the enabled endpoints whose run of failed attempts,
// first to latest, spans at least minFailing (Unix ns): those the leader's
// job disables. Endpoints are few (5 per account) and in memory.
func (f *FSM) FailingWebhooks(minFailing int64) []Webhook {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Webhook
	for _, w := range f.s.webhooks {
		if !w.Disabled() && w.FailingSince != 0 && w.LastFailedAt-w.FailingSince >= minFailing {
			out = append(out, w.clone())
		}
	}
	slices.SortFunc(out, func(a, b Webhook) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// DisabledWaiting returns the endpoints disabled at or before before that
// still hold deliveries waiting (for AbandonDisabled), by id.
func (f *FSM) DisabledWaiting(before int64) []Webhook {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Webhook
	for _, w := range f.s.webhooks {
		if w.Disabled() && w.DisabledAt <= before && len(f.s.pending.byHook[w.ID]) > 0 {
			out = append(out, w.clone())
		}
	}
	slices.SortFunc(out, func(a, b Webhook) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// DisabledWebhooks counts the disabled endpoints (a metric).
func (f *FSM) DisabledWebhooks() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := 0
	for _, w := range f.s.webhooks {
		if w.Disabled() {
			n++
		}
	}
	return n
}
