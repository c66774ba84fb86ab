package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// DefaultGarbageInterval is how often the leader deletes the intermediate
// blobs of finished videos.
const DefaultGarbageInterval = 10 * time.Second

// DefaultSpeechRetention is how long a finished speech sample is kept: its
// audio URLs live about a day.
const DefaultSpeechRetention = 7 * 24 * time.Hour

// expireSpeech forgets the finished speech samples older than
// SpeechRetention; their audio goes to the blob janitor. It proposes only
// when there is something to forget.
func (s *Server) expireSpeech(ctx context.Context) {
	before := time.Now().Add(-s.cfg.SpeechRetention).UnixNano()
	if !s.Node.FSM.SpeechExpiryDue(before) {
		return
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := fsm.Do(actx, s.Node, &fsm.ExpireSpeech{Before: before, Now: time.Now().UnixNano()})
	if err != nil {
		if ctx.Err() == nil && !s.gated("expire_speech", err) {
			s.log.Warn("expire speech samples", "err", err)
		}
		return
	}
	s.log.Info("expired speech samples", "count", n, "older_than", s.cfg.SpeechRetention.String())
}

// sweepIntermediates lists for deletion the intermediate artifacts that
// videos finished by a version before the garbage list still hold
// (fsm/sweep.go). It proposes only when there are some: once, after an
// upgrade, when a leader takes over (and hourly, should that fail).
func (s *Server) sweepIntermediates(ctx context.Context) {
	if !s.Node.FSM.IntermediatesLeft() {
		return
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := fsm.Do(actx, s.Node, &fsm.SweepIntermediates{Now: time.Now().UnixNano()})
	if err != nil {
		if ctx.Err() == nil && !s.gated("sweep_intermediates", err) {
			s.log.Warn("sweep the intermediates of videos finished before the garbage list", "err", err)
		}
		return
	}
	s.log.Info("listed the intermediates of videos finished before the garbage list for deletion", "blobs", n)
}

// DefaultUploadSweepInterval is how often each node looks for expired
// uploads (and the leader for expired speech samples).
const DefaultUploadSweepInterval = time.Hour

// DefaultUploadRetention is how long an upload's bytes are kept: a day past
// the 7 days its public URL is valid (api: POST /v1/uploads).
const DefaultUploadRetention = 8 * 24 * time.Hour

// garbageBatch is how many blobs one BlobsDeleted command forgets.
const garbageBatch = 500

// collectGarbage deletes the blobs on the FSM's garbage list (a finished
// video's plan, narration and scene clips: fsm/blobgc.go) and then forgets
// their keys with one command per batch, so a key leaves the list only once
// its blob is gone. A blob that cannot be deleted stays listed and is tried
// again on the next tick; the rest of the batch goes on.
func (s *Server) collectGarbage(ctx context.Context) {
	for {
		keys, total := s.Node.FSM.Garbage(garbageBatch)
		if len(keys) == 0 {
			return
		}
		// Mid-upgrade the forgetting could not be proposed: delete nothing.
		if err := s.Node.CheckUnderstood(fsm.BlobsDeletedType); err != nil {
			if !s.gated("collect_garbage", err) {
				s.log.Warn("collect garbage", "err", err)
			}
			return
		}
		deleted := make([]string, 0, len(keys))
		for _, key := range keys {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := s.Blobs.Delete(dctx, key)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Warn("delete intermediate blob", "key", key, "err", err)
				continue
			}
			deleted = append(deleted, key)
		}
		if len(deleted) == 0 {
			return // every delete failed: the store is down; try again later
		}
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := s.Node.Apply(actx, &fsm.BlobsDeleted{Keys: deleted, Now: time.Now().UnixNano()})
		cancel()
		if err != nil {
			if ctx.Err() == nil && !s.gated("collect_garbage", err) {
				s.log.Warn("forget deleted blobs", "err", err)
			}
			return
		}
		s.log.Info("deleted intermediate blobs", "count", len(deleted), "left", total-len(deleted))
		if len(deleted) < len(keys) || total <= len(keys) {
			return
		}
	}
}

// expireUploads deletes the uploads (POST /v1/uploads; nothing records them
// but their signed URLs) stored longer ago than UploadRetention. Assets,
// which the FSM records, are not uploads.
func (s *Server) expireUploads(ctx context.Context) {
	before := time.Now().Add(-s.cfg.UploadRetention)
	deleted := 0
	for info, err := range s.Blobs.List(ctx, api.UploadsPrefix) {
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("list uploads", "err", err)
			}
			break
		}
		if !info.ModTime.Before(before) {
			continue
		}
		if err := s.Blobs.Delete(ctx, info.Key); err != nil {
			s.log.Warn("delete expired upload", "key", info.Key, "err", err)
			continue
		}
		deleted++
	}
	if deleted > 0 {
		s.log.Info("deleted expired uploads", "count", deleted, "older_than", s.cfg.UploadRetention.String())
	}
}

// removeRestoreSpools deletes the uploads of restores a stop cut short
// (admin.RestoreSpoolGlob): each is the size of a backup.
func removeRestoreSpools(dataDir string, log *slog.Logger) {
	left, _ := filepath.Glob(filepath.Join(dataDir, admin.RestoreSpoolGlob))
	for _, p := range left {
		if err := os.Remove(p); err != nil {
			log.Warn("remove the upload of a restore cut short", "path", p, "err", err)
			continue
		}
		log.Info("removed the upload of a restore cut short by a stop", "path", p)
	}
}
