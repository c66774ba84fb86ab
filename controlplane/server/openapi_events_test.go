package server_test

import "net/url"

// eventExchanges runs GET /v1/events through the document's validator
// (called from TestOpenAPIDocumentMatchesServer): a log with a created and
// a canceled video, the filters and the refusals.
func eventExchanges(o *oas, h *harness) {
	startedLog(o.t, h)
	_, key := h.account("pro", 1000)
	id := h.create(key, manualReq("duration_seconds", 5))["id"].(string)
	h.do("POST", "/v1/videos/"+id+"/cancel", key, nil)
	const tpl = "/v1/events"
	all := o.run(h, exchange{name: "events", method: "GET", path: "/v1/events", key: key, status: 200, template: tpl})
	first := all["data"].([]any)[0].(map[string]any)["id"].(string)
	o.run(h, exchange{name: "events, a page", method: "GET", path: "/v1/events?limit=1&after=" + first, key: key, status: 200, template: tpl})
	o.run(h, exchange{name: "events of two types", method: "GET", path: "/v1/events?type=video.created&type=video.canceled", key: key, status: 200, template: tpl})
	o.run(h, exchange{name: "events of an unknown type", method: "GET", path: "/v1/events?type=video.started", key: key,
		req: reqInvalid, status: 400, code: "invalid_request", template: tpl})
	o.run(h, exchange{name: "events after an unknown event", method: "GET", path: "/v1/events?after=" + url.QueryEscape("evt_unknown"), key: key,
		status: 400, code: "invalid_request", template: tpl})
	o.run(h, exchange{name: "events, limit too large", method: "GET", path: "/v1/events?limit=101", key: key,
		req: reqInvalid, status: 400, code: "invalid_request", template: tpl})
}
