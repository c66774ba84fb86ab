package fsm

import (
	"cmp"
	"fmt"
	"slices"
)

// Asset states. An asset is pending from POST /v1/assets until its bytes were
// uploaded and checked (POST /v1/assets/{id}/complete); only ready assets are
// used by videos, avatars and brand kits.
const (
	AssetPending = "pending"
	AssetReady   = "ready"
)

// MaxAssetsPerAccount bounds an account's assets, pending ones included, so that
// one account cannot grow the replicated state without end.
const MaxAssetsPerAccount = 1000

// Asset is a file an account uploaded to use in its videos. Its id is also its
// asset_id. The bytes live in the blob store under BlobKey.
type Asset struct {
	ID          string `msgpack:"id"`
	AccountID   string `msgpack:"account"`
	Filename    string `msgpack:"filename"`
	ContentType string `msgpack:"content_type"`
	Size        int64  `msgpack:"size"` // declared at creation; checked on completion
	Status      string `msgpack:"status"`
	BlobKey     string `msgpack:"blob"`
	CreatedAt   int64  `msgpack:"created_at"`
	CompletedAt int64  `msgpack:"completed_at"`
}

// CreateAsset records a pending asset; the leader chose its id and blob key.
type CreateAsset struct {
	Asset Asset `msgpack:"asset"`
}

// CompleteAsset marks a pending asset ready. The leader checked the stored blob
// (Apply cannot read it) and carries what it found; Apply refuses a size that is
// not the declared one. Completing a ready asset again changes nothing.
type CompleteAsset struct {
	AssetID     string `msgpack:"asset"`
	AccountID   string `msgpack:"account"`
	StoredSize  int64  `msgpack:"stored_size"`
	ContentType string `msgpack:"content_type"`
	Now         int64  `msgpack:"now"`
}

// DeleteAsset forgets an asset; the leader deletes its blob once it committed.
// An asset still used by a brand kit or an unfinished video is kept.
type DeleteAsset struct {
	AssetID   string `msgpack:"asset"`
	AccountID string `msgpack:"account"`
	// OnlyPending is set by the leader's expiry of abandoned uploads: an asset
	// completed since the leader read it is kept.
	OnlyPending bool `msgpack:"only_pending,omitempty"`
}

func (CreateAsset) Type() MessageType   { return CreateAssetType }
func (CompleteAsset) Type() MessageType { return CompleteAssetType }
func (DeleteAsset) Type() MessageType   { return DeleteAssetType }

func (s *state) applyCreateAsset(c *CreateAsset) (Asset, error) {
	as := c.Asset
	if _, ok := s.accounts[as.AccountID]; !ok {
		return Asset{}, fmt.Errorf("create asset for %s: %w", as.AccountID, ErrAccountNotFound)
	}
	if as.ID == "" || as.BlobKey == "" || as.Size <= 0 {
		return Asset{}, fmt.Errorf("%w: an asset needs an id, a blob key and a positive size", ErrInvalidCommand)
	}
	if _, dup := s.assets[as.ID]; dup {
		return Asset{}, fmt.Errorf("%w: asset %s exists", ErrInvalidCommand, as.ID)
	}
	if n := len(s.accountAssets[as.AccountID]); n >= MaxAssetsPerAccount {
		return Asset{}, &LimitError{What: "assets", Limit: MaxAssetsPerAccount}
	}
	as.Status, as.CompletedAt = AssetPending, 0
	s.assets[as.ID] = &as
	s.accountAssets[as.AccountID] = append(s.accountAssets[as.AccountID], as.ID)
	return as, nil
}

// asset returns the account's asset with that id.
func (s *state) asset(accountID, id string) (*Asset, error) {
	as, ok := s.assets[id]
	if !ok || as.AccountID != accountID {
		return nil, fmt.Errorf("asset %s: %w", id, ErrAssetNotFound)
	}
	return as, nil
}

func (s *state) applyCompleteAsset(c *CompleteAsset) (Asset, error) {
	as, err := s.asset(c.AccountID, c.AssetID)
	if err != nil {
		return Asset{}, err
	}
	if as.Status == AssetReady {
		return *as, nil
	}
	if c.StoredSize != as.Size {
		return Asset{}, &AssetUnusableError{AssetID: as.ID,
			Reason: fmt.Sprintf("%d bytes were uploaded but %d were declared", c.StoredSize, as.Size)}
	}
	if c.ContentType != as.ContentType {
		return Asset{}, &AssetUnusableError{AssetID: as.ID,
			Reason: fmt.Sprintf("the uploaded bytes are %s but %s was declared", c.ContentType, as.ContentType)}
	}
	as.Status, as.CompletedAt = AssetReady, c.Now
	return *as, nil
}

func (s *state) applyDeleteAsset(c *DeleteAsset) (Asset, error) {
	as, err := s.asset(c.AccountID, c.AssetID)
	if err != nil {
		return Asset{}, err
	}
	if c.OnlyPending && as.Status != AssetPending {
		return Asset{}, &AssetUnusableError{AssetID: as.ID, Reason: "completed since it was found pending; kept"}
	}
	var users []string
	for _, id := range s.accountKits[c.AccountID] {
		if s.kits[id].LogoAssetID == as.ID {
			users = append(users, id)
		}
	}
	users = append(users, s.unfinishedVideos(c.AccountID, func(sp *Spec) bool { return slices.Contains(sp.FileAssetIDs, as.ID) })...)
	users = append(users, s.photoAvatarsUsing(c.AccountID, as.ID)...)
	if len(users) > 0 {
		return Asset{}, &InUseError{What: "asset", ID: as.ID, UsedBy: users}
	}
	delete(s.assets, as.ID)
	s.accountAssets[c.AccountID] = slices.DeleteFunc(s.accountAssets[c.AccountID], func(id string) bool { return id == as.ID })
	return *as, nil
}

// unfinishedVideos lists the account's queued and processing videos (and
// previews, which may still be rendered) whose spec uses something.
func (s *state) unfinishedVideos(accountID string, uses func(*Spec) bool) []string {
	var out []string
	for _, id := range s.accountVideos[accountID] {
		v := s.videos[id]
		switch v.Status {
		case StatusQueued, StatusProcessing, StatusPreview:
			if uses(&v.Spec) {
				out = append(out, v.ID)
			}
		}
	}
	return out
}

// checkVideoAssets refuses a spec whose brand kit or file assets are not the
// account's own, ready ones.
func (s *state) checkVideoAssets(accountID string, sp *Spec) error {
	if sp.BrandKitID != "" {
		if k, ok := s.kits[sp.BrandKitID]; !ok || k.AccountID != accountID {
			return fmt.Errorf("brand kit %s: %w", sp.BrandKitID, ErrBrandKitNotFound)
		}
	}
	for _, id := range sp.FileAssetIDs {
		if err := s.usableAsset(accountID, id); err != nil {
			return err
		}
	}
	return nil
}

// usableAsset refuses an asset that is not the account's or not ready.
func (s *state) usableAsset(accountID, id string) error {
	as, ok := s.assets[id]
	switch {
	case !ok || as.AccountID != accountID:
		return &AssetUnusableError{AssetID: id, Reason: "no such asset in this account"}
	case as.Status != AssetReady:
		return &AssetUnusableError{AssetID: id, Reason: "the asset's upload was not completed (POST /v1/assets/" + id + "/complete)"}
	}
	return nil
}

// Asset returns the account's asset with that id; an empty accountID matches
// any account (the agent API's view).
func (f *FSM) Asset(accountID, id string) (Asset, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	as, ok := f.s.assets[id]
	if !ok || (accountID != "" && as.AccountID != accountID) {
		return Asset{}, false
	}
	return *as, true
}

// Assets lists an account's assets, newest first.
func (f *FSM) Assets(accountID string) []Asset {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ids := f.s.accountAssets[accountID]
	out := make([]Asset, 0, len(ids))
	for i := len(ids) - 1; i >= 0; i-- {
		out = append(out, *f.s.assets[ids[i]])
	}
	return out
}

// PendingAssets lists the assets of every account created before the given
// time (Unix nanoseconds) and still pending, oldest first.
func (f *FSM) PendingAssets(before int64) []Asset {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Asset
	for _, as := range f.s.assets {
		if as.Status == AssetPending && as.CreatedAt < before {
			out = append(out, *as)
		}
	}
	slices.SortFunc(out, func(a, b Asset) int { return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID)) })
	return out
}
