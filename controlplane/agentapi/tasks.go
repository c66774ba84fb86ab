package agentapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/raftnode"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// Long-poll bounds of POST /agent/v1/lease?wait=<seconds>.
const (
	DefaultLeaseWait = 20 * time.Second
	MaxLeaseWait     = 60 * time.Second
)

// Limits on reports.
const (
	maxHeldLeases = 1024
	maxArtifacts  = 64
	maxReasonLen  = 2000
)

func (s *server) heartbeat(w http.ResponseWriter, r *http.Request) {
	n := nodeOf(r)
	var req wire.HeartbeatRequest
	if e := decode(w, r, &req, true); e != nil {
		apierr.Write(w, r, e)
		return
	}
	if len(req.Leases) > maxHeldLeases {
		apierr.Write(w, r, invalid(fmt.Sprintf("at most %d leases per heartbeat", maxHeldLeases)).With("field", "leases"))
		return
	}
	gpus, e := s.checkTelemetry(n.ID, req.GPUs)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	if len(req.Paused) > wire.MaxPausedLen || !utf8.ValidString(req.Paused) {
		apierr.Write(w, r, invalid(fmt.Sprintf("paused must be UTF-8 text of at most %d bytes", wire.MaxPausedLen)).With("field", "paused"))
		return
	}
	held := make([]fsm.HeldLease, len(req.Leases))
	for i, l := range req.Leases {
		held[i] = fsm.HeldLease{TaskID: l.TaskID, Token: l.Token, Percent: l.Percent}
	}
	res, err := apply(s, r, &fsm.NodeHeartbeat{
		NodeID: n.ID, Held: held, Draining: req.Draining,
		LeaseMS: s.cfg.LeaseDuration.Milliseconds(), Now: s.cfg.Now().UnixNano(),
	})
	if err != nil {
		apierr.Write(w, r, s.fromApply(r, err))
		return
	}
	if gpus != nil {
		s.cfg.Telemetry.Put(n.ID, gpus)
	}
	s.cfg.Telemetry.SetPaused(n.ID, req.Paused)
	resp := wire.HeartbeatResponse{}
	if node, ok := s.fsm.Node(n.ID); ok && node.Maintenance != nil {
		m := node.Maintenance
		resp.Maintenance, resp.MaintenanceReason = m.State, m.Reason
		if m.Deadline != 0 {
			d := time.Unix(0, m.Deadline).UTC()
			resp.DrainDeadline = &d
		}
	}
	for _, ref := range res.Stale {
		resp.Stale = append(resp.Stale, ref.TaskID)
	}
	if len(resp.Stale) > 0 {
		s.log.Info("heartbeat named stale leases", "node_id", n.ID, "stale", resp.Stale)
	}
	apierr.WriteJSON(w, http.StatusOK, resp)
}

// parseWait reads ?wait=<seconds>: default DefaultLeaseWait, at most MaxLeaseWait.
func parseWait(r *http.Request) (time.Duration, *apierr.Error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return DefaultLeaseWait, nil
	}
	sec, err := strconv.ParseFloat(v, 64)
	if err != nil || !(sec >= 0) {
		return 0, invalid("wait must be a number of seconds >= 0").With("field", "wait")
	}
	return min(time.Duration(sec*float64(time.Second)), MaxLeaseWait), nil
}

// lease proposes a lease for the node; while there is nothing to place it waits
// for a notification (or a second) and tries again, until the wait is over.
func (s *server) lease(w http.ResponseWriter, r *http.Request) {
	n := nodeOf(r)
	wait, e := parseWait(r)
	if e == nil {
		e = decode(w, r, &wire.LeaseRequest{}, true)
	}
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	retry := time.NewTicker(s.cfg.LeaseRetry)
	defer retry.Stop()
	for {
		changed := s.notify.Changed()
		res := fsm.LeaseResult{Why: "no task is waiting"}
		// Placement is a Raft write; with nothing ready, or a node an
		// operator cordoned, skip it and wait.
		if s.cfg.FSM.HasReadyWork() && !s.cordoned(n.ID) {
			leased, err := apply(s, r, &fsm.LeaseTask{NodeID: n.ID, LeaseMS: s.cfg.LeaseDuration.Milliseconds(), Now: s.cfg.Now().UnixNano()})
			if err != nil {
				apierr.Write(w, r, s.fromApply(r, err))
				return
			}
			res = leased
		}
		if res.Found {
			a := s.assignment(res.Lease)
			info(r).taskID = a.TaskID
			if r.Context().Err() != nil {
				s.log.Warn("leased a task to a node that hung up; the lease will expire", "node_id", n.ID, "task_id", a.TaskID)
			}
			s.log.Info("task leased", "node_id", n.ID, "task_id", a.TaskID, "video_id", res.Lease.VideoID,
				"token", a.Token, "attempt", a.Attempt, "kind", a.Kind)
			apierr.WriteJSON(w, http.StatusOK, a)
			return
		}
		if s.cfg.Waiting != nil {
			s.cfg.Waiting()
		}
		select {
		case <-changed:
		case <-retry.C:
		case <-deadline.C:
			s.log.Debug("no work for node", "node_id", n.ID, "why", res.Why)
			w.WriteHeader(http.StatusNoContent)
			return
		case <-r.Context().Done():
			// The agent left (nobody reads this) or the server is shutting down
			// (the agent polls again, perhaps elsewhere).
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
}

// assignment describes a granted lease with what its task needs of its video.
func (s *server) assignment(l scheduler.Lease) wire.Assignment {
	a := wire.Assignment{
		TaskID: l.TaskID, Token: l.Token, Name: strings.TrimPrefix(l.TaskID, l.VideoID+"/"),
		Kind: l.Kind, Attempt: l.Attempt, Model: l.Req.Model, GPUIDs: l.GPUIDs, Deadline: l.Deadline,
		Video: wire.Video{ID: l.VideoID},
	}
	if t, ok := s.fsm.Task(l.TaskID); ok {
		a.Name = t.Name
	}
	if s.mediaJob(&a, l.VideoID) {
		return a
	}
	v, ok := s.fsm.Video("", l.VideoID)
	if !ok {
		s.log.Error("leased task of an unknown video", "task_id", l.TaskID, "video_id", l.VideoID)
		return a
	}
	a.Video = wireVideo(v.Video)
	if len(v.Artifacts) > 0 {
		a.Inputs = v.Artifacts // a copy: FSM reads return copies
	}
	s.addMedia(&a, v.Video)
	s.ownAvatarInput(&a, v.Video)
	return a
}

// addMedia adds what an auto video's tasks need of its brand kit and file
// assets: the kit's colours and logo, and each asset as an input. Videos keep
// their kit and assets while unfinished (the FSM refuses to delete them), so a
// missing one means the state changed under a task; it renders without it,
// and the log says so.
func (s *server) addMedia(a *wire.Assignment, v fsm.Video) {
	input := func(name, key string) {
		if a.Inputs == nil {
			a.Inputs = map[string]string{}
		}
		a.Inputs[name] = key
	}
	if id := v.Spec.BrandKitID; id != "" {
		k, ok := s.fsm.BrandKit(v.AccountID, id)
		if !ok {
			s.log.Warn("video's brand kit is gone; rendering without it", "video_id", v.ID, "brand_kit_id", id)
		} else {
			b := &wire.Brand{Colors: k.Colors, LogoURL: k.LogoURL, Fonts: k.Fonts, MotionStyle: k.MotionStyle}
			if as, ok := s.fsm.Asset(v.AccountID, k.LogoAssetID); ok && as.Status == fsm.AssetReady {
				b.LogoInput = "brand/logo" + path.Ext(as.BlobKey)
				input(b.LogoInput, as.BlobKey)
			}
			a.Video.Brand = b
		}
	}
	for _, id := range v.Spec.FileAssetIDs {
		as, ok := s.fsm.Asset(v.AccountID, id)
		if !ok || as.Status != fsm.AssetReady {
			s.log.Warn("video's file asset is gone; rendering without it", "video_id", v.ID, "asset_id", id)
			continue
		}
		name := "assets/" + path.Base(as.BlobKey)
		input(name, as.BlobKey)
		a.Video.AssetInputs = append(a.Video.AssetInputs, name)
	}
}

// mediaJob fills in an avatar or speech task; it reports whether id is one.
func (s *server) mediaJob(a *wire.Assignment, id string) bool {
	if av, ok := s.fsm.Avatar("", id); ok {
		a.Avatar = &wire.AvatarJob{Kind: av.Kind, Name: av.Name, Gender: av.Gender, Prompt: av.Prompt, FileURL: av.FileURL}
		if av.AssetID != "" {
			// The asset cannot go away while the avatar is being made (DeleteAsset
			// refuses), so a miss is a bug: the task fails and says why.
			if as, ok := s.fsm.Asset(av.AccountID, av.AssetID); ok {
				if a.Inputs == nil {
					a.Inputs = map[string]string{}
				}
				a.Inputs[wire.InputAvatarPhoto] = as.BlobKey
			}
			a.Avatar.PhotoInput = wire.InputAvatarPhoto
		}
		return true
	}
	if sp, ok := s.fsm.Speech("", id); ok {
		a.Speech = &wire.SpeechJob{Text: sp.Text, VoiceID: sp.VoiceID}
		return true
	}
	return false
}

// ownAvatarInput hands the composite of a video presented by one of the
// account's own avatars that avatar's picture. The API accepted the video
// only with a ready avatar of the same account, and avatars are never
// deleted, so a miss here is a bug worth a log line, not a failed video.
func (s *server) ownAvatarInput(a *wire.Assignment, v fsm.Video) {
	if a.Kind != scheduler.KindComposite || v.Spec.AvatarID == "" {
		return
	}
	av, ok := s.fsm.Avatar(v.AccountID, v.Spec.AvatarID)
	if !ok {
		return // a stock avatar: the agent draws it
	}
	if av.Status != fsm.AvatarReady {
		s.log.Error("video presented by an avatar that is not ready", "video_id", v.ID, "avatar_id", av.ID, "status", av.Status)
		return
	}
	if a.Inputs == nil {
		a.Inputs = map[string]string{}
	}
	a.Inputs[wire.InputAvatar] = av.Image
}

func wireVideo(v fsm.Video) wire.Video {
	s := v.Spec
	return wire.Video{
		ID: v.ID, Mode: s.Mode, Prompt: s.Prompt, DurationSeconds: s.DurationSeconds,
		VideoOptions: s.Options(), Orientation: s.Orientation,
		Model: s.Model, Operation: s.Operation, Resolution: s.Resolution, AspectRatio: s.AspectRatio,
	}
}

// taskReport routes POST /agent/v1/tasks/{id}/{progress|complete|fail}. Task ids
// hold a slash ("<video id>/<task name>"); agents may send it as is or escaped
// (%2F), so the id is everything between the prefix and the last segment.
func (s *server) taskReport(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/agent/v1/tasks/")
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeNotFound,
			"use POST /agent/v1/tasks/{task id}/progress, /complete or /fail"))
		return
	}
	id, err := url.PathUnescape(rest[:i])
	if err != nil {
		apierr.Write(w, r, invalid("malformed task id in the path"))
		return
	}
	info(r).taskID = id
	switch rest[i+1:] {
	case "progress":
		s.progress(w, r, id)
	case "complete":
		s.complete(w, r, id)
	case "fail":
		s.fail(w, r, id)
	default:
		apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeNotFound,
			fmt.Sprintf("no task report %q; use progress, complete or fail", rest[i+1:])))
	}
}

func (s *server) progress(w http.ResponseWriter, r *http.Request, taskID string) {
	var req wire.ProgressRequest
	if e := decode(w, r, &req, false); e != nil {
		apierr.Write(w, r, e)
		return
	}
	if !(req.Percent >= 0 && req.Percent <= 100) {
		apierr.Write(w, r, invalid("percent must be 0..100").With("field", "percent"))
		return
	}
	_, err := apply(s, r, &fsm.TaskProgress{
		NodeID: nodeOf(r).ID, TaskID: taskID, Token: req.Token, Percent: req.Percent, Now: s.cfg.Now().UnixNano(),
	})
	if err != nil {
		apierr.Write(w, r, s.fromApply(r, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) complete(w http.ResponseWriter, r *http.Request, taskID string) {
	n := nodeOf(r)
	var req wire.CompleteRequest
	if e := decode(w, r, &req, false); e != nil {
		apierr.Write(w, r, e)
		return
	}
	t, ok := s.fsm.Task(taskID)
	if !ok {
		apierr.Write(w, r, s.unknownTask(taskID))
		return
	}
	// The holder's artifacts must be in the store before the task counts as done;
	// a report from anyone else goes straight to the FSM, which refuses it as stale
	// (or, for the holder's own retry of a completion, accepts it as a duplicate).
	if t.Lease != nil && t.Lease.NodeID == n.ID && t.Lease.Token == req.Token {
		if e := s.checkArtifacts(r, t, req.Artifacts); e != nil {
			apierr.Write(w, r, e)
			return
		}
	}
	o, err := apply(s, r, &fsm.CompleteTask{
		NodeID: n.ID, TaskID: taskID, Token: req.Token, Artifacts: req.Artifacts,
		Scenes: req.Scenes, DurationSeconds: req.DurationSeconds, Now: s.cfg.Now().UnixNano(),
	})
	if err != nil {
		apierr.Write(w, r, s.fromApply(r, err))
		return
	}
	if !o.Duplicate {
		s.notify.Notify()
		s.log.Info("task completed", "node_id", n.ID, "task_id", taskID, "video_id", t.VideoID,
			"artifacts", len(req.Artifacts), "video_completed", o.VideoCompleted)
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkArtifacts checks that every artifact is a well-formed key of the task and
// is in the blob store.
func (s *server) checkArtifacts(r *http.Request, t scheduler.Task, arts map[string]string) *apierr.Error {
	if len(arts) > maxArtifacts {
		return invalid(fmt.Sprintf("at most %d artifacts per task", maxArtifacts)).With("field", "artifacts")
	}
	prefix := artifactPrefix(t.VideoID, t.Name)
	for file, key := range arts {
		field := "artifacts." + file
		if file == "" || strings.Contains(file, "/") || blob.ValidateKey(file) != nil {
			return invalid(fmt.Sprintf("artifact name %q must be a file name (letters, digits, . _ -)", file)).With("field", field)
		}
		if !strings.HasPrefix(key, prefix) || strings.Contains(key[len(prefix):], "/") || blob.ValidateKey(key) != nil {
			return invalid(fmt.Sprintf("artifact %q is at %q; a task's blobs must be %s<file name>", file, key, prefix)).With("field", field)
		}
		if _, err := s.cfg.Blobs.Stat(r.Context(), key); err != nil {
			if errors.Is(err, blob.ErrNotFound) {
				return invalid(fmt.Sprintf("artifact %q was not uploaded: PUT it to /agent/v1/blobs/%s first", file, key)).
					With("field", field).With("key", key)
			}
			s.log.Error("stat artifact", "request_id", apierr.RequestID(r.Context()), "key", key, "err", err)
			return apierr.Internal()
		}
	}
	return nil
}

// artifactPrefix is where a task's blobs live: "videos/<video id>/<task name>/".
func artifactPrefix(videoID, taskName string) string {
	return "videos/" + videoID + "/" + taskName + "/"
}

func (s *server) fail(w http.ResponseWriter, r *http.Request, taskID string) {
	n := nodeOf(r)
	var req wire.FailRequest
	if e := decode(w, r, &req, false); e != nil {
		apierr.Write(w, r, e)
		return
	}
	// Cleaning looks at no more than could be kept, with room for the
	// escape sequences it drops, so its work is bounded whatever was sent.
	reason := strings.TrimSpace(cleanReason(strings.ToValidUTF8(cutUTF8(req.Reason, 8*maxReasonLen), "?")))
	if reason == "" {
		reason = "the node reported a failure without a reason"
	}
	if len(reason) > maxReasonLen {
		reason = cutUTF8(reason, maxReasonLen) + "..."
	}
	now := s.cfg.Now().UnixNano()
	var o scheduler.Outcome
	var err error
	if req.Permanent {
		o, err = apply(s, r, &fsm.FailTaskPermanently{NodeID: n.ID, TaskID: taskID, Token: req.Token, Reason: reason, Now: now})
	}
	if !req.Permanent || errors.Is(err, raftnode.ErrNotUnderstood) {
		// Mid-upgrade a permanent failure is retried as any other, as it was.
		o, err = apply(s, r, &fsm.FailTask{NodeID: n.ID, TaskID: taskID, Token: req.Token, Reason: reason, Now: now,
			BackoffMS: s.cfg.RetryBackoff.Milliseconds()})
	}
	if err != nil {
		apierr.Write(w, r, s.fromApply(r, err))
		return
	}
	s.notify.Notify()
	s.log.Warn("task failed", "node_id", n.ID, "task_id", taskID, "video_id", o.VideoID, "reason", reason,
		"permanent", req.Permanent, "requeued", o.Requeued, "video_failed", o.VideoFailed)
	w.WriteHeader(http.StatusNoContent)
}

// cutUTF8 is s cut to at most n bytes, on a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Back at most to the start of the character cut through; bytes that
	// are no UTF-8 are left to strings.ToValidUTF8.
	for i := 1; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return s[:n]
}

// cleanReason makes a fail reason safe to store: it becomes the customer's
// error.message and an operator's "last failure", both printed on
// terminals. A reason is usually a runner's stderr tail, where colour codes
// from tools are normal, so the report is kept and cleaned, not refused:
// escape sequences (CSI, OSC and the other ESC and C1 forms) are dropped
// whole, carriage returns (progress bars, CRLF) become newlines, and any
// other control character but newline and tab becomes U+FFFD, so a reader
// sees that something was there. (charmbracelet/x/ansi's Strip, tried for
// this, drops everything after a title sequence whose end was cut off with
// the tail, and keeps C1 sequences written as UTF-8.)
func cleanReason(s string) string {
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if n := escapeLen(rs[i:]); n > 0 {
			i += n - 1
			continue
		}
		switch {
		case r == '\r':
			if i+1 < len(rs) && rs[i+1] == '\n' {
				continue
			}
			b.WriteRune('\n')
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// escapeLen is how many runes the escape sequence at the start of rs
// takes, 0 when rs does not start with one. A lone ESC is no sequence (it
// is replaced as any control character); a string sequence (OSC, DCS, SOS,
// PM, APC) without its terminator before the line ends loses only its
// introducer: a cut stderr tail may end inside one, and what follows is
// plain text that must not be swallowed.
func escapeLen(rs []rune) int {
	if len(rs) == 0 {
		return 0
	}
	var body int // where the sequence's body starts
	switch c := rs[0]; {
	case c == 0x9b: // CSI
		return 1 + csiLen(rs[1:])
	case c == 0x90 || c == 0x98 || c == 0x9d || c == 0x9e || c == 0x9f: // DCS, SOS, OSC, PM, APC
		body = 1
	case c != 0x1b || len(rs) < 2:
		return 0
	case rs[1] == '[':
		return 2 + csiLen(rs[2:])
	case rs[1] == ']' || rs[1] == 'P' || rs[1] == 'X' || rs[1] == '^' || rs[1] == '_':
		body = 2
	case rs[1] >= 0x20 && rs[1] <= 0x2f: // nF: intermediates, then a final byte
		n := 1
		for n < len(rs) && rs[n] >= 0x20 && rs[n] <= 0x2f {
			n++
		}
		if n < len(rs) && rs[n] >= 0x30 && rs[n] <= 0x7e {
			n++
		}
		return n
	case rs[1] >= 0x30 && rs[1] <= 0x7e: // Fp, Fe, Fs: one character
		return 2
	default:
		return 0
	}
	for i := body; i < len(rs) && i < body+maxEscapeString; i++ {
		switch {
		case rs[i] == 0x07 || rs[i] == 0x9c: // BEL (xterm's OSC end), ST
			return i + 1
		case rs[i] == 0x1b && i+1 < len(rs) && rs[i+1] == '\\': // ESC \ (ST)
			return i + 2
		case rs[i] == '\n':
			// No title or link spans lines: the log goes on, unswallowed.
			return body
		}
	}
	return body
}

// maxEscapeString bounds how far a string sequence's terminator is looked
// for: titles and hyperlinks are far shorter, and an unbounded look would
// make cleaning a reason full of introducers quadratic.
const maxEscapeString = 1024

// csiLen is the length of a CSI sequence's parameters, intermediates and
// final byte; a sequence cut short ends where it stops being one.
func csiLen(rs []rune) int {
	n := 0
	for n < len(rs) && rs[n] >= 0x30 && rs[n] <= 0x3f {
		n++
	}
	for n < len(rs) && rs[n] >= 0x20 && rs[n] <= 0x2f {
		n++
	}
	if n < len(rs) && rs[n] >= 0x40 && rs[n] <= 0x7e {
		n++
	}
	return n
}

func (s *server) deregister(w http.ResponseWriter, r *http.Request) {
	n := nodeOf(r)
	if _, err := apply(s, r, &fsm.DeregisterNode{NodeID: n.ID, Now: s.cfg.Now().UnixNano()}); err != nil {
		apierr.Write(w, r, s.fromApply(r, err))
		return
	}
	s.cfg.Telemetry.Forget(n.ID)
	s.notify.Notify()
	s.log.Info("node deregistered", "node_id", n.ID, "name", n.Name)
	w.WriteHeader(http.StatusNoContent)
}

// cordoned reports whether an operator cordoned or drained the node: the
// scheduler would place nothing on it.
func (s *server) cordoned(nodeID string) bool {
	node, ok := s.fsm.Node(nodeID)
	return ok && node.Maintenance != nil
}
