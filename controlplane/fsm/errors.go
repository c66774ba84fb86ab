package fsm

import (
	"errors"
	"fmt"
)

var (
	// ErrAccountNotFound means the command named an account that does not exist.
	ErrAccountNotFound = errors.New("account not found")
	// ErrKeyNotFound means the command named an API key that does not exist.
	ErrKeyNotFound = errors.New("api key not found")
	// ErrVideoNotFound means the video does not exist for the account that asked.
	ErrVideoNotFound = errors.New("video not found")
	// ErrFolderNotFound means the folder does not exist for the account that asked.
	ErrFolderNotFound = errors.New("folder not found")
	// ErrInsufficientCredits means the balance does not cover the charge; the
	// concrete error is *InsufficientCreditsError.
	ErrInsufficientCredits = errors.New("insufficient credits")
	// ErrFreeLimitReached means a free account already used its one free project.
	ErrFreeLimitReached = errors.New("free video project already used")
	// ErrUpgradeRequired means the operation needs a premium plan.
	ErrUpgradeRequired = errors.New("premium plan required")
	// ErrNotPreview means a render-from-preview was asked for a video that was not
	// created as a preview.
	ErrNotPreview = errors.New("video is not a preview")
	// ErrDuplicateRequest means an idempotency key was reused with another body; the
	// concrete error is *DuplicateRequestError.
	ErrDuplicateRequest = errors.New("idempotency key reused with a different body")
	// ErrInvalidTransition means a lifecycle command does not apply to the video's
	// current status (completing a failed video, say).
	ErrInvalidTransition = errors.New("invalid video status transition")
	// ErrInvalidCommand means a well-formed command carries values Apply refuses
	// (a negative grant, an unknown plan).
	ErrInvalidCommand = errors.New("invalid command")
	// ErrWebhookLimitReached means the account already has the most active webhook
	// endpoints the contract allows (MaxWebhooksPerAccount).
	ErrWebhookLimitReached = errors.New("webhook endpoint limit reached")
	// ErrWebhookNotFound means the endpoint does not exist for the account that asked.
	ErrWebhookNotFound = errors.New("webhook endpoint not found")
	// ErrDeliveryNotFound means no delivery of that event to that endpoint exists
	// (never written, or pruned).
	ErrDeliveryNotFound = errors.New("webhook delivery not found")
	// ErrDeliveryFinished means the delivery was already delivered, abandoned or
	// cancelled: an attempt that raced with its end is not recorded.
	ErrDeliveryFinished = errors.New("webhook delivery already finished")
	// ErrWebhookDisabled means the endpoint is disabled: nothing is sent to it
	// (no test event, no retry) until EnableWebhook.
	ErrWebhookDisabled = errors.New("webhook endpoint disabled")
	// ErrEventNotFound means the account's event log holds no event of that id
	// (never written, another account's, or trimmed after its retention).
	ErrEventNotFound = errors.New("event not found")
	// ErrInconsistent is a record the state must hold and does not (a
	// video's record, which is never forgotten, that an event or an
	// idempotency record refers to): a broken state, answered as an internal
	// error, never as a client's mistake.
	ErrInconsistent = errors.New("inconsistent state")
)

// InsufficientCreditsError carries the numbers a client needs to top up.
type InsufficientCreditsError struct {
	Required  int64
	Remaining int64
}

func (e *InsufficientCreditsError) Error() string {
	return fmt.Sprintf("insufficient credits: %d required, %d remaining", e.Required, e.Remaining)
}

// Is makes errors.Is(err, ErrInsufficientCredits) true.
func (e *InsufficientCreditsError) Is(target error) bool { return target == ErrInsufficientCredits }

// DuplicateRequestError names the video the idempotency key already produced.
type DuplicateRequestError struct {
	ExistingVideoID string
}

func (e *DuplicateRequestError) Error() string {
	return fmt.Sprintf("idempotency key already used for video %s with a different body", e.ExistingVideoID)
}

// Is makes errors.Is(err, ErrDuplicateRequest) true.
func (e *DuplicateRequestError) Is(target error) bool { return target == ErrDuplicateRequest }

// TransitionError says which status a lifecycle command found.
type TransitionError struct {
	VideoID string
	From    string
	To      string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("video %s: cannot move from %s to %s", e.VideoID, e.From, e.To)
}

// Is makes errors.Is(err, ErrInvalidTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrInvalidTransition }

var (
	// ErrAssetNotFound means the asset does not exist for the account that asked.
	ErrAssetNotFound = errors.New("asset not found")
	// ErrBrandKitNotFound means the brand kit does not exist for the account that asked.
	ErrBrandKitNotFound = errors.New("brand kit not found")
	// ErrAssetUnusable means an asset cannot be used (or completed) as asked; the
	// concrete error is *AssetUnusableError.
	ErrAssetUnusable = errors.New("asset not usable")
	// ErrInUse means an object is still used by another and was kept; the
	// concrete error is *InUseError.
	ErrInUse = errors.New("still in use")
	// ErrLimitReached means an account holds as many objects of a kind as it
	// may; the concrete error is *LimitError.
	ErrLimitReached = errors.New("limit reached")
)

// AssetUnusableError says which asset and why.
type AssetUnusableError struct {
	AssetID string
	Reason  string
}

func (e *AssetUnusableError) Error() string {
	return fmt.Sprintf("asset %s cannot be used: %s", e.AssetID, e.Reason)
}

// Is makes errors.Is(err, ErrAssetUnusable) true.
func (e *AssetUnusableError) Is(target error) bool { return target == ErrAssetUnusable }

// InUseError names what still uses an object.
type InUseError struct {
	What   string // "asset", "brand kit"
	ID     string
	UsedBy []string // brand kit and video ids
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s %s is used by %v", e.What, e.ID, e.UsedBy)
}

// Is makes errors.Is(err, ErrInUse) true.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// LimitError names the per-account limit that was reached.
type LimitError struct {
	What  string
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("an account may hold at most %d %s", e.Limit, e.What)
}

// Is makes errors.Is(err, ErrLimitReached) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimitReached }
