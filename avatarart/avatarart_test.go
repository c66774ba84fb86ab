package avatarart

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/vidfarm/vidfarm/models"
)

// TestEveryStockAvatarHasALook: the catalogue (models) and the drawings
// agree, and each picture is a StockSize badge, transparent at the corners,
// opaque in the middle, its own, and the same bytes on every call.
func TestEveryStockAvatarHasALook(t *testing.T) {
	seen := map[string]string{}
	for _, a := range models.StockAvatars() {
		b, err := StockPNG(a.ID)
		if err != nil {
			t.Fatalf("%s: %v", a.ID, err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil || img.Bounds() != image.Rect(0, 0, StockSize, StockSize) {
			t.Fatalf("%s: %v %v", a.ID, err, img)
		}
		if _, _, _, alpha := img.At(0, 0).RGBA(); alpha != 0 {
			t.Errorf("%s: corner is not transparent", a.ID)
		}
		if _, _, _, alpha := img.At(StockSize/2, StockSize/2).RGBA(); alpha != 0xffff {
			t.Errorf("%s: centre is not opaque", a.ID)
		}
		if other, dup := seen[string(b)]; dup {
			t.Errorf("%s draws the same picture as %s", a.ID, other)
		}
		seen[string(b)] = a.ID
		again := Draw(stockLooks[a.ID], StockSize, true)
		var fresh bytes.Buffer
		if err := png.Encode(&fresh, again); err != nil || !bytes.Equal(fresh.Bytes(), b) {
			t.Errorf("%s: the cached picture differs from a fresh drawing", a.ID)
		}
	}
	if len(stockLooks) != len(models.StockAvatars()) {
		t.Errorf("%d looks for %d stock avatars", len(stockLooks), len(models.StockAvatars()))
	}
	if _, err := StockPNG("av_nobody"); err == nil {
		t.Error("a picture for an unknown avatar")
	}
}
