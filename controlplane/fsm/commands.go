package fsm

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Command is implemented by every payload; it names its message type.
type Command interface {
	Type() MessageType
}

// CreateAccount opens an account with its first API key.
type CreateAccount struct {
	AccountID string   `msgpack:"account"`
	Name      string   `msgpack:"name"`
	Plan      string   `msgpack:"plan"`
	Credits   int64    `msgpack:"credits"`
	KeyID     string   `msgpack:"key"`
	KeyHash   [32]byte `msgpack:"key_hash"`
	KeyHint   string   `msgpack:"key_hint"`
	Now       int64    `msgpack:"now"`
}

// CreateKey adds an API key to an account.
type CreateKey struct {
	AccountID string   `msgpack:"account"`
	KeyID     string   `msgpack:"key"`
	KeyHash   [32]byte `msgpack:"key_hash"`
	KeyHint   string   `msgpack:"key_hint"`
	Now       int64    `msgpack:"now"`
}

// RevokeKey revokes an API key for good.
type RevokeKey struct {
	KeyID string `msgpack:"key"`
	Now   int64  `msgpack:"now"`
}

// GrantCredits adds credits to an account (purchases, goodwill).
type GrantCredits struct {
	AccountID string `msgpack:"account"`
	Amount    int64  `msgpack:"amount"`
	Now       int64  `msgpack:"now"`
}

// SetPlan changes an account's plan.
type SetPlan struct {
	AccountID string `msgpack:"account"`
	Plan      string `msgpack:"plan"`
	Now       int64  `msgpack:"now"`
}

// CreateFolder adds a folder to an account's library.
type CreateFolder struct {
	FolderID  string `msgpack:"folder"`
	AccountID string `msgpack:"account"`
	Name      string `msgpack:"name"`
	Now       int64  `msgpack:"now"`
}

// CreateVideo checks the balance, charges it and records the video, all at once.
// A free account's first video becomes a preview instead; its second is refused.
type CreateVideo struct {
	VideoID   string `msgpack:"video"`
	AccountID string `msgpack:"account"`
	Spec      Spec   `msgpack:"spec"`
	Price     int64  `msgpack:"price"`
	// IdempotencyKey is empty when the client sent none.
	IdempotencyKey string   `msgpack:"idem_key,omitempty"`
	BodyHash       [32]byte `msgpack:"body_hash"`
	Now            int64    `msgpack:"now"`
}

// RenderPreview queues a previewed project for rendering, free of charge, once the
// account is premium. Applying it to an already rendered preview changes nothing.
type RenderPreview struct {
	VideoID   string `msgpack:"video"`
	AccountID string `msgpack:"account"`
	Now       int64  `msgpack:"now"`
}

// FailVideo marks a video failed and refunds its charge in the same step.
type FailVideo struct {
	VideoID string `msgpack:"video"`
	Reason  string `msgpack:"reason"`
	Now     int64  `msgpack:"now"`
}

// ExpireIdempotency forgets idempotency records created before Before.
type ExpireIdempotency struct {
	Before int64 `msgpack:"before"`
}

func (CreateAccount) Type() MessageType     { return CreateAccountType }
func (CreateKey) Type() MessageType         { return CreateKeyType }
func (RevokeKey) Type() MessageType         { return RevokeKeyType }
func (GrantCredits) Type() MessageType      { return GrantCreditsType }
func (SetPlan) Type() MessageType           { return SetPlanType }
func (CreateFolder) Type() MessageType      { return CreateFolderType }
func (CreateVideo) Type() MessageType       { return CreateVideoType }
func (RenderPreview) Type() MessageType     { return RenderPreviewType }
func (FailVideo) Type() MessageType         { return FailVideoType }
func (ExpireIdempotency) Type() MessageType { return ExpireIdempotencyType }

// Encode turns a command into a log entry: its type byte, then its msgpack payload.
func Encode(c Command) ([]byte, error) {
	// The same bytes as the type and msgpack.Marshal(c), written into one
	// buffer sized for a typical command: Marshal's buffer grew from empty
	// by doubling and was then copied, about a tenth of what a create
	// allocated in its handler.
	buf := bytes.NewBuffer(append(make([]byte, 0, encodeRoom), byte(c.Type())))
	enc := msgpack.GetEncoder()
	enc.Reset(buf)
	err := enc.Encode(c)
	msgpack.PutEncoder(enc)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", c.Type(), err)
	}
	return buf.Bytes(), nil
}

// encodeRoom is the buffer Encode starts with: a create's command is
// a few hundred bytes.
const encodeRoom = 512

// Decode reads a log entry back into its command.
func Decode(entry []byte) (Command, error) {
	if len(entry) == 0 {
		return nil, fmt.Errorf("decode: empty log entry")
	}
	e := registry[entry[0]]
	if e.new == nil {
		return nil, fmt.Errorf("decode: unknown message type %d (this binary applies types up to %d): a newer release wrote it; start that release on this data directory", entry[0], Understood())
	}
	c := e.new()
	if err := msgpack.Unmarshal(entry[1:], c); err != nil {
		return nil, fmt.Errorf("decode %s: %w", MessageType(entry[0]), err)
	}
	return c, nil
}

// CreateWebhook registers an endpoint. Secret is the signing secret, kept in the
// state because every delivery is signed with it; reads never return it.
type CreateWebhook struct {
	WebhookID string   `msgpack:"webhook"`
	AccountID string   `msgpack:"account"`
	URL       string   `msgpack:"url"`
	Events    []string `msgpack:"events"`
	Secret    string   `msgpack:"secret"`
	Now       int64    `msgpack:"now"`
}

// DeleteWebhook removes an endpoint; its deliveries still pending are cancelled.
type DeleteWebhook struct {
	WebhookID string `msgpack:"webhook"`
	AccountID string `msgpack:"account"`
	Now       int64  `msgpack:"now"`
}

// RecordDelivery records one delivery attempt, made by the leader at At. Apply
// decides from it whether the delivery is done, retried (and when) or abandoned.
type RecordDelivery struct {
	EventID   string `msgpack:"event"`
	WebhookID string `msgpack:"webhook"`
	At        int64  `msgpack:"at"`
	// Status is the HTTP status the receiver answered; 0 when there was none.
	Status    int    `msgpack:"status"`
	Error     string `msgpack:"error,omitempty"`
	LatencyMS int64  `msgpack:"latency_ms"`
}

// PruneDeliveries forgets deliveries that finished before Before, and the events
// left with no delivery.
type PruneDeliveries struct {
	Before int64 `msgpack:"before"`
}

func (CreateWebhook) Type() MessageType   { return CreateWebhookType }
func (DeleteWebhook) Type() MessageType   { return DeleteWebhookType }
func (RecordDelivery) Type() MessageType  { return RecordDeliveryType }
func (PruneDeliveries) Type() MessageType { return PruneDeliveriesType }
