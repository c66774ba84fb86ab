package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/webhook"
)

// The account event log (GET /v1/events): an addition to the contract.
// Every event of the account, oldest first, whether or not an endpoint
// receives it, each with the id its webhook delivery carries.

// eventListJSON is the list shape without total: counting an account's
// whole log would read all of it.
type eventListJSON struct {
	Object  string                `json:"object"`
	Data    []webhook.EventObject `json:"data"`
	Count   int                   `json:"count"`
	HasMore bool                  `json:"has_more"`
}

func (a *API) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if k != "after" && k != "limit" && k != "type" {
			apierr.Write(w, r, apierr.Invalid(k, fmt.Sprintf("unknown query parameter %q; use after, limit or type", k)))
			return
		}
	}
	limit, e := parseLimit(q)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	types, e := parseEventTypes(q["type"])
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	page, err := a.fsm.Events(fsm.EventQuery{AccountID: principalOf(r).AccountID, After: q.Get("after"), Types: types, Limit: limit})
	switch {
	case errors.Is(err, fsm.ErrEventNotFound):
		apierr.Write(w, r, apierr.Invalid("after", fmt.Sprintf("after must be the id of an event of this account from the last %d days",
			int(fsm.EventLogRetention.Hours()/24))))
		return
	case err != nil:
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	exp := a.readExpiry()
	out := eventListJSON{Object: "list", Data: make([]webhook.EventObject, 0, len(page.Events)), HasMore: page.HasMore}
	for _, ev := range page.Events {
		ej := webhook.EventObject{ID: ev.ID, Object: "event", Type: ev.Type, Created: unixOf(ev.Created)}
		if ev.Webhook != nil {
			ej.Data.Webhook = a.WebhookObject(*ev.Webhook)
		} else {
			ej.Data.Video = a.videoView(fsm.QueuedVideo{Video: ev.Video, QueuePosition: ev.QueuePosition,
				WaitReason: ev.WaitReason, WaitMessage: ev.WaitMessage}, exp)
		}
		out.Data = append(out.Data, ej)
	}
	out.Count = len(out.Data)
	apierr.WriteJSON(w, http.StatusOK, out)
}

// parseEventTypes reads the type filter: one or more types, repeated or
// separated by commas.
func parseEventTypes(values []string) ([]string, *apierr.Error) {
	var types []string
	for _, v := range values {
		for _, typ := range strings.Split(v, ",") {
			if !slices.Contains(fsm.LogEventTypes, typ) {
				return nil, apierr.Invalid("type", fmt.Sprintf("type %q is not an event type", typ)).With("allowed", fsm.LogEventTypes)
			}
			if !slices.Contains(types, typ) {
				types = append(types, typ)
			}
		}
	}
	return types, nil
}
