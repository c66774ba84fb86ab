package bench

import (
	"encoding/xml"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestChartsRenderToPNG renders both charts with rsvg-convert (librsvg,
// Debian package librsvg2-bin, which `make deps` installs), as a planner
// putting them in a slide would: the PNG must decode at the SVG's size,
// not be blank, and show the legend where the SVG puts it.
func TestChartsRenderToPNG(t *testing.T) {
	bin, err := exec.LookPath("rsvg-convert")
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
			t.Fatal("rsvg-convert is not installed (Debian: librsvg2-bin) and CI or VIDFARM_REQUIRE_TOOLS is set")
		}
		t.Skip("rsvg-convert is not installed (Debian: librsvg2-bin; set CI to make this a failure)")
	}
	dir := t.TempDir()
	for name, doc := range renderCharts(t) {
		t.Run(name, func(t *testing.T) {
			svgPath, pngPath := filepath.Join(dir, name+".svg"), filepath.Join(dir, name+".png")
			if err := os.WriteFile(svgPath, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "-o", pngPath, svgPath).CombinedOutput(); err != nil {
				t.Fatalf("rsvg-convert: %v\n%s", err, out)
			}
			f, err := os.Open(pngPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("PNG does not decode: %v", err)
			}
			var root svgElem
			if err := xml.Unmarshal(doc, &root); err != nil {
				t.Fatal(err)
			}
			w, h := int(root.num(t, "width")), int(root.num(t, "height"))
			if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
				t.Fatalf("PNG is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
			}
			if inked := inkedShare(img, img.Bounds()); inked < 0.01 {
				t.Errorf("PNG is blank: %.2f%% of pixels drawn", 100*inked)
			}
			lg, _ := root.byID("legend")
			frame, _ := checkLegend(t, lg)
			r := image.Rect(int(frame.x0)+2, int(frame.y0)+2, int(frame.x1)-2, int(frame.y1)-2)
			if inked := inkedShare(img, r); inked < 0.02 {
				t.Errorf("legend area %v is empty in the PNG (%.2f%% drawn)", r, 100*inked)
			}
		})
	}
}

// inkedShare is the fraction of r's pixels that are not near-white.
func inkedShare(img image.Image, r image.Rectangle) float64 {
	inked, all := 0, 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			all++
			if cr < 0xe000 || cg < 0xe000 || cb < 0xe000 {
				inked++
			}
		}
	}
	if all == 0 {
		return 0
	}
	return float64(inked) / float64(all)
}
