package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/sealed"
)

// backup streams the whole state in the snapshot format. It runs on the leader
// (followers forward it), so it holds every acknowledged write.
func (s *server) backup(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="vidfarm-%d.backup"`, s.cfg.FSM.AppliedIndex()))
	if !s.streamBackup(w, r, s.cfg.FSM.WriteBackup) {
		return
	}
	s.cfg.Logger.Info("backup streamed", "applied_index", s.cfg.FSM.AppliedIndex())
}

// streamBackup answers with what write writes. A failure before the first
// byte is an error answer; after it the 200 is gone, and a body that ended
// cleanly would pass for a whole backup with a client that does not check
// the CRC trailer, so the connection is cut instead: the client's read
// fails (unexpected EOF), and a follower's proxy passes the cut on. It
// reports whether the whole backup went out.
func (s *server) streamBackup(w http.ResponseWriter, r *http.Request, write func(io.Writer) error) bool {
	cw := &countingWriter{w: w}
	err := write(cw)
	if err == nil {
		return true
	}
	s.cfg.Logger.Error("backup stream failed", "request_id", apierr.RequestID(r.Context()), "bytes_sent", cw.n, "err", err)
	if cw.n == 0 {
		w.Header().Del("Content-Disposition")
		apierr.Write(w, r, apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError, "could not read the state for the backup: "+err.Error()))
		return false
	}
	panic(http.ErrAbortHandler)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// RestoreSpoolGlob names the files a restore spools its upload to in the
// data directory; one left by a node killed mid-restore is removed at the
// next start.
const RestoreSpoolGlob = ".vidfarm-restore-*"

// restore replaces the cluster's state with a backup. The body is spooled to a
// file in the data directory (Config.DataDir; it needs room for the whole
// backup there) and checked end to end (format, record count, CRC, and
// that its sealed webhook secrets open with this node's secrets key) before
// Raft sees a byte of it, so a damaged backup, or one this node could not
// sign webhooks from, changes nothing. A cluster that already holds accounts
// is refused unless ?force=true: restoring is for disaster recovery into a
// new cluster.
func (s *server) restore(w http.ResponseWriter, r *http.Request) {
	dir := s.cfg.DataDir
	if dir == "" {
		dir = os.TempDir()
	}
	tmp, err := os.CreateTemp(dir, RestoreSpoolGlob)
	if err != nil {
		s.cfg.Logger.Error("restore: create the spool file", "dir", dir, "err", err)
		apierr.Write(w, r, apierr.New(http.StatusInternalServerError, apierr.CodeInternalError, "could not create the file the backup is spooled to: "+err.Error()).
			With("spool_dir", dir))
		return
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	size, err := io.Copy(tmp, r.Body)
	if errors.Is(err, syscall.ENOSPC) {
		apierr.Write(w, r, apierr.New(http.StatusInsufficientStorage, apierr.CodeInternalError,
			fmt.Sprintf("the disk holding %s filled after %d bytes of the backup: a restore needs free space the size of the backup there (and as much again for the state it installs); nothing was changed", dir, size)).
			With("spool_dir", dir).With("bytes_spooled", size))
		return
	}
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
	if e := checkSealedSecrets(info.Secrets, s.cfg.Secrets); e != nil {
		apierr.Write(w, r, e)
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
	// Raft installs a backup as a snapshot above its own last index and the
	// backup's (raftnode.Node.Restore), and takes no snapshot of its own in
	// the moment since, so its last snapshot is the one installed.
	raftIndex, _ := strconv.ParseUint(s.cfg.Node.Stats()["last_snapshot_index"], 10, 64)
	s.cfg.Logger.Warn("state replaced from a backup", "bytes", size, "accounts", info.Accounts, "videos", info.Videos,
		"backup_index", info.Index, "raft_index", raftIndex)
	// applied_index is the backup's own index, which the state takes on (kept
	// as it was for scripts); raft_index is where this cluster's log holds
	// it, which cluster status counts on from.
	apierr.WriteJSON(w, http.StatusOK, map[string]any{"restored": info, "bytes": size, "applied_index": s.cfg.FSM.AppliedIndex(), "raft_index": raftIndex})
}

// checkSealedSecrets refuses a backup holding webhook signing secrets that
// key (the node's --secrets-key, nil for none) cannot open: restored, every
// delivery to those webhooks would fail to sign until someone noticed.
// Plain secrets pass: the leader seals them with its key (resealSecrets).
func checkSealedSecrets(secrets []fsm.StoredSecret, key *sealed.Key) *apierr.Error {
	var nSealed int
	var closed []string
	for _, sec := range secrets {
		if !sealed.IsSealed(sec.Secret) {
			continue
		}
		nSealed++
		if _, err := key.Open(sec.Secret, sec.WebhookID); err != nil {
			closed = append(closed, sec.WebhookID)
		}
	}
	if len(closed) == 0 {
		return nil
	}
	var msg string
	if key == nil {
		msg = fmt.Sprintf("the backup holds %d webhook signing secrets sealed with a secrets key and this node has none: "+
			"start it with --secrets-key set to the key they were sealed with (the cluster's key when the backup was taken), then restore again; nothing was changed", nSealed)
	} else {
		msg = fmt.Sprintf("%d of the backup's %d sealed webhook signing secrets do not open with this node's --secrets-key: "+
			"restart it with the key they were sealed with among its keys (--secrets-key NEW,BACKUP_KEY: the first seals, the others only open, "+
			"and the leader then seals every secret again with the first), then restore again; nothing was changed", len(closed), nSealed)
	}
	const shown = 10
	return apierr.New(http.StatusConflict, apierr.CodeInvalidRequest, msg).With("reason", "secrets_key_mismatch").
		With("sealed_secrets", nSealed).With("not_opening", len(closed)).With("webhooks", closed[:min(len(closed), shown)]).
		With("node_has_secrets_key", key != nil)
}
