package server

import (
	"context"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// DefaultPendingAssetTTL is how long an asset may wait for its upload to be
// completed: a day is ample for a PUT whose URL is valid for an hour.
const DefaultPendingAssetTTL = 24 * time.Hour

// expirePendingAssets deletes the assets created more than PendingAssetTTL ago
// and never completed, then their bytes, so abandoned uploads do not hold an
// account's asset slots or disk space. A pending asset is used by nothing
// (videos and kits take only ready ones); one completed after the read below
// is kept by the command's OnlyPending.
func (s *Server) expirePendingAssets(ctx context.Context) {
	before := time.Now().Add(-s.cfg.PendingAssetTTL).UnixNano()
	for _, as := range s.Node.FSM.PendingAssets(before) {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := s.Node.Apply(actx, &fsm.DeleteAsset{AssetID: as.ID, AccountID: as.AccountID, OnlyPending: true})
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("expire pending asset", "asset_id", as.ID, "err", err)
			continue
		}
		if err := s.Blobs.Delete(ctx, as.BlobKey); err != nil {
			s.log.Warn("delete expired asset's bytes", "asset_id", as.ID, "key", as.BlobKey, "err", err)
		}
		s.log.Info("pending asset expired", "asset_id", as.ID, "account_id", as.AccountID)
	}
}
