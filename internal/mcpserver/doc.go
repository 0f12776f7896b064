// Package mcpserver serves capsules and memory to agents over the Model
// Context Protocol, with the official Go SDK.
//
// The tools are search (hybrid), text_search (keyword), read (an item's
// text, paged) and list_capsules over capsules, and remember, recall
// (memories for a query within a token budget) and forget over memory
// namespaces. Every capsule item is also a resource, capsule://NAME/ITEM.
//
// Over HTTP (Server.Handler, mounted at /mcp) the streamable transport runs
// stateless, so any replica answers any request, and every request carries
// its bearer credential: the same API keys and access tokens as the REST
// operations, checked by the same authenticator. A credential sees only the
// tools its scopes allow (capsules:read for the capsule tools and resources,
// memory for the memory tools), and its capsule and namespace allow-lists
// apply to every call: capsules outside the list are neither listed nor
// searched, and naming one is refused. Over stdio (Server.RunStdio) a fixed
// principal stands in for the credential; read-only servers offer no tool
// that writes.
//
// Relay connects a stdio client (a desktop app that launches a command) to a
// running server's /mcp endpoint.
//
// The package calls the capsule and memory services through the small
// interfaces it declares (Capsules, Memory, Authenticator), never through
// the REST API.
package mcpserver
