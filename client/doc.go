// Package client is the Go SDK of vidfarm's public API (/v1).
//
//	c, err := client.New("http://127.0.0.1:8080", apiKey)
//	v, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "A product tour of a solar lantern"})
//	v, err = c.Wait(ctx, v.ID, func(v client.Video) { fmt.Println(v.Status, v.Progress) })
//
// Every call takes a context. Reads, and writes that are safe to repeat, are
// retried on network errors, 429, 5xx and answers marked retryable, with
// exponential backoff and jitter and never sooner than the server's
// Retry-After. A video create always carries an Idempotency-Key
// (WithIdempotencyKey, or a random one made per call and reused on its
// retries), so a retry whose first answer was lost returns the video the
// first attempt made instead of making another. The creates the contract
// gives no Idempotency-Key (a webhook endpoint, an avatar, a speech sample, a
// brand kit, an asset) and a secret rotation are sent once: a retry after a
// lost answer would make a second one. Their doc comments say what to check
// after such an error. A delete is retried, and a 404 to its retry counts as
// deleted.
//
// API errors are *Error values: match them with errors.As or IsCode and the
// Code constants. The types follow the OpenAPI document the server serves (GET
// /v1/openapi.json); a test fails when a schema and a type disagree.
//
// Webhook receivers verify deliveries with VerifyWebhook or VerifyWebhookRequest.
//
// The package imports nothing of the control plane but its webhook signature
// package, so the signer and the verifier share one implementation.
package client
