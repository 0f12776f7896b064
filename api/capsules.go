package api

import (
	"context"

	"capsuled/gen"
)

// Capsules is what the HTTP layer needs from the capsule service (capsules,
// items, ingestion and the capsule query). Nil answers 501.
type Capsules interface{}

// QueryCapsule searches a capsule addressed by path.
func (s *Server) QueryCapsule(context.Context, gen.QueryCapsuleRequestObject) (gen.QueryCapsuleResponseObject, error) {
	return nil, notImplemented("the capsule query")
}

// QueryCapsuleByHost searches a capsule addressed by host.
func (s *Server) QueryCapsuleByHost(context.Context, gen.QueryCapsuleByHostRequestObject) (gen.QueryCapsuleByHostResponseObject, error) {
	return nil, notImplemented("the capsule query")
}

// ListCapsules lists capsules.
func (s *Server) ListCapsules(context.Context, gen.ListCapsulesRequestObject) (gen.ListCapsulesResponseObject, error) {
	return nil, notImplemented("capsules")
}

// CreateCapsule creates a capsule.
func (s *Server) CreateCapsule(context.Context, gen.CreateCapsuleRequestObject) (gen.CreateCapsuleResponseObject, error) {
	return nil, notImplemented("capsules")
}

// DeleteCapsule deletes a capsule.
func (s *Server) DeleteCapsule(context.Context, gen.DeleteCapsuleRequestObject) (gen.DeleteCapsuleResponseObject, error) {
	return nil, notImplemented("capsules")
}

// GetCapsule returns a capsule.
func (s *Server) GetCapsule(context.Context, gen.GetCapsuleRequestObject) (gen.GetCapsuleResponseObject, error) {
	return nil, notImplemented("capsules")
}

// ListItems lists a capsule's items.
func (s *Server) ListItems(context.Context, gen.ListItemsRequestObject) (gen.ListItemsResponseObject, error) {
	return nil, notImplemented("capsule items")
}

// AddItem adds an item to a capsule.
func (s *Server) AddItem(context.Context, gen.AddItemRequestObject) (gen.AddItemResponseObject, error) {
	return nil, notImplemented("capsule items")
}

// DeleteItem deletes an item.
func (s *Server) DeleteItem(context.Context, gen.DeleteItemRequestObject) (gen.DeleteItemResponseObject, error) {
	return nil, notImplemented("capsule items")
}

// GetItem returns an item.
func (s *Server) GetItem(context.Context, gen.GetItemRequestObject) (gen.GetItemResponseObject, error) {
	return nil, notImplemented("capsule items")
}

// ReindexItem queues an item for ingestion again.
func (s *Server) ReindexItem(context.Context, gen.ReindexItemRequestObject) (gen.ReindexItemResponseObject, error) {
	return nil, notImplemented("capsule items")
}

// GetItemText returns an item's extracted text.
func (s *Server) GetItemText(context.Context, gen.GetItemTextRequestObject) (gen.GetItemTextResponseObject, error) {
	return nil, notImplemented("capsule items")
}
