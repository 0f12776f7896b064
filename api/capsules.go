package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"capsuled/gen"
	"capsuled/internal/capsule"
	"capsuled/internal/domain"
)

// Capsules is what the HTTP layer needs from the capsule service (capsules,
// items, ingestion and the capsule query). Nil answers 501.
type Capsules interface {
	CreateCapsule(ctx context.Context, name, description string) (domain.Capsule, error)
	GetCapsule(ctx context.Context, name string) (domain.Capsule, error)
	ListCapsules(ctx context.Context) ([]domain.Capsule, error)
	DeleteCapsule(ctx context.Context, name string) error

	// StageFile streams an upload to the data directory for AddItem.
	StageFile(r io.Reader) (*capsule.Upload, error)
	AddItem(ctx context.Context, capsule string, in capsule.NewItem) (item domain.Item, created bool, err error)
	WaitItem(ctx context.Context, capsule, id string, timeout time.Duration) (domain.Item, error)
	GetItem(ctx context.Context, capsule, id string) (domain.Item, error)
	ListItems(ctx context.Context, capsule string, status domain.ItemStatus, after string, limit int) (items []domain.Item, next string, err error)
	DeleteItem(ctx context.Context, capsule, id string) error
	ReindexItem(ctx context.Context, capsule, id string) (domain.Item, error)
	ItemText(ctx context.Context, capsule, id string) (domain.Item, string, error)

	Query(ctx context.Context, capsule string, q domain.Query) ([]domain.Hit, error)
}

// QueryCapsule searches a capsule addressed by path.
func (s *Server) QueryCapsule(ctx context.Context, req gen.QueryCapsuleRequestObject) (gen.QueryCapsuleResponseObject, error) {
	hits, err := s.query(ctx, req.Capsule, req.Body)
	if err != nil {
		return nil, err
	}
	return gen.QueryCapsule200JSONResponse(hits), nil
}

// QueryCapsuleByHost searches a capsule addressed by host.
func (s *Server) QueryCapsuleByHost(ctx context.Context, req gen.QueryCapsuleByHostRequestObject) (gen.QueryCapsuleByHostResponseObject, error) {
	name := info(ctx).Capsule
	if name == "" {
		return nil, &domain.Error{Kind: domain.KindNotFound, Code: "capsule_not_found",
			Message: "no capsule is addressed by this host (want <capsule>." + strings.TrimPrefix(s.cfg.CapsuleHostSuffix, ".") + ")"}
	}
	hits, err := s.query(ctx, name, req.Body)
	if err != nil {
		return nil, err
	}
	return gen.QueryCapsuleByHost200JSONResponse(hits), nil
}

func (s *Server) query(ctx context.Context, name string, body *gen.QueryRequest) (gen.QueryResults, error) {
	if s.capsules == nil {
		return nil, notImplemented("the capsule query")
	}
	if body == nil {
		return nil, domain.Invalid("query", "a request body is required")
	}
	q, err := QueryFromWire(*body)
	if err != nil {
		return nil, err
	}
	hits, err := s.capsules.Query(ctx, name, q)
	if err != nil {
		return nil, err
	}
	return hitsToWire(hits), nil
}

func hitsToWire(hits []domain.Hit) gen.QueryResults {
	out := make(gen.QueryResults, 0, len(hits))
	for _, h := range hits {
		authored := h.Item.TimeAdded
		if h.Item.TimeAuthored != nil {
			authored = *h.Item.TimeAuthored
		}
		meta := h.Item.Metadata
		if meta == nil {
			meta = map[string]any{}
		}
		out = append(out, gen.QueryResult{
			ItemId: h.Item.ID, Idx: h.Idx, Content: h.Content, Uri: h.Item.URI, Kind: gen.ItemKind(h.Item.Kind),
			FileName: h.Item.FileName, FileType: h.Item.FileType, TimeAdded: h.Item.TimeAdded, TimeAuthored: authored,
			Score: float32(h.Score), Metadata: meta,
		})
	}
	return out
}

// ListCapsules lists the capsules the caller may use.
func (s *Server) ListCapsules(ctx context.Context, _ gen.ListCapsulesRequestObject) (gen.ListCapsulesResponseObject, error) {
	if s.capsules == nil {
		return nil, notImplemented("capsules")
	}
	list, err := s.capsules.ListCapsules(ctx)
	if err != nil {
		return nil, err
	}
	p := principal(ctx)
	out := gen.ListCapsules200JSONResponse{Data: []gen.Capsule{}}
	for _, c := range list {
		if p == nil || p.CanCapsule(c.Name) {
			out.Data = append(out.Data, capsuleToWire(c))
		}
	}
	return out, nil
}

// CreateCapsule creates a capsule.
func (s *Server) CreateCapsule(ctx context.Context, req gen.CreateCapsuleRequestObject) (gen.CreateCapsuleResponseObject, error) {
	if s.capsules == nil {
		return nil, notImplemented("capsules")
	}
	if req.Body == nil {
		return nil, domain.Invalid("name", "a request body is required")
	}
	if p := principal(ctx); p != nil && !p.CanCapsule(req.Body.Name) {
		return nil, &domain.Error{Kind: domain.KindForbidden, Code: "capsule_not_allowed",
			Message: fmt.Sprintf("this credential may not use capsule %q", req.Body.Name)}
	}
	desc := ""
	if req.Body.Description != nil {
		desc = *req.Body.Description
	}
	c, err := s.capsules.CreateCapsule(ctx, req.Body.Name, desc)
	if err != nil {
		return nil, err
	}
	return gen.CreateCapsule201JSONResponse(capsuleToWire(c)), nil
}

// DeleteCapsule deletes a capsule.
func (s *Server) DeleteCapsule(ctx context.Context, req gen.DeleteCapsuleRequestObject) (gen.DeleteCapsuleResponseObject, error) {
	if s.capsules == nil {
		return nil, notImplemented("capsules")
	}
	if err := s.capsules.DeleteCapsule(ctx, req.Capsule); err != nil {
		return nil, err
	}
	return gen.DeleteCapsule204Response{}, nil
}

// GetCapsule returns a capsule.
func (s *Server) GetCapsule(ctx context.Context, req gen.GetCapsuleRequestObject) (gen.GetCapsuleResponseObject, error) {
	if s.capsules == nil {
		return nil, notImplemented("capsules")
	}
	c, err := s.capsules.GetCapsule(ctx, req.Capsule)
	if err != nil {
		return nil, err
	}
	return gen.GetCapsule200JSONResponse(capsuleToWire(c)), nil
}

func capsuleToWire(c domain.Capsule) gen.Capsule {
	return gen.Capsule{Name: c.Name, Description: c.Description, CreatedAt: c.CreatedAt, ItemCount: c.ItemCount, ChunkCount: c.ChunkCount}
}

// ListItems lists a capsule's items.
func (s *Server) ListItems(ctx context.Context, req gen.ListItemsRequestObject) (gen.ListItemsResponseObject, error) {
	if s.capsules == nil {
		return nil, notImplemented("capsule items")
	}
	var status domain.ItemStatus
	if req.Params.Status != nil {
		status = domain.ItemStatus(*req.Params.Status)
	}
	limit := 100
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	after := ""
	if req.Params.After != nil {
		after = *req.Params.After
	}
	items, next, err := s.capsules.ListItems(ctx, req.Capsule, status, after, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListItems200JSONResponse{Data: make([]gen.Item, 0, len(items))}
	for _, it := range items {
		out.Data = append(out.Data, itemToWire(it))
	}
	if next != "" {
		out.Next = &next
	}
	return out, nil
}

// AddItem adds an item to a capsule: text as JSON, files as multipart.
func (s *Server) AddItem(ctx context.Context, req gen.AddItemRequestObject) (gen.AddItemResponseObject, error) {
	if s.capsules == nil {
		return nil, notImplemented("capsule items")
	}
	var in capsule.NewItem
	switch {
	case req.JSONBody != nil:
		b := req.JSONBody
		in = capsule.NewItem{Kind: domain.ItemText, Text: b.Content, TimeAuthored: b.TimeAuthored}
		if b.Uri != nil {
			in.URI = *b.Uri
		}
		if b.Metadata != nil {
			in.Metadata = *b.Metadata
		}
	case req.MultipartBody != nil:
		var err error
		in, err = s.readUpload(req.MultipartBody)
		defer in.File.Discard()
		if err != nil {
			return nil, err
		}
	default:
		return nil, domain.Invalid("", "send the item as application/json (text) or multipart/form-data (file)")
	}
	it, created, err := s.capsules.AddItem(ctx, req.Capsule, in)
	if err != nil {
		return nil, err
	}
	if req.Params.Wait != nil && *req.Params.Wait {
		timeout := 60 * time.Second
		if t := req.Params.WaitTimeoutSeconds; t != nil {
			timeout = time.Duration(*t) * time.Second
		}
		if it, err = s.capsules.WaitItem(ctx, req.Capsule, it.ID, timeout); err != nil {
			return nil, err
		}
	}
	if created {
		return gen.AddItem201JSONResponse(itemToWire(it)), nil
	}
	return gen.AddItem200JSONResponse(itemToWire(it)), nil
}

// Limits of the multipart fields other than the file.
const (
	maxFormField = 64 << 10
	maxFormParts = 16
)

// readUpload reads a multipart item: the file streams to the data directory
// (413 beyond MaxUploadBytes), the other fields are small. The returned
// NewItem's File must be discarded by the caller once used.
func (s *Server) readUpload(mr *multipart.Reader) (capsule.NewItem, error) {
	in := capsule.NewItem{Kind: domain.ItemFile}
	var partType, fileType string
	haveFileType := false
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
				return in, tooLargeUpload(s.cfg.MaxUploadBytes)
			}
			return in, domain.Invalid("", "malformed multipart body: %v", err)
		}
		if n >= maxFormParts {
			part.Close()
			return in, domain.Invalid("", "too many multipart parts (at most %d)", maxFormParts)
		}
		name := part.FormName()
		if name == "file" {
			if in.File != nil {
				part.Close()
				return in, domain.Invalid("file", "only one file per item")
			}
			in.FileName = part.FileName()
			partType = part.Header.Get("Content-Type")
			up, err := s.capsules.StageFile(&limitReader{r: part, left: s.cfg.MaxUploadBytes, limit: s.cfg.MaxUploadBytes})
			part.Close()
			if err != nil {
				if _, ok := domain.AsError(err); ok {
					return in, err
				}
				if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
					return in, tooLargeUpload(s.cfg.MaxUploadBytes)
				}
				return in, domain.Invalid("file", "could not read the upload: %v", err)
			}
			in.File = up
			continue
		}
		raw, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
		part.Close()
		if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
			return in, tooLargeUpload(s.cfg.MaxUploadBytes)
		}
		if err != nil {
			return in, domain.Invalid(name, "could not read the field: %v", err)
		}
		if len(raw) > maxFormField {
			return in, domain.Invalid(name, "field is over %d bytes", maxFormField)
		}
		v := string(raw)
		switch name {
		case "uri":
			if len(v) > 2048 {
				return in, domain.Invalid("uri", "uri is over 2048 characters")
			}
			in.URI = v
		case "file_type":
			if len(v) > 255 {
				return in, domain.Invalid("file_type", "file_type is over 255 characters")
			}
			fileType, haveFileType = v, true
		case "time_authored":
			t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
			if err != nil {
				return in, domain.Invalid("time_authored", "time_authored must be an RFC 3339 date-time")
			}
			in.TimeAuthored = &t
		case "metadata":
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil || m == nil {
				return in, domain.Invalid("metadata", "metadata must be a JSON object")
			}
			if len(m) > 64 {
				return in, domain.Invalid("metadata", "metadata has more than 64 keys")
			}
			in.Metadata = m
		default:
			return in, &domain.Error{Kind: domain.KindInvalid, Code: "unknown_field", Param: name,
				Message: fmt.Sprintf("unknown form field %q (want file, uri, file_type, time_authored, metadata)", name)}
		}
	}
	if in.File == nil {
		return in, domain.Invalid("file", "the multipart body needs a file part named file")
	}
	if in.FileName == "" {
		in.FileName = "upload"
	}
	in.FileType = partType
	if haveFileType {
		in.FileType = fileType
	}
	return in, nil
}

// limitReader fails with a 413 error once more than limit bytes were read.
type limitReader struct {
	r           io.Reader
	left, limit int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, tooLargeUpload(l.limit)
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, tooLargeUpload(l.limit)
	}
	return n, err
}

func tooLargeUpload(limit int64) error {
	return &domain.Error{Kind: domain.KindTooLarge, Code: "upload_too_large", Param: "file",
		Message: fmt.Sprintf("the upload is over the limit of %d bytes", limit)}
}

// DeleteItem deletes an item.
func (s *Server) DeleteItem(ctx context.Context, req gen.DeleteItemRequestObject) (gen.DeleteItemResponseObject, error) {
	if s.capsules == nil {
		return nil, notImplemented("capsule items")
	}
	if err := s.capsules.DeleteItem(ctx, req.Capsule, req.Item); err != nil {
		return nil, err
	}
	return gen.DeleteItem204Response{}, nil
}

// GetItem returns an item.
func (s *Server) GetItem(ctx context.Context, req gen.GetItemRequestObject) (gen.GetItemResponseObject, error) {
	if s.capsules == nil {
		return nil, notImplemented("capsule items")
	}
	it, err := s.capsules.GetItem(ctx, req.Capsule, req.Item)
	if err != nil {
		return nil, err
	}
	return gen.GetItem200JSONResponse(itemToWire(it)), nil
}

// ReindexItem queues an item for ingestion again.
func (s *Server) ReindexItem(ctx context.Context, req gen.ReindexItemRequestObject) (gen.ReindexItemResponseObject, error) {
	if s.capsules == nil {
		return nil, notImplemented("capsule items")
	}
	it, err := s.capsules.ReindexItem(ctx, req.Capsule, req.Item)
	if err != nil {
		return nil, err
	}
	return gen.ReindexItem202JSONResponse(itemToWire(it)), nil
}

// GetItemText returns an item's extracted text.
func (s *Server) GetItemText(ctx context.Context, req gen.GetItemTextRequestObject) (gen.GetItemTextResponseObject, error) {
	if s.capsules == nil {
		return nil, notImplemented("capsule items")
	}
	it, text, err := s.capsules.ItemText(ctx, req.Capsule, req.Item)
	if err != nil {
		return nil, err
	}
	return gen.GetItemText200JSONResponse{Item: itemToWire(it), Text: text}, nil
}

func itemToWire(it domain.Item) gen.Item {
	out := gen.Item{
		Id: it.ID, Capsule: it.Capsule, Kind: gen.ItemKind(it.Kind), Uri: it.URI, FileName: it.FileName, FileType: it.FileType,
		Size: it.Size, ContentHash: it.ContentHash, Metadata: it.Metadata, TimeAdded: it.TimeAdded, TimeAuthored: it.TimeAuthored,
		TimeUpdated: it.TimeUpdated, Status: gen.ItemStatus(it.Status), ChunkCount: it.ChunkCount,
	}
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	if it.Error != "" {
		e := it.Error
		out.Error = &e
	}
	return out
}
