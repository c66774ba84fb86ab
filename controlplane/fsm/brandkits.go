package fsm

import (
	"fmt"
	"slices"
)

// MaxBrandKitsPerAccount bounds an account's brand kits.
const MaxBrandKitsPerAccount = 100

// BrandKit is an account's visual identity for auto videos: the composite
// draws its colours (lower-third bar, accent line) and its logo.
type BrandKit struct {
	ID            string   `msgpack:"id"`
	AccountID     string   `msgpack:"account"`
	Name          string   `msgpack:"name"`
	Colors        []string `msgpack:"colors,omitempty"` // "#rrggbb", most prominent first
	Fonts         []string `msgpack:"fonts,omitempty"`
	MotionStyle   string   `msgpack:"motion_style,omitempty"`
	BrandIdentity string   `msgpack:"brand_identity,omitempty"`
	LogoURL       string   `msgpack:"logo_url,omitempty"`
	LogoAssetID   string   `msgpack:"logo_asset,omitempty"`
	CreatedAt     int64    `msgpack:"created_at"`
}

// Clone returns a deep copy of the kit.
func (k BrandKit) Clone() BrandKit {
	k.Colors = cloneStrings(k.Colors)
	k.Fonts = cloneStrings(k.Fonts)
	return k
}

// CreateBrandKit records a validated kit; the leader chose its id and time.
type CreateBrandKit struct {
	Kit BrandKit `msgpack:"kit"`
}

// DeleteBrandKit forgets a kit no unfinished video uses.
type DeleteBrandKit struct {
	KitID     string `msgpack:"kit"`
	AccountID string `msgpack:"account"`
}

func (CreateBrandKit) Type() MessageType { return CreateBrandKitType }
func (DeleteBrandKit) Type() MessageType { return DeleteBrandKitType }

func (s *state) applyCreateBrandKit(c *CreateBrandKit) (BrandKit, error) {
	k := c.Kit.Clone()
	if _, ok := s.accounts[k.AccountID]; !ok {
		return BrandKit{}, fmt.Errorf("create brand kit for %s: %w", k.AccountID, ErrAccountNotFound)
	}
	if k.ID == "" {
		return BrandKit{}, fmt.Errorf("%w: a brand kit needs an id", ErrInvalidCommand)
	}
	if _, dup := s.kits[k.ID]; dup {
		return BrandKit{}, fmt.Errorf("%w: brand kit %s exists", ErrInvalidCommand, k.ID)
	}
	if k.LogoAssetID != "" {
		if err := s.usableAsset(k.AccountID, k.LogoAssetID); err != nil {
			return BrandKit{}, err
		}
	}
	if len(s.accountKits[k.AccountID]) >= MaxBrandKitsPerAccount {
		return BrandKit{}, &LimitError{What: "brand kits", Limit: MaxBrandKitsPerAccount}
	}
	s.kits[k.ID] = &k
	s.accountKits[k.AccountID] = append(s.accountKits[k.AccountID], k.ID)
	return k.Clone(), nil
}

func (s *state) applyDeleteBrandKit(c *DeleteBrandKit) (BrandKit, error) {
	k, ok := s.kits[c.KitID]
	if !ok || k.AccountID != c.AccountID {
		return BrandKit{}, fmt.Errorf("brand kit %s: %w", c.KitID, ErrBrandKitNotFound)
	}
	if users := s.unfinishedVideos(c.AccountID, func(sp *Spec) bool { return sp.BrandKitID == k.ID }); len(users) > 0 {
		return BrandKit{}, &InUseError{What: "brand kit", ID: k.ID, UsedBy: users}
	}
	delete(s.kits, k.ID)
	s.accountKits[c.AccountID] = slices.DeleteFunc(s.accountKits[c.AccountID], func(id string) bool { return id == k.ID })
	return k.Clone(), nil
}

// BrandKit returns the account's kit with that id; an empty accountID matches
// any account (the agent API's view).
func (f *FSM) BrandKit(accountID, id string) (BrandKit, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	k, ok := f.s.kits[id]
	if !ok || (accountID != "" && k.AccountID != accountID) {
		return BrandKit{}, false
	}
	return k.Clone(), true
}

// BrandKits lists an account's kits, newest first.
func (f *FSM) BrandKits(accountID string) []BrandKit {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ids := f.s.accountKits[accountID]
	out := make([]BrandKit, 0, len(ids))
	for i := len(ids) - 1; i >= 0; i-- {
		out = append(out, f.s.kits[ids[i]].Clone())
	}
	return out
}
