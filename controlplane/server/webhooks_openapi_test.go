package server_test

import (
	"net/http"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// webhookExchanges runs the webhook endpoints' answers through the document's
// validator (called from TestOpenAPIDocumentMatchesServer). The node runs the
// production guard, so the public address literal needs no DNS and nothing is
// delivered (no video of the account ends while the endpoints exist).
func webhookExchanges(o *oas, h *harness) {
	_, key := h.account("pro", 0)
	const public = `{"url":"https://93.184.215.14/hooks/vidfarm"}`
	created := o.run(h, exchange{name: "create webhook", method: "POST", path: "/v1/webhooks", key: key,
		body: []byte(public), status: 201, template: "/v1/webhooks"})
	o.run(h, exchange{name: "create webhook, failures only", method: "POST", path: "/v1/webhooks", key: key,
		body: []byte(`{"url":"https://93.184.215.14/f","events":["video.failed"]}`), status: 201, template: "/v1/webhooks"})
	o.run(h, exchange{name: "list webhooks", method: "GET", path: "/v1/webhooks", key: key, status: 200, template: "/v1/webhooks"})
	o.run(h, exchange{name: "private webhook address", method: "POST", path: "/v1/webhooks", key: key,
		body: []byte(`{"url":"https://169.254.169.254/latest"}`), status: 400, code: "invalid_url", template: "/v1/webhooks"})
	o.run(h, exchange{name: "webhook with an unknown event", method: "POST", path: "/v1/webhooks", key: key,
		body: []byte(`{"url":"https://93.184.215.14/x","events":["video.started"]}`), req: reqInvalid, status: 400, code: "invalid_request", template: "/v1/webhooks"})
	o.run(h, exchange{name: "webhook without url", method: "POST", path: "/v1/webhooks", key: key,
		body: []byte(`{"events":["video.failed"]}`), req: reqInvalid, status: 400, code: "invalid_request", template: "/v1/webhooks"})
	for range 3 {
		o.run(h, exchange{name: "create webhook, up to the cap", method: "POST", path: "/v1/webhooks", key: key,
			body: []byte(public), status: 201, template: "/v1/webhooks"})
	}
	o.run(h, exchange{name: "sixth webhook", method: "POST", path: "/v1/webhooks", key: key,
		body: []byte(public), status: 409, code: "webhook_limit_reached", template: "/v1/webhooks"})
	id := created["id"].(string)
	o.run(h, exchange{name: "webhook deliveries, none yet", method: "GET", path: "/v1/webhooks/" + id + "/deliveries?limit=5", key: key,
		status: 200, template: "/v1/webhooks/{id}/deliveries"})
	o.run(h, exchange{name: "webhook deliveries after an unknown delivery", method: "GET", path: "/v1/webhooks/" + id + "/deliveries?starting_after=evt_x.whk_y", key: key,
		status: 400, code: "invalid_request", template: "/v1/webhooks/{id}/deliveries"})
	o.run(h, exchange{name: "retry an unknown delivery", method: "POST", path: "/v1/webhooks/" + id + "/deliveries/evt_x." + id + "/retry", key: key,
		status: 404, code: "not_found", template: "/v1/webhooks/{id}/deliveries/{delivery_id}/retry"})
	o.run(h, exchange{name: "delete webhook", method: "DELETE", path: "/v1/webhooks/" + id, key: key, status: 200, template: "/v1/webhooks/{id}"})
	o.run(h, exchange{name: "delete webhook again", method: "DELETE", path: "/v1/webhooks/" + id, key: key, status: 404, code: "not_found", template: "/v1/webhooks/{id}"})
	o.run(h, exchange{name: "deliveries of a deleted webhook", method: "GET", path: "/v1/webhooks/" + id + "/deliveries", key: key,
		status: 404, code: "not_found", template: "/v1/webhooks/{id}/deliveries"})

	// A delivery to list and retry: a node whose deliverer may reach a
	// receiver on loopback, whose one answer acknowledges it.
	hw := start(o.t, withWebhooks(newFakeClock()))
	_, wkey := hw.account("pro", 100)
	rc := newReceiver(o.t, func(int) int { return http.StatusNoContent })
	whk, _ := hw.registerWebhook(wkey, rc.srv.URL+"/hook")
	evt := fsm.EventID(hw.failedVideo(wkey))
	rc.waitFor(1)
	eventually(o.t, func() bool { return hw.deliveriesOf(evt)[0].State == fsm.DeliveryDelivered }, "the delivery to be acknowledged")
	o.run(hw, exchange{name: "webhook deliveries", method: "GET", path: "/v1/webhooks/" + whk + "/deliveries", key: wkey,
		status: 200, template: "/v1/webhooks/{id}/deliveries"})
	o.run(hw, exchange{name: "retry a delivery", method: "POST", path: "/v1/webhooks/" + whk + "/deliveries/" + evt + "." + whk + "/retry", key: wkey,
		status: 200, template: "/v1/webhooks/{id}/deliveries/{delivery_id}/retry"})
	rc.waitFor(2)
	o.run(hw, exchange{name: "test event", method: "POST", path: "/v1/webhooks/" + whk + "/test", key: wkey,
		status: 200, template: "/v1/webhooks/{id}/test"})
	o.run(hw, exchange{name: "test event to an unknown endpoint", method: "POST", path: "/v1/webhooks/whk_missing/test", key: wkey,
		status: 404, code: "not_found", template: "/v1/webhooks/{id}/test"})
	o.run(hw, exchange{name: "rotate secret", method: "POST", path: "/v1/webhooks/" + whk + "/rotate_secret", key: wkey,
		body: []byte(`{}`), status: 200, template: "/v1/webhooks/{id}/rotate_secret"})
	o.run(hw, exchange{name: "rotate secret with a field", method: "POST", path: "/v1/webhooks/" + whk + "/rotate_secret", key: wkey,
		body: []byte(`{"secret":"whsec_mine"}`), req: reqInvalid, status: 400, code: "invalid_request", template: "/v1/webhooks/{id}/rotate_secret"})
	o.run(hw, exchange{name: "list webhooks during a rotation", method: "GET", path: "/v1/webhooks", key: wkey, status: 200, template: "/v1/webhooks"})
	o.run(hw, exchange{name: "enable an enabled endpoint", method: "POST", path: "/v1/webhooks/" + whk + "/enable", key: wkey,
		status: 200, template: "/v1/webhooks/{id}/enable"})
	o.run(hw, exchange{name: "subscribe to webhook.disabled", method: "POST", path: "/v1/webhooks", key: wkey,
		body: []byte(`{"url":"` + rc.srv.URL + `/d","events":["webhook.disabled"]}`), status: 201, template: "/v1/webhooks"})
	rc.waitFor(3)
}
