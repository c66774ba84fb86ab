package fsm

import "fmt"

// CreateVideoResult is what CreateVideo answers: the video as the creating request
// saw it. On an idempotent replay it is the original answer, not today's state.
type CreateVideoResult struct {
	QueuedVideo
	Replayed bool
}

func (s *state) applyCreateVideo(c *CreateVideo) (CreateVideoResult, error) {
	a, ok := s.accounts[c.AccountID]
	if !ok {
		return CreateVideoResult{}, fmt.Errorf("create video for %s: %w", c.AccountID, ErrAccountNotFound)
	}
	var idemFound bool // an expired record may still be there, to be replaced
	if c.IdempotencyKey != "" {
		rec, ok := s.idem.get(idemID(c.AccountID, c.IdempotencyKey))
		idemFound = ok
		if ok && rec.CreatedAt+IdempotencyTTL > c.Now {
			if rec.BodyHash != c.BodyHash {
				return CreateVideoResult{}, &DuplicateRequestError{ExistingVideoID: rec.VideoID}
			}
			orig, err := s.videoOfRecord(rec.Original, rec.SpecByRef)
			if err != nil {
				return CreateVideoResult{}, fmt.Errorf("replay %s: %w", c.IdempotencyKey, err)
			}
			return CreateVideoResult{QueuedVideo: QueuedVideo{Video: orig, QueuePosition: rec.QueuePosition,
				WaitReason: rec.WaitReason, WaitMessage: rec.WaitMessage}, Replayed: true}, nil
		}
	}
	if f := c.Spec.FolderID; f != "" {
		if fo, ok := s.folders[f]; !ok || fo.AccountID != c.AccountID {
			return CreateVideoResult{}, fmt.Errorf("folder %s: %w", f, ErrFolderNotFound)
		}
	}
	if c.Price < 0 {
		return CreateVideoResult{}, fmt.Errorf("%w: negative price", ErrInvalidCommand)
	}
	if err := s.checkVideoAssets(c.AccountID, &c.Spec); err != nil {
		return CreateVideoResult{}, err
	}
	v := &Video{
		ID: c.VideoID, AccountID: c.AccountID, Spec: c.Spec.Clone(), Price: c.Price,
		CreatedAt: c.Now, UpdatedAt: c.Now,
	}
	if Premium(a.Plan) {
		if a.Credits < c.Price {
			return CreateVideoResult{}, &InsufficientCreditsError{Required: c.Price, Remaining: a.Credits}
		}
		v.Status = StatusQueued
		if err := s.submit(v, a.Plan, c.Now); err != nil {
			return CreateVideoResult{}, err
		}
		s.move(a, LedgerCharge, -c.Price, v.ID, "", c.Now)
		v.CreditsCharged = c.Price
	} else {
		if a.FreeVideoUsed {
			return CreateVideoResult{}, ErrFreeLimitReached
		}
		a.FreeVideoUsed = true
		a.PreviewVideoID = v.ID
		v.Status = StatusPreview
	}
	s.addVideo(v)
	s.videoChanged(v, c.Now)
	res := CreateVideoResult{QueuedVideo: s.queued(v)}
	s.emitCreated(v, res.QueuedVideo, c.Now)
	if c.IdempotencyKey != "" {
		rec := &Idempotency{
			AccountID: c.AccountID, Key: c.IdempotencyKey, BodyHash: c.BodyHash, VideoID: v.ID,
			QueuePosition: res.QueuePosition, WaitReason: res.WaitReason, WaitMessage: res.WaitMessage, CreatedAt: c.Now,
		}
		rec.Original, rec.SpecByRef = s.keptVideo(res.Video.Clone())
		s.idem.set(idemID(c.AccountID, c.IdempotencyKey), rec, idemFound)
	}
	return res, nil
}

func (s *state) applyRenderPreview(c *RenderPreview) (CreateVideoResult, error) {
	v, _, ok := s.lookupVideo(c.VideoID)
	if !ok || v.AccountID != c.AccountID {
		return CreateVideoResult{}, fmt.Errorf("render %s: %w", c.VideoID, ErrVideoNotFound)
	}
	if v.RenderedFromPreview {
		return CreateVideoResult{QueuedVideo: s.queued(v)}, nil
	}
	if v.Status != StatusPreview {
		return CreateVideoResult{}, fmt.Errorf("render %s (status %s): %w", v.ID, v.Status, ErrNotPreview)
	}
	if a := s.accounts[v.AccountID]; a == nil || !Premium(a.Plan) {
		return CreateVideoResult{}, fmt.Errorf("render %s: %w", v.ID, ErrUpgradeRequired)
	}
	if err := s.submit(v, s.accounts[v.AccountID].Plan, c.Now); err != nil {
		return CreateVideoResult{}, err
	}
	v.RenderedFromPreview = true
	v.Status = StatusQueued
	v.UpdatedAt = c.Now
	s.videoChanged(v, c.Now)
	return CreateVideoResult{QueuedVideo: s.queued(v)}, nil
}

func (s *state) video(id string) (*Video, error) {
	v, _, ok := s.lookupVideo(id)
	if !ok {
		return nil, fmt.Errorf("video %s: %w", id, ErrVideoNotFound)
	}
	return v, nil
}

func (s *state) applyFailVideo(c *FailVideo) (Video, error) {
	v, err := s.video(c.VideoID)
	if err != nil {
		return Video{}, err
	}
	if v.Status != StatusQueued && v.Status != StatusProcessing {
		return Video{}, &TransitionError{VideoID: v.ID, From: v.Status, To: StatusFailed}
	}
	s.failVideo(v, c.Reason, c.Now)
	return v.Clone(), nil
}

func (s *state) applyExpireIdempotency(c *ExpireIdempotency) (int, error) {
	// Every record an idempotency key makes is kept IdempotencyTTL.
	n := s.idem.expire(c.Before) + s.debits.expire(c.Before) + s.grants.expire(c.Before) +
		s.accountCreates.expire(c.Before)
	return n, nil
}
