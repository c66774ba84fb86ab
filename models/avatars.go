package models

// The stock presenters. Both sides of the farm need them: the control plane
// lists them (GET /v1/avatars) and checks an auto video's avatar_id against
// them, and agents draw them (pipeline.WriteStockAvatar). This package is the
// one both may import, so the list lives here; how each one looks lives with
// the code that draws it.

// DefaultAvatar is the stock presenter of an auto video that names none.
const DefaultAvatar = "av_stock_amara"

// MaxAvatarPrompt is the longest prompt an avatar is made from, in
// characters (Unicode code points).
const MaxAvatarPrompt = 1000

// Avatar genders, as GET /v1/avatars filters them.
const (
	GenderFemale = "female"
	GenderMale   = "male"
)

// StockAvatar is one of the presenters that ship with vidfarm.
type StockAvatar struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Gender string `json:"gender"` // GenderFemale or GenderMale
}

var stockAvatars = []StockAvatar{
	{"av_stock_amara", "Amara", GenderFemale},
	{"av_stock_ben", "Ben", GenderMale},
	{"av_stock_chen", "Chen", GenderMale},
	{"av_stock_dara", "Dara", GenderFemale},
	{"av_stock_eli", "Eli", GenderMale},
	{"av_stock_farah", "Farah", GenderFemale},
}

// StockAvatars lists the stock presenters, DefaultAvatar first. The slice is
// the caller's.
func StockAvatars() []StockAvatar { return append([]StockAvatar(nil), stockAvatars...) }

// GetStockAvatar returns the stock presenter with that id.
func GetStockAvatar(id string) (StockAvatar, bool) {
	for _, a := range stockAvatars {
		if a.ID == id {
			return a, true
		}
	}
	return StockAvatar{}, false
}
