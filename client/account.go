package client

import (
	"context"
	"net/url"
	"strconv"
)

// Me reads the account the API key belongs to (GET /v1/me).
func (c *Client) Me(ctx context.Context) (*Account, error) {
	var a Account
	if err := c.do(ctx, "GET", "/v1/me", nil, nil, "", &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// Models reads the model catalog (GET /v1/models, one page holding all).
func (c *Client) Models(ctx context.Context) (*List[Model], error) {
	var l List[Model]
	if err := c.do(ctx, "GET", "/v1/models", nil, nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListVoicesParams filters GET /v1/voices. Zero values are left out.
type ListVoicesParams struct {
	Language string // a language code (en-us) or a prefix ending at a dash (en)
	Gender   string // male or female
	Search   string // text in the id or name
	Limit    int    // page size, 1 to 500
}

// Voices reads the voiceover catalog.
func (c *Client) Voices(ctx context.Context, p ListVoicesParams) (*List[Voice], error) {
	q := url.Values{}
	for k, v := range map[string]string{"language": p.Language, "gender": p.Gender, "search": p.Search} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	var l List[Voice]
	if err := c.do(ctx, "GET", "/v1/voices", q, nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}
