package fsm

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// MaxCredits is the most credits an account may hold: 10^15. Every grant,
// opening balance and app purchase is checked against it before anything
// changes, so a balance stays in [0, MaxCredits] and int64 arithmetic on credits
// cannot wrap:
//
//   - it is far above any real balance (the dearest render costs under 10^5
//     credits; `vidfarm bench` opens accounts with 2^40 ≈ 1.1·10^12), so it
//     refuses nothing but mistakes and abuse;
//   - a balance, plus what its unfinished videos hold, plus one more grant, is
//     at most 3·10^15, far from 2^63 ≈ 9.2·10^18: the checks themselves cannot
//     overflow, and over nine thousand accounts at the ceiling still add up
//     within int64, as do a price (credits per second × at most 300 seconds)
//     and any one account's ledger;
//   - it is below 2^53 ≈ 9.007·10^15, so every balance, and balance + held +
//     grant, is exact in a JSON number read as a float64 (JavaScript, jq, the
//     app's reports).
//
// A refund gives back a charge of the same account. Grants count the credits
// unfinished videos hold (charged, not refunded), so a refund never lifts a
// balance above the ceiling either.
const MaxCredits int64 = 1_000_000_000_000_000

// ErrCreditCeiling means a grant, opening balance or purchase would raise an
// account's balance above MaxCredits; the concrete error is *CreditCeilingError.
var ErrCreditCeiling = errors.New("credit ceiling exceeded")

// CreditCeilingError says which movement would have passed MaxCredits and by how
// much. Nothing of the command was applied.
type CreditCeilingError struct {
	// What moved the credits: "grant", "opening balance", "purchase <id>".
	What      string
	AccountID string
	Amount    int64
	// Balance is the account's balance before the movement.
	Balance int64
	// Held is what the account's unfinished videos were charged: a failure
	// refunds it, so it counts towards the ceiling.
	Held int64
}

// After is what the balance would have been, counting Held: exact, even where it
// does not fit an int64.
func (e *CreditCeilingError) After() *big.Int {
	n := big.NewInt(e.Balance)
	n.Add(n, big.NewInt(e.Held))
	return n.Add(n, big.NewInt(e.Amount))
}

func (e *CreditCeilingError) Error() string {
	held := ""
	if e.Held > 0 {
		held = fmt.Sprintf(" (counting %d credits its unfinished videos hold, which a failure refunds)", e.Held)
	}
	return fmt.Sprintf("%s of %d credits would raise the balance of %s to %s%s, above the ceiling of %d credits",
		e.What, e.Amount, e.AccountID, e.After(), held, MaxCredits)
}

// Is makes errors.Is(err, ErrCreditCeiling) true.
func (e *CreditCeilingError) Is(target error) bool { return target == ErrCreditCeiling }

// checkCredit refuses to add amount to a's balance (a is nil for an account not
// open yet) when the result, counting the credits a's unfinished videos hold,
// would pass MaxCredits. Callers refuse a negative amount first. It changes
// nothing, so they check before they write anything.
func (s *state) checkCredit(what, accountID string, a *Account, amount int64) error {
	var balance, held int64
	if a != nil {
		balance, held = a.Credits, s.held(accountID)
	}
	// Past the first two tests amount and held are in [0, MaxCredits], so the
	// subtraction cannot wrap.
	if amount > MaxCredits || held > MaxCredits || balance > MaxCredits-held-amount {
		return &CreditCeilingError{What: what, AccountID: accountID, Amount: amount, Balance: balance, Held: held}
	}
	return nil
}

// held adds up what the account's queued and processing videos were charged and
// not refunded: a failure gives it back. It stops at MaxCredits+1, which is
// already too much. Grants are rare, so it walks the account's videos rather
// than keep a running total every video state change would have to maintain.
func (s *state) held(accountID string) int64 {
	var n int64
	for _, id := range s.accountVideos[accountID] {
		v := s.videos[id]
		if (v.Status != StatusQueued && v.Status != StatusProcessing) || v.CreditsRefunded || v.CreditsCharged <= 0 {
			continue
		}
		if v.CreditsCharged > MaxCredits-n {
			return MaxCredits + 1
		}
		n += v.CreditsCharged
	}
	return n
}

// addCredits is balance+amount, or the int64 bound it would pass. Under the
// ceiling the sum is always exact; only a state written before the ceiling
// existed can hold balances large enough to need the bound, and wrapping to the
// other sign there would be worse than stopping.
func addCredits(balance, amount int64) int64 {
	switch {
	case amount > 0 && balance > math.MaxInt64-amount:
		return math.MaxInt64
	case amount < 0 && balance < math.MinInt64-amount:
		return math.MinInt64
	}
	return balance + amount
}
