package pipeline

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"

	"github.com/vidfarm/vidfarm/avatarart"
	"github.com/vidfarm/vidfarm/models"
)

// DefaultAvatar is the stock presenter of an auto video that names none.
const DefaultAvatar = models.DefaultAvatar

// StockAvatar is one of the presenters that ship with vidfarm (the list is
// models.StockAvatars). Their pictures are drawn by code (WriteStockAvatar),
// so nothing is downloaded.
type StockAvatar = models.StockAvatar

// StockAvatars lists the stock presenters, DefaultAvatar first.
func StockAvatars() []StockAvatar { return models.StockAvatars() }

// WriteStockAvatar writes the picture of stock avatar id to path as a
// 256x256 PNG: a round badge (transparent outside) with a head and
// shoulders. The picture is the same on every run.
func WriteStockAvatar(id, path string) error {
	if _, stock := models.GetStockAvatar(id); !stock {
		return fmt.Errorf("%w: %q", ErrUnknownAvatar, id)
	}
	b, err := avatarart.StockPNG(id)
	if err != nil {
		return fmt.Errorf("stock avatar: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("stock avatar: %w", err)
	}
	return nil
}

// encodePNGFile encodes img into a new file at path.
func encodePNGFile(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rgb is the opaque colour 0xRRGGBB.
func rgb(v uint32) color.RGBA { return avatarart.RGB(v) }
