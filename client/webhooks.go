package client

import (
	"context"
	"errors"
	"net/url"
	"strconv"
)

// Webhook endpoints: register and delete them, list them, read and retry
// their deliveries, send a test event, rotate the signing secret, enable a
// disabled endpoint.

// The endpoints' own event types (the videos' are in events.go):
// webhook.disabled goes to the account's other endpoints subscribed to it
// and into the event log; webhook.test only to the endpoint tested.
const (
	EventWebhookDisabled = "webhook.disabled"
	EventWebhookTest     = "webhook.test"
)

// Webhook endpoint statuses.
const (
	WebhookEnabled  = "enabled"
	WebhookDisabled = "disabled"
)

// WebhookEndpoint is a registered endpoint (the WebhookEndpoint schema).
// Secret is set only by CreateWebhook and RotateWebhookSecret.
type WebhookEndpoint struct {
	ID        string   `json:"id"`
	Object    string   `json:"object"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	Secret    string   `json:"secret,omitempty"`
	CreatedAt int64    `json:"created_at"`
	// Status is WebhookEnabled or WebhookDisabled (every attempt failed for
	// 5 days; nothing is sent until EnableWebhook).
	Status     string `json:"status"`
	DisabledAt *int64 `json:"disabled_at,omitempty"`
	// PreviousSecretExpiresAt is when the secret before the last rotation
	// stops signing beside the current one; nil when only one signs.
	PreviousSecretExpiresAt *int64 `json:"previous_secret_expires_at,omitempty"`
}

// CreateWebhookRequest is the body of CreateWebhook (the CreateWebhookRequest
// schema).
type CreateWebhookRequest struct {
	// URL is the public https address events are POSTed to.
	URL string `json:"url"`
	// Events are the event types sent to the endpoint (EventVideoCompleted,
	// EventVideoFailed, EventVideoCanceled, EventWebhookDisabled); nil means
	// the server's default, video.completed and video.failed.
	Events []string `json:"events,omitempty"`
}

// WebhookDeleted is the answer of DeleteWebhook (the WebhookDeleted schema),
// the shape every delete answers.
type WebhookDeleted = Deleted

// DeliveryAttempt is one attempt of a delivery.
type DeliveryAttempt struct {
	AttemptedAt int64 `json:"attempted_at"`
	// ResponseStatus is nil when no HTTP answer came (Error says why).
	ResponseStatus *int   `json:"response_status"`
	LatencyMS      int64  `json:"latency_ms"`
	Error          string `json:"error,omitempty"`
}

// WebhookDelivery is one event on its way to one endpoint (the
// WebhookDelivery schema). Status: pending, delivered, abandoned, cancelled.
type WebhookDelivery struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	WebhookID string            `json:"webhook_id"`
	EventID   string            `json:"event_id"`
	EventType string            `json:"event_type"`
	Status    string            `json:"status"`
	Attempts  []DeliveryAttempt `json:"attempts"`
	// NextRetryAt is set while pending, nil while the endpoint is disabled.
	NextRetryAt *int64 `json:"next_retry_at"`
	CreatedAt   int64  `json:"created_at"`
	FinishedAt  *int64 `json:"finished_at"`
}

// DeliveryList is one page of an endpoint's deliveries, newest first; it has
// no total.
type DeliveryList struct {
	Object  string            `json:"object"`
	Data    []WebhookDelivery `json:"data"`
	Count   int               `json:"count"`
	HasMore bool              `json:"has_more"`
}

// ListDeliveriesParams pages GET /v1/webhooks/{id}/deliveries.
type ListDeliveriesParams struct {
	Limit         int    // 1 to 100 (server default 20)
	StartingAfter string // a delivery id
}

func webhookPath(id string, rest ...string) (string, error) {
	if id == "" {
		return "", errors.New("vidfarm: empty webhook id")
	}
	p := "/v1/webhooks/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p, nil
}

// webhookCall sends a call about an endpoint and decodes the answer.
func webhookCall[T any](ctx context.Context, c *Client, method, webhookID string, q url.Values, rest ...string) (*T, error) {
	path, err := webhookPath(webhookID, rest...)
	if err != nil {
		return nil, err
	}
	var v T
	if err := c.do(ctx, method, path, q, nil, "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// CreateWebhook registers an endpoint and returns it with its signing secret
// in Secret: the only time the secret is shown, so store it. An account has at
// most 5 enabled endpoints: a sixth is an *Error with code
// webhook_limit_reached (Details: max_endpoints, existing_webhook_ids).
//
// The call is sent once, never retried: a registration carries no
// Idempotency-Key, so a retry after a lost answer would register a second
// endpoint with a second secret, and every event would be delivered twice.
// After an error without an answer, or a 5xx, the endpoint may exist:
// ListWebhooks shows it (without its secret); delete it, or rotate its
// secret to learn one.
func (c *Client) CreateWebhook(ctx context.Context, req CreateWebhookRequest) (*WebhookEndpoint, error) {
	var w WebhookEndpoint
	if err := c.sendOnce(ctx, "POST", "/v1/webhooks", req, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// DeleteWebhook deletes an endpoint; its deliveries waiting for a retry are
// cancelled. An unknown id, or another account's, is an *Error with code
// not_found.
//
// The call is retried like a read: deleting twice deletes one endpoint. But
// when an attempt whose answer was lost did delete it, the retry is answered
// 404; DeleteWebhook then returns what the lost answer said (the endpoint,
// deleted), since the endpoint is gone as asked. A 404 to the first attempt
// is an error; a 404 to a retry is taken as deleted even when the earlier
// attempt had done nothing (a 503): either way no such endpoint exists.
func (c *Client) DeleteWebhook(ctx context.Context, webhookID string) (*WebhookDeleted, error) {
	return deleteCall(ctx, c, "/v1/webhooks/", "webhook_endpoint", webhookID)
}

// ListWebhooks reads every endpoint of the account, oldest first.
func (c *Client) ListWebhooks(ctx context.Context) (*List[WebhookEndpoint], error) {
	var l List[WebhookEndpoint]
	if err := c.do(ctx, "GET", "/v1/webhooks", nil, nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListWebhookDeliveries reads one page of an endpoint's deliveries, each
// with every attempt.
func (c *Client) ListWebhookDeliveries(ctx context.Context, webhookID string, p ListDeliveriesParams) (*DeliveryList, error) {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.StartingAfter != "" {
		q.Set("starting_after", p.StartingAfter)
	}
	return webhookCall[DeliveryList](ctx, c, "GET", webhookID, q, "deliveries")
}

// RetryWebhookDelivery makes a delivered or abandoned delivery pending again,
// due now; it keeps its attempts and its retry schedule carries on from them
// (an abandoned one gets one more attempt). A pending delivery is answered
// unchanged, so the call is safe to repeat.
func (c *Client) RetryWebhookDelivery(ctx context.Context, webhookID, deliveryID string) (*WebhookDelivery, error) {
	if deliveryID == "" {
		return nil, errors.New("vidfarm: empty delivery id")
	}
	return webhookCall[WebhookDelivery](ctx, c, "POST", webhookID, nil, "deliveries", url.PathEscape(deliveryID), "retry")
}

// TestWebhook sends a signed webhook.test event to the endpoint and returns
// its delivery (pending). A retried call may send a second test event.
func (c *Client) TestWebhook(ctx context.Context, webhookID string) (*WebhookDelivery, error) {
	return webhookCall[WebhookDelivery](ctx, c, "POST", webhookID, nil, "test")
}

// RotateWebhookSecret gives the endpoint a new signing secret, in the
// answer's Secret (shown once). The previous secret signs beside it until
// PreviousSecretExpiresAt. The call is sent once, never retried: a second
// rotation would end the previous secret's overlap at once.
func (c *Client) RotateWebhookSecret(ctx context.Context, webhookID string) (*WebhookEndpoint, error) {
	path, err := webhookPath(webhookID, "rotate_secret")
	if err != nil {
		return nil, err
	}
	var w WebhookEndpoint
	if err := c.sendOnce(ctx, "POST", path, nil, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// EnableWebhook enables a disabled endpoint: what waited is sent. Enabling
// an enabled endpoint returns it unchanged.
func (c *Client) EnableWebhook(ctx context.Context, webhookID string) (*WebhookEndpoint, error) {
	return webhookCall[WebhookEndpoint](ctx, c, "POST", webhookID, nil, "enable")
}
