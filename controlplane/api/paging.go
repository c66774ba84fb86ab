package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// page is the paging of a list endpoint other than videos: limit (1-100,
// default 20) and starting_after (the id of the last item of the previous page).
type page struct {
	limit         int
	startingAfter string
}

func parsePage(r *http.Request) (page, *apierr.Error) {
	q := r.URL.Query()
	for k := range q {
		if k != "limit" && k != "starting_after" {
			return page{}, apierr.Invalid(k, fmt.Sprintf("unknown query parameter %q; use limit or starting_after", k))
		}
	}
	limit, e := parseLimit(q)
	if e != nil {
		return page{}, e
	}
	return page{limit: limit, startingAfter: q.Get("starting_after")}, nil
}

// parseLimit reads a list's limit: 1-100, default 20.
func parseLimit(q url.Values) (int, *apierr.Error) {
	if !q.Has("limit") {
		return 20, nil
	}
	n, err := strconv.Atoi(q.Get("limit"))
	if err != nil || n < 1 || n > 100 {
		return 0, apierr.Invalid("limit", "limit must be an integer from 1 to 100").With("minimum", 1).With("maximum", 100)
	}
	return n, nil
}

// writePage answers one page of items (newest first) in the list shape every
// list endpoint uses.
func writePage[T, J any](w http.ResponseWriter, r *http.Request, pg page, items []T, id func(T) string, view func(T) J) {
	start := 0
	if pg.startingAfter != "" {
		start = -1
		for i, it := range items {
			if id(it) == pg.startingAfter {
				start = i + 1
				break
			}
		}
		if start < 0 {
			apierr.Write(w, r, apierr.Invalid("starting_after", "starting_after must be the id of an item of this list"))
			return
		}
	}
	rest := items[start:]
	out := listJSON[J]{Object: "list", Data: make([]J, 0, min(len(rest), pg.limit)), Total: len(items), HasMore: len(rest) > pg.limit}
	for _, it := range rest[:min(len(rest), pg.limit)] {
		out.Data = append(out.Data, view(it))
	}
	out.Count = len(out.Data)
	apierr.WriteJSON(w, http.StatusOK, out)
}
