package fsm

import (
	"errors"
	"fmt"
	"math"

	"github.com/vidfarm/vidfarm/scheduler"
)

// StatusCanceled is a video its owner stopped (POST /v1/videos/{id}/cancel):
// an addition to the contract's statuses, final like completed and failed.
const StatusCanceled = "canceled"

// CancelVideo stops a queued or processing video of the account and refunds
// what was not rendered (CancelRefund). Canceling a canceled video answers
// it again, changing nothing.
type CancelVideo struct {
	VideoID   string `msgpack:"video"`
	AccountID string `msgpack:"account"`
	Now       int64  `msgpack:"now"`
}

func (CancelVideo) Type() MessageType { return CancelVideoType }

// CancelVideoResult is the video as the cancel left it; Already is true when
// it was canceled before (nothing changed).
type CancelVideoResult struct {
	Video   Video
	Already bool
}

// ErrNotCancelable means the video cannot be canceled in its status: it
// finished (completed or failed) or is a preview, which renders nothing.
// The error is a *NotCancelableError, which says the status.
var ErrNotCancelable = errors.New("video cannot be canceled")

// NotCancelableError is ErrNotCancelable with the video's status.
type NotCancelableError struct {
	VideoID string
	Status  string
}

func (e *NotCancelableError) Error() string {
	return fmt.Sprintf("cancel %s: the video is %s: %v", e.VideoID, e.Status, ErrNotCancelable)
}

func (e *NotCancelableError) Is(target error) bool { return target == ErrNotCancelable }

// CancelRefund is what canceling a video refunds: its charge less the part
// of it the finished tasks did, by the scheduler's task weights
// (scheduler.DoneShare), rounded down in the customer's favour. A queued
// video, or one whose running tasks have not finished, is refunded in full;
// work in progress is never charged.
func CancelRefund(charged int64, doneShare float64) int64 {
	used := int64(math.Floor(float64(charged) * min(max(doneShare, 0), 1)))
	return charged - used
}

func (s *state) applyCancelVideo(c *CancelVideo) (CancelVideoResult, error) {
	v, seq, ok := s.lookupVideo(c.VideoID)
	if !ok || v.AccountID != c.AccountID {
		return CancelVideoResult{}, fmt.Errorf("cancel %s: %w", c.VideoID, ErrVideoNotFound)
	}
	switch v.Status {
	case StatusCanceled:
		return CancelVideoResult{Video: v.Clone(), Already: true}, nil
	case StatusQueued, StatusProcessing:
	default:
		return CancelVideoResult{}, &NotCancelableError{VideoID: v.ID, Status: v.Status}
	}
	if _, inMem := s.videos[v.ID]; !inMem { // cannot happen: an unfinished video is hot
		s.keepVideo(v, seq)
	}
	share, err := s.sched.DoneShare(v.ID)
	if err != nil && !errors.Is(err, scheduler.ErrUnknownVideo) {
		return CancelVideoResult{}, fmt.Errorf("cancel %s: %w", v.ID, err)
	}
	if _, err := s.sched.Cancel(v.ID, timeOf(c.Now)); err == nil || errors.Is(err, scheduler.ErrWrongState) {
		_ = s.sched.Forget(v.ID)
	}
	refund := CancelRefund(v.CreditsCharged, share)
	if a := s.accounts[v.AccountID]; a != nil && refund > 0 {
		s.move(a, LedgerRefund, refund, v.ID, "", c.Now)
	}
	s.collectIntermediates(v) // a canceled video delivers nothing
	v.Status = StatusCanceled
	v.CreditsRefunded = refund > 0
	v.RefundedCredits = refund
	v.FinishedAt, v.UpdatedAt = c.Now, c.Now
	s.emitVideoEvent(v, c.Now)
	s.videoChanged(v, c.Now)
	return CancelVideoResult{Video: v.Clone()}, nil
}
