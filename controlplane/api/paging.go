package api

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// page is the paging of a list endpoint other than videos: limit (1-100,
// default 20) and starting_after (the id of the last item of the previous page).
type page struct {
	limit         int
	startingAfter string
}

// pageParams are the query parameters of a list that takes no filter.
var pageParams = []string{"limit", "starting_after"}

// parsePage reads the paging of a list whose query is pageParams alone.
func parsePage(r *http.Request) (page, *apierr.Error) {
	q := r.URL.Query()
	if e := checkQuery(q, pageParams); e != nil {
		return page{}, e
	}
	return pageOf(q)
}

// pageOf reads limit and starting_after from a query its list has already
// checked for unknown and repeated parameters, so that a list with filters
// pages the way the others do.
func pageOf(q url.Values) (page, *apierr.Error) {
	limit, e := parseLimit(q)
	if e != nil {
		return page{}, e
	}
	return page{limit: limit, startingAfter: q.Get("starting_after")}, nil
}

// checkWholeListQuery refuses any query parameter on a list that is always
// answered whole (the model catalog, an account's few webhook endpoints).
// Paging parameters get a message of their own: a client sending them
// expects pages, and should learn it already has everything.
func checkWholeListQuery(q url.Values, endpoint string) *apierr.Error {
	if len(q) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(q))
	for _, k := range keys {
		if slices.Contains(pageParams, k) {
			return apierr.Invalid(k, fmt.Sprintf("query parameter %q is not taken here: %s returns the whole list in one page (has_more is always false)", k, endpoint)).
				With("allowed", []string{})
		}
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = strconv.Quote(k)
	}
	return apierr.Invalid(keys[0], fmt.Sprintf("unknown query parameter %s; %s takes none: it returns the whole list in one page", strings.Join(names, ", "), endpoint)).
		With("allowed", []string{})
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

// writePage answers one page of items, in the order given, in the list shape
// every list endpoint uses.
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
