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
	if !ok {
		apierr.Write(w, r, s.unknownTask(taskID))
		return
	}
	if t.VideoID != parts[1] || t.Name != parts[2] {
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
	up, e := s.beginUpload(r.Context(), t, key, r.ContentLength)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	body := http.MaxBytesReader(w, r.Body, up.limit)
	size, err := s.cfg.Blobs.Put(r.Context(), key, body)
	up.end(size, err == nil)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			apierr.Write(w, r, up.tooLarge(s))
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

// getBlob serves a blob that one of the node's current leases reads or
// wrote (readable), with range requests.
func (s *server) getBlob(w http.ResponseWriter, r *http.Request) {
	key, e := blobKey(r, true)
	if e == nil {
		e = s.readable(r, key)
	}
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

// readable refuses a read of key unless the node is up and key is an input
// of a task it holds a lease on, as the lease answer listed them
// (assignment, so the two cannot drift apart: a video's earlier artifacts,
// its brand kit's logo, its file assets, its avatar's picture, a photo
// avatar's source), or is under that task's own prefix (what it uploaded).
// A node credential belongs to no account (a node renders for all of
// them), so without this any node could read every account's videos,
// captions, avatars and assets, with no lease, even while down. A
// refusal is 404 whether or not the blob exists, so it says nothing about
// other accounts' files.
func (s *server) readable(r *http.Request, key string) *apierr.Error {
	n := nodeOf(r)
	if ni, ok := s.fsm.NodeInfo(n.ID); !ok || ni.Down {
		// Its leases are being handed to other nodes: the agent drops the task.
		return staleLease("this node is marked down (no heartbeat within the node timeout) and may read no blobs; heartbeat, then lease again")
	}
	for _, l := range s.fsm.NodeLeases(n.ID) {
		if strings.HasPrefix(key, "videos/"+l.TaskID+"/") {
			info(r).taskID = l.TaskID
			return nil
		}
		for _, in := range s.assignment(l).Inputs {
			if in == key {
				info(r).taskID = l.TaskID
				return nil
			}
		}
	}
	return apierr.New(http.StatusNotFound, apierr.CodeNotFound,
		"blob "+key+" is not an input or an upload of any task this node holds a lease on; a node reads only the inputs its current leases list (assignment inputs), while it holds them").
		With("key", key)
}
