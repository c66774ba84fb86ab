package client

import (
	"context"
	"iter"
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

// Folders reads every folder of the account, oldest first (GET
// /v1/folders), in one List: the server answers pages of at most 100, which
// Folders follows with starting_after while has_more, so an account with
// more folders than a page still gets them all. A video's FolderID names one.
func (c *Client) Folders(ctx context.Context) (*List[Folder], error) {
	all := List[Folder]{Object: "list", Data: []Folder{}}
	for f, err := range pages("", "list folders", func(after string) ([]Folder, bool, error) {
		var l List[Folder]
		if err := c.do(ctx, "GET", "/v1/folders", pageQuery(maxFolderPage, after), nil, "", &l); err != nil {
			return nil, false, err
		}
		all.Total = l.Total
		return l.Data, l.HasMore, nil
	}, func(f Folder) string { return f.ID }) {
		if err != nil {
			return nil, err
		}
		all.Data = append(all.Data, f)
	}
	all.Count = len(all.Data)
	return &all, nil
}

// maxFolderPage is the largest page GET /v1/folders answers.
const maxFolderPage = 100

// ListVoicesParams filters GET /v1/voices. Zero values are left out.
type ListVoicesParams struct {
	Language string // a language code (en-us) or a prefix ending at a dash (en)
	Gender   string // male or female
	Search   string // text in the id or name
	Limit    int    // page size, 1 to 500 (server default 100)
	// StartingAfter continues with the voices whose id sorts after this one,
	// which must be a voice of the farm (the server answers 400 otherwise);
	// it need not match the filters.
	StartingAfter string
}

func (p ListVoicesParams) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"language": p.Language, "gender": p.Gender, "search": p.Search, "starting_after": p.StartingAfter} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	return q
}

// Voices reads one page of the voiceover catalog, sorted by id.
func (c *Client) Voices(ctx context.Context, p ListVoicesParams) (*List[Voice], error) {
	var l List[Voice]
	if err := c.do(ctx, "GET", "/v1/voices", p.query(), nil, "", &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// AllVoices iterates over every voice matching p, fetching page after page
// with starting_after while has_more, as Videos does. An error ends the
// iteration after it is yielded.
func (c *Client) AllVoices(ctx context.Context, p ListVoicesParams) iter.Seq2[Voice, error] {
	return pages(p.StartingAfter, "list voices", func(after string) ([]Voice, bool, error) {
		p.StartingAfter = after
		l, err := c.Voices(ctx, p)
		if err != nil {
			return nil, false, err
		}
		return l.Data, l.HasMore, nil
	}, func(v Voice) string { return v.ID })
}
