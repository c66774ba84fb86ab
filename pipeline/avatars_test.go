package pipeline

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/vidfarm/vidfarm/avatarart"
)

func TestStockAvatars(t *testing.T) {
	dir := t.TempDir()
	avatars := StockAvatars()
	if len(avatars) < 4 || avatars[0].ID != DefaultAvatar {
		t.Fatalf("stock avatars %+v", avatars)
	}
	var prev []byte
	for _, a := range avatars {
		path := filepath.Join(dir, a.ID+".png")
		if err := WriteStockAvatar(a.ID, path); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil || img.Bounds() != image.Rect(0, 0, avatarart.StockSize, avatarart.StockSize) {
			t.Fatalf("%s: %v %v", a.ID, img.Bounds(), err)
		}
		if _, _, _, alpha := img.At(0, 0).RGBA(); alpha != 0 {
			t.Errorf("%s: corner is not transparent", a.ID)
		}
		if _, _, _, alpha := img.At(avatarart.StockSize/2, avatarart.StockSize/2).RGBA(); alpha != 0xffff {
			t.Errorf("%s: centre is not opaque", a.ID)
		}
		if bytes.Equal(data, prev) || (a.Gender != "male" && a.Gender != "female") {
			t.Errorf("%s: same picture as the previous avatar, or gender %q", a.ID, a.Gender)
		}
		again := filepath.Join(dir, "again.png")
		WriteStockAvatar(a.ID, again)
		if b, _ := os.ReadFile(again); !bytes.Equal(b, data) {
			t.Errorf("%s: picture differs between runs", a.ID)
		}
		prev = data
	}
	if err := WriteStockAvatar("av_nobody", filepath.Join(dir, "x.png")); !errors.Is(err, ErrUnknownAvatar) {
		t.Errorf("unknown avatar: %v", err)
	}
}
