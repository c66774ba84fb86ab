package agent

import (
	"context"
	"fmt"

	"github.com/vidfarm/vidfarm/pipeline"
)

// brand is the video's brand kit for the composite, its logo downloaded: an
// asset from the control plane, or a logo_url fetched like an input image
// (public https, size-capped, sniffed). A logo that cannot be had fails the
// task rather than deliver a video without the brand it was asked for.
func (j *job) brand(ctx context.Context) (*pipeline.Brand, error) {
	b := j.v.Brand
	if b == nil {
		return nil, nil
	}
	out := &pipeline.Brand{Colors: b.Colors, Fonts: b.Fonts, MotionStyle: b.MotionStyle}
	var err error
	switch {
	case b.LogoInput != "":
		out.LogoPath, err = j.imageInput(ctx, b.LogoInput)
	case b.LogoURL != "":
		out.LogoPath, err = j.a.inputs.fetch(ctx, b.LogoURL, j.path("logo"))
	}
	if err != nil {
		return nil, fmt.Errorf("brand logo: %w", err)
	}
	return out, nil
}
