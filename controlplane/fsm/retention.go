package fsm

import (
	"fmt"
	"maps"
	"slices"
)

// Speech samples are made to be listened to and copied, not kept: their
// audio URLs live about a day. ExpireSpeech forgets the finished samples
// created before a time the leader picks (its --speech-retention ago) and
// hands their audio to the blob janitor (blobgc.go), so neither the state
// nor the blob store grows with every sample ever spoken. Samples still
// being made are kept.

// ExpireSpeech forgets the finished speech samples created before Before.
type ExpireSpeech struct {
	Before int64 `msgpack:"before"`
	Now    int64 `msgpack:"now"`
}

func (*ExpireSpeech) Type() MessageType { return ExpireSpeechType }

// speechExpired reports whether sp is finished and created before before.
func speechExpired(sp *Speech, before int64) bool {
	return (sp.Status == StatusCompleted || sp.Status == StatusFailed) && sp.CreatedAt < before
}

// applyExpireSpeech returns how many samples it forgot. Accounts are
// visited in id order, so every replica lists the audio in the same order.
func (s *state) applyExpireSpeech(c *ExpireSpeech) (int, error) {
	if c.Before <= 0 {
		return 0, fmt.Errorf("%w: expire speech needs a time", ErrInvalidCommand)
	}
	n := 0
	for _, acct := range slices.Sorted(maps.Keys(s.accountSpeech)) {
		kept := s.accountSpeech[acct][:0]
		for _, id := range s.accountSpeech[acct] {
			sp := s.speech[id]
			if !speechExpired(sp, c.Before) {
				kept = append(kept, id)
				continue
			}
			if sp.Audio != "" {
				s.garbage = append(s.garbage, sp.Audio)
			}
			delete(s.speech, id)
			n++
		}
		if len(kept) == 0 {
			delete(s.accountSpeech, acct)
		} else {
			s.accountSpeech[acct] = kept
		}
	}
	return n, nil
}

// SpeechExpiryDue reports whether ExpireSpeech{Before: before} would forget
// anything, so that the leader proposes it only then.
func (f *FSM) SpeechExpiryDue(before int64) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, sp := range f.s.speech {
		if speechExpired(sp, before) {
			return true
		}
	}
	return false
}
