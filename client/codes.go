package client

// Error codes of the API (the ErrorCode schema), for IsCode and Error.Code.
// The list only grows; an unknown code from a newer server is still an *Error.
const (
	CodeInvalidRequest      = "invalid_request"
	CodeUnknownModel        = "unknown_model"
	CodeInvalidURL          = "invalid_url"
	CodeMissingAPIKey       = "missing_api_key"
	CodeInvalidAPIKey       = "invalid_api_key"
	CodeAPIKeyRevoked       = "api_key_revoked"
	CodeInsufficientCredits = "insufficient_credits"
	CodeUpgradeRequired     = "upgrade_required"
	CodeFreeLimitReached    = "free_limit_reached"
	CodeNotFound            = "not_found"
	CodeDuplicateRequest    = "duplicate_request"
	CodeIdempotencyInFlight = "idempotency_in_flight"
	CodePayloadTooLarge     = "payload_too_large"
	CodeRequestTimeout      = "request_timeout"
	CodeRateLimited         = "rate_limited"
	CodeUpstreamError       = "upstream_error"
	CodeInternalError       = "internal_error"
	CodeAccountNotFound     = "account_not_found"
	CodeWebhookLimitReached = "webhook_limit_reached"
	CodeVideoNotCancelable  = "video_not_cancelable"
	CodeWebhookDisabled     = "webhook_disabled"
)

// codes lists the constants above, for the test that keeps them in step with
// the OpenAPI document.
var codes = []string{
	CodeInvalidRequest,
	CodeUnknownModel,
	CodeInvalidURL,
	CodeMissingAPIKey,
	CodeInvalidAPIKey,
	CodeAPIKeyRevoked,
	CodeInsufficientCredits,
	CodeUpgradeRequired,
	CodeFreeLimitReached,
	CodeNotFound,
	CodeDuplicateRequest,
	CodeIdempotencyInFlight,
	CodePayloadTooLarge,
	CodeRequestTimeout,
	CodeRateLimited,
	CodeUpstreamError,
	CodeInternalError,
	CodeAccountNotFound,
	CodeWebhookLimitReached,
	CodeVideoNotCancelable,
	CodeWebhookDisabled,
}
