package fsm

// Reads. Each takes the read lock and returns copies the caller may keep and change.

// QueuedVideo is a video with its place in the queue (0 when not queued).
type QueuedVideo struct {
	Video
	QueuePosition uint64
}

// KeyByHash finds the API key whose secret hashes to h.
func (f *FSM) KeyByHash(h [32]byte) (Key, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	id, ok := f.s.keyByHash[h]
	if !ok {
		return Key{}, false
	}
	return *f.s.keys[id], true
}

// Key returns the API key with that id.
func (f *FSM) Key(id string) (Key, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	k, ok := f.s.keys[id]
	if !ok {
		return Key{}, false
	}
	return *k, true
}

// Account returns the account with that id.
func (f *FSM) Account(id string) (Account, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	a, ok := f.s.accounts[id]
	if !ok {
		return Account{}, false
	}
	return *a, true
}

// Video returns the video if it belongs to the account; another account's video is
// reported as not found, never as forbidden.
func (f *FSM) Video(accountID, id string) (QueuedVideo, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, ok := f.s.videos[id]
	if !ok || (accountID != "" && v.AccountID != accountID) {
		return QueuedVideo{}, false
	}
	return QueuedVideo{Video: v.Clone(), QueuePosition: f.s.queue.position(v.QueueSeq)}, true
}

// VideoFilter selects videos of one account for a listing.
type VideoFilter struct {
	Status   string
	FolderID string
	Limit    int
	// StartingAfter continues a listing after this video id (newest first).
	StartingAfter string
}

// VideoPage is one page of a listing, newest first.
type VideoPage struct {
	Videos  []QueuedVideo
	Total   int // every video of the account matching the filter
	HasMore bool
}

// ListVideos lists an account's videos, newest first. A StartingAfter id that is
// not the account's gives ErrVideoNotFound.
func (f *FSM) ListVideos(accountID string, flt VideoFilter) (VideoPage, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ids := f.s.accountVideos[accountID]
	end := len(ids)
	if flt.StartingAfter != "" {
		v, ok := f.s.videos[flt.StartingAfter]
		if !ok || v.AccountID != accountID {
			return VideoPage{}, ErrVideoNotFound
		}
		for end = len(ids) - 1; end >= 0 && ids[end] != flt.StartingAfter; end-- {
		}
	}
	var page VideoPage
	for i := len(ids) - 1; i >= 0; i-- {
		v := f.s.videos[ids[i]]
		if (flt.Status != "" && v.Status != flt.Status) || (flt.FolderID != "" && v.Spec.FolderID != flt.FolderID) {
			continue
		}
		page.Total++
		if i >= end {
			continue
		}
		if len(page.Videos) < flt.Limit {
			page.Videos = append(page.Videos, QueuedVideo{Video: v.Clone(), QueuePosition: f.s.queue.position(v.QueueSeq)})
		} else {
			page.HasMore = true
		}
	}
	return page, nil
}

// Folders lists an account's folders in creation order.
func (f *FSM) Folders(accountID string) []Folder {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ids := f.s.accountFolders[accountID]
	out := make([]Folder, 0, len(ids))
	for _, id := range ids {
		out = append(out, *f.s.folders[id])
	}
	return out
}

// Folder returns the folder if it belongs to the account.
func (f *FSM) Folder(accountID, id string) (Folder, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fo, ok := f.s.folders[id]
	if !ok || fo.AccountID != accountID {
		return Folder{}, false
	}
	return *fo, true
}

// Stats counts what the state holds, for metrics and status pages.
type Stats struct {
	Accounts    int
	Keys        int
	Videos      int
	Queued      int
	Idempotency int
	ByStatus    map[string]int
}

// Stats returns counts of the state's records.
func (f *FSM) Stats() Stats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := Stats{
		Accounts: len(f.s.accounts), Keys: len(f.s.keys), Videos: len(f.s.videos),
		Queued: f.s.queue.size, Idempotency: len(f.s.idem), ByStatus: map[string]int{},
	}
	for _, v := range f.s.videos {
		st.ByStatus[v.Status]++
	}
	return st
}

// IdempotencyReplays reports whether a create with this key and body hash, at time
// now, would replay a remembered answer rather than create anything. The API uses
// it to let retries through the creation rate limit; the create command decides.
func (f *FSM) IdempotencyReplays(accountID, key string, bodyHash [32]byte, now int64) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	rec, ok := f.s.idem[idemKey{account: accountID, key: key}]
	return ok && rec.CreatedAt+IdempotencyTTL > now && rec.BodyHash == bodyHash
}
