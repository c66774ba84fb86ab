package agentapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/blob"
)

// blobKey is the key of /agent/v1/blobs/<key>, checked against the key rules and
// required to be under videos/, or (readable only) under assets/: the files
// accounts uploaded, which their videos' tasks read.
func blobKey(r *http.Request, readable bool) (string, *apierr.Error) {
	key := strings.TrimPrefix(r.URL.Path, "/agent/v1/blobs/")
	if err := blob.ValidateKey(key); err != nil {
		return "", invalid(err.Error()).With("field", "key")
	}
	if !strings.HasPrefix(key, "videos/") && !(readable && strings.HasPrefix(key, "assets/")) {
		return "", invalid("blob keys are videos/<video id>/<task name>/<file name>").With("field", "key")
	}
	return key, nil
}

// putBlob stores an artifact of a task this node holds the lease of.
func (s *server) putBlob(w http.ResponseWriter, r *http.Request) {
	n := nodeOf(r)
	key, e := blobKey(r, false)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	parts := strings.Split(key, "/")
	if len(parts) != 4 {
		apierr.Write(w, r, invalid("a task's blobs are videos/<video id>/<task name>/<file name>").With("field", "key"))
		return
	}
	taskID := parts[1] + "/" + parts[2]
	info(r).taskID = taskID
	t, ok := s.fsm.Task(taskID)
	if !ok || t.VideoID != parts[1] || t.Name != parts[2] {
		apierr.Write(w, r, apierr.NotFound("task "+taskID))
		return
	}
	// Fenced by the lease token, not only the node: a stale run of the same task on
	// the same node must not overwrite the current run's artifact.
	if t.Lease == nil || t.Lease.NodeID != n.ID || r.URL.Query().Get("lease_token") != strconv.FormatUint(t.Lease.Token, 10) {
		apierr.Write(w, r, staleLease("this upload does not carry the current lease of task "+taskID+" (?lease_token=)"))
		return
	}
	if r.ContentLength > s.cfg.MaxBlobBytes {
		apierr.Write(w, r, tooLarge(s.cfg.MaxBlobBytes))
		return
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBlobBytes)
	size, err := s.cfg.Blobs.Put(r.Context(), key, body)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			apierr.Write(w, r, tooLarge(s.cfg.MaxBlobBytes))
		case r.Context().Err() != nil:
			// The agent hung up mid-upload; nothing was stored.
			s.log.Info("upload abandoned", "node_id", n.ID, "task_id", taskID, "key", key)
		default:
			s.log.Error("store blob", "request_id", apierr.RequestID(r.Context()), "node_id", n.ID, "task_id", taskID, "key", key, "err", err)
			apierr.Write(w, r, apierr.Internal())
		}
		return
	}
	s.log.Info("blob stored", "node_id", n.ID, "task_id", taskID, "key", key, "bytes", size)
	apierr.WriteJSON(w, http.StatusCreated, struct {
		Key  string `json:"key"`
		Size int64  `json:"size"`
	}{key, size})
}

func tooLarge(limit int64) *apierr.Error {
	return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge,
		fmt.Sprintf("a blob may be at most %d bytes", limit)).With("max_bytes", limit)
}

// getBlob serves a blob under videos/ or assets/ (task inputs), with range requests.
func (s *server) getBlob(w http.ResponseWriter, r *http.Request) {
	key, e := blobKey(r, true)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	rc, bi, err := s.cfg.Blobs.Open(r.Context(), key)
	if errors.Is(err, blob.ErrNotFound) {
		apierr.Write(w, r, apierr.NotFound("blob "+key))
		return
	}
	if err != nil {
		s.log.Error("open blob", "request_id", apierr.RequestID(r.Context()), "key", key, "err", err)
		apierr.Write(w, r, apierr.Internal())
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", blob.ContentType(key))
	http.ServeContent(w, r, "", bi.ModTime, rc)
}
