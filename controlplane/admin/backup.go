package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// backup streams the whole state in the snapshot format. It runs on the leader
// (followers forward it), so it holds every acknowledged write.
func (s *server) backup(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="vidfarm-%d.backup"`, s.cfg.FSM.AppliedIndex()))
	if err := s.cfg.FSM.WriteBackup(w); err != nil {
		// The status is sent; a cut stream fails its CRC check on restore.
		s.cfg.Logger.Error("backup stream failed", "request_id", apierr.RequestID(r.Context()), "err", err)
		return
	}
	s.cfg.Logger.Info("backup streamed", "applied_index", s.cfg.FSM.AppliedIndex())
}

// restore replaces the cluster's state with a backup. The body is spooled to a
// temporary file and checked end to end (format, record count, CRC) before Raft
// sees a byte of it, so a damaged backup changes nothing. A cluster that already
// holds accounts is refused unless ?force=true: restoring is for disaster
// recovery into a new cluster.
func (s *server) restore(w http.ResponseWriter, r *http.Request) {
	tmp, err := os.CreateTemp("", "vidfarm-restore-*")
	if err != nil {
		apierr.Write(w, r, apierr.Internal())
		return
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	size, err := io.Copy(tmp, r.Body)
	if err != nil {
		apierr.Write(w, r, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "could not read the backup: "+err.Error()))
		return
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		apierr.Write(w, r, apierr.Internal())
		return
	}
	info, err := fsm.CheckBackup(tmp)
	if err != nil {
		apierr.Write(w, r, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "not a usable backup; nothing was changed").With("reason", err.Error()))
		return
	}
	if st := s.cfg.FSM.Stats(); st.Accounts > 0 && r.URL.Query().Get("force") != "true" {
		apierr.Write(w, r, apierr.New(http.StatusConflict, apierr.CodeInvalidRequest,
			fmt.Sprintf("this cluster already holds %d accounts and %d videos; restoring replaces all of it: add ?force=true (vidfarm admin restore --force) to do so", st.Accounts, st.Videos)))
		return
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		apierr.Write(w, r, apierr.Internal())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Minute)
	defer cancel()
	if err := s.cfg.Cluster.Restore(ctx, tmp, size, info.Index); err != nil {
		s.cfg.Logger.Error("restore failed", "err", err)
		apierr.Write(w, r, apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, "restore failed: "+err.Error()))
		return
	}
	s.cfg.Logger.Warn("state replaced from a backup", "bytes", size, "accounts", info.Accounts, "videos", info.Videos)
	apierr.WriteJSON(w, http.StatusOK, map[string]any{"restored": info, "bytes": size, "applied_index": s.cfg.FSM.AppliedIndex()})
}
