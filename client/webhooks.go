package client

import (
	"context"
	"errors"
	"net/url"
	"strconv"
)

// Webhook endpoints: list them, read and retry their deliveries, send a test
// event, rotate the signing secret, enable a disabled endpoint.

// Webhook event types.
const (
	EventVideoCompleted  = "video.completed"
	EventVideoFailed     = "video.failed"
	EventVideoCanceled   = "video.canceled"
	EventWebhookDisabled = "webhook.disabled"
	EventWebhookTest     = "webhook.test"
)

// Webhook endpoint statuses.
const (
	WebhookEnabled  = "enabled"
	WebhookDisabled = "disabled"
)

// WebhookEndpoint is a registered endpoint (the WebhookEndpoint schema).
// Secret is set only by RotateWebhookSecret (and registration).
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

// RetryWebhookDelivery makes one more attempt of a delivery now. Retrying a
// pending delivery changes nothing, so the call is safe to repeat.
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
	if err := c.doOnce(ctx, "POST", path, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// EnableWebhook enables a disabled endpoint: what waited is sent. Enabling
// an enabled endpoint returns it unchanged.
func (c *Client) EnableWebhook(ctx context.Context, webhookID string) (*WebhookEndpoint, error) {
	return webhookCall[WebhookEndpoint](ctx, c, "POST", webhookID, nil, "enable")
}
