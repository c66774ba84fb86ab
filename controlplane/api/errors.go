package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
)

func (a *API) buyCreditsURL() string { return a.cfg.AppURL + "/billing/credits" }
func (a *API) upgradeURL() string    { return a.cfg.AppURL + "/billing/plans" }

// fromApply turns what a command's apply or proposal returned into the API error.
func (a *API) fromApply(r *http.Request, err error) *apierr.Error {
	var ins *fsm.InsufficientCreditsError
	var dup *fsm.DuplicateRequestError
	var unusable *fsm.AssetUnusableError
	var inUse *fsm.InUseError
	var limit *fsm.LimitError
	var notUnderstood *raftnode.NotUnderstoodError
	var notCancelable *fsm.NotCancelableError
	switch {
	case errors.As(err, &unusable):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, unusable.Error()).
			With("asset_id", unusable.AssetID).With("reason", unusable.Reason)
	case errors.Is(err, fsm.ErrBrandKitNotFound):
		return apierr.Invalid("brand_kit_id", "no such brand kit in this account; list kits with GET /v1/brand-kits")
	case errors.Is(err, fsm.ErrAssetNotFound):
		return apierr.NotFound("asset")
	// invalid_request is a 400 in the contract's table, whatever the cause.
	case errors.As(err, &inUse):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest,
			fmt.Sprintf("this %s is still used; delete or finish what uses it first", inUse.What)).With("used_by", inUse.UsedBy)
	case errors.As(err, &limit):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest,
			fmt.Sprintf("this account holds the most %s it may (%d); delete some first", limit.What, limit.Limit)).With("max_count", limit.Limit)
	case errors.As(err, &ins):
		return apierr.New(http.StatusPaymentRequired, apierr.CodeInsufficientCredits,
			"not enough credits for this video; buy credits in the app, or choose a shorter duration or lower resolution").
			With("required_credits", ins.Required).With("remaining_credits", ins.Remaining).
			Link("buy_credits", a.buyCreditsURL())
	case errors.Is(err, fsm.ErrFreeLimitReached):
		return apierr.New(http.StatusForbidden, apierr.CodeFreeLimitReached,
			"the free plan includes one video project and this account has used it; upgrade to Pro or Max to render more").
			Link("upgrade", a.upgradeURL())
	case errors.Is(err, fsm.ErrUpgradeRequired):
		return apierr.New(http.StatusForbidden, apierr.CodeUpgradeRequired,
			"rendering needs a premium plan (Pro or Max); upgrade the account, then call this endpoint again").
			Link("upgrade", a.upgradeURL())
	case errors.As(err, &dup):
		return apierr.New(http.StatusConflict, apierr.CodeDuplicateRequest,
			"this Idempotency-Key was already used with a different body; reuse the existing video or send a new key").
			With("existing_video_id", dup.ExistingVideoID)
	case errors.Is(err, fsm.ErrVideoNotFound):
		return apierr.NotFound("video")
	case errors.Is(err, fsm.ErrFolderNotFound):
		return apierr.Invalid("folder_id", "no such folder for this account; list folders with GET /v1/folders")
	case errors.As(err, &notCancelable):
		return apierr.New(http.StatusConflict, apierr.CodeVideoNotCancelable,
			"only a queued or processing video can be canceled; this one has finished or is a free preview, which renders nothing").
			With("status", notCancelable.Status)
	case errors.Is(err, fsm.ErrNotPreview):
		return apierr.Invalid("id", "only a video created as a free preview can be rendered with this endpoint; this one renders already")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The client left or the commit took longer than the request may wait; the
		// command may still commit, so the client should retry idempotently.
		e := apierr.New(http.StatusServiceUnavailable, apierr.CodeInternalError,
			"the request ended before its change was confirmed; retry with the same Idempotency-Key")
		e.RetryAfter = 1
		return e
	case errors.As(err, &notUnderstood):
		// Which nodes lag is the operator's business: the log names them.
		a.log.Warn("request refused: a cluster member does not understand its command yet", "request_id", apierr.RequestID(r.Context()),
			"command", notUnderstood.Type.String(), "members", notUnderstood.Describe())
		e := apierr.New(http.StatusServiceUnavailable, apierr.CodeInternalError,
			"the service is being upgraded and cannot do this until the upgrade completes; retry later").
			With("reason", "cluster_upgrade_in_progress").With("command", notUnderstood.Type.String())
		e.RetryAfter = 30
		return e
	case errors.Is(err, raftnode.ErrNotLeader), errors.Is(err, raftnode.ErrTimeout):
		e := apierr.New(http.StatusServiceUnavailable, apierr.CodeInternalError,
			"the control plane is electing a leader or overloaded; retry with exponential backoff")
		e.RetryAfter = 1
		return e
	}
	a.log.Error("apply failed", "request_id", apierr.RequestID(r.Context()), "err", err)
	return apierr.Internal()
}
