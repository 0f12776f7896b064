package api

import (
	"context"

	"capsuled/gen"
)

// ListMemoryNamespaces lists the namespaces with their counts.
func (s *Server) ListMemoryNamespaces(context.Context, gen.ListMemoryNamespacesRequestObject) (gen.ListMemoryNamespacesResponseObject, error) {
	return nil, notImplemented("memory")
}

// GetMemoryNamespace returns one namespace.
func (s *Server) GetMemoryNamespace(context.Context, gen.GetMemoryNamespaceRequestObject) (gen.GetMemoryNamespaceResponseObject, error) {
	return nil, notImplemented("memory")
}

// DeleteMemoryNamespace deletes a namespace with everything in it.
func (s *Server) DeleteMemoryNamespace(context.Context, gen.DeleteMemoryNamespaceRequestObject) (gen.DeleteMemoryNamespaceResponseObject, error) {
	return nil, notImplemented("memory")
}

// ListMemories lists or searches the memories of a namespace.
func (s *Server) ListMemories(context.Context, gen.ListMemoriesRequestObject) (gen.ListMemoriesResponseObject, error) {
	return nil, notImplemented("memory")
}

// CreateMemory writes a memory directly.
func (s *Server) CreateMemory(context.Context, gen.CreateMemoryRequestObject) (gen.CreateMemoryResponseObject, error) {
	return nil, notImplemented("memory")
}

// GetMemory returns one memory.
func (s *Server) GetMemory(context.Context, gen.GetMemoryRequestObject) (gen.GetMemoryResponseObject, error) {
	return nil, notImplemented("memory")
}

// UpdateMemory changes a memory.
func (s *Server) UpdateMemory(context.Context, gen.UpdateMemoryRequestObject) (gen.UpdateMemoryResponseObject, error) {
	return nil, notImplemented("memory")
}

// DeleteMemory deletes a memory.
func (s *Server) DeleteMemory(context.Context, gen.DeleteMemoryRequestObject) (gen.DeleteMemoryResponseObject, error) {
	return nil, notImplemented("memory")
}

// SetMemoryExpiry sets or clears a memory's expiry.
func (s *Server) SetMemoryExpiry(context.Context, gen.SetMemoryExpiryRequestObject) (gen.SetMemoryExpiryResponseObject, error) {
	return nil, notImplemented("memory")
}

// ExportMemoryNamespace writes a namespace as JSON lines.
func (s *Server) ExportMemoryNamespace(context.Context, gen.ExportMemoryNamespaceRequestObject) (gen.ExportMemoryNamespaceResponseObject, error) {
	return nil, notImplemented("memory")
}

// ImportMemoryNamespace reads JSON lines into a namespace.
func (s *Server) ImportMemoryNamespace(context.Context, gen.ImportMemoryNamespaceRequestObject) (gen.ImportMemoryNamespaceResponseObject, error) {
	return nil, notImplemented("memory")
}

// ListMemoryFailures lists recorded extraction failures.
func (s *Server) ListMemoryFailures(context.Context, gen.ListMemoryFailuresRequestObject) (gen.ListMemoryFailuresResponseObject, error) {
	return nil, notImplemented("memory")
}
