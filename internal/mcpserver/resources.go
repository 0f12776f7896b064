package mcpserver

import (
	"context"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"capsuled/internal/domain"
)

// resourceScheme is the URI scheme of capsule items: capsule://NAME/ITEM.
const resourceScheme = "capsule"

// resourcePage is how many items one resources/list page holds.
const resourcePage = 100

func resourceURI(capsule, item string) string {
	return resourceScheme + "://" + capsule + "/" + url.PathEscape(item)
}

// parseResourceURI splits capsule://NAME/ITEM.
func parseResourceURI(s string) (capsule, item string, ok bool) {
	rest, ok := strings.CutPrefix(s, resourceScheme+"://")
	if !ok {
		return "", "", false
	}
	capsule, item, ok = strings.Cut(rest, "/")
	if !ok || capsule == "" || item == "" || strings.Contains(item, "/") {
		return "", "", false
	}
	item, err := url.PathUnescape(item)
	if err != nil {
		return "", "", false
	}
	return capsule, item, true
}

// addResources makes every ready item of the capsules a caller may use a
// resource (its extracted text): the template capsule://{capsule}/{item}
// reads one, and resources/list pages through them capsule by capsule.
func (t *tools) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "capsule-item",
		Title:       "Capsule item",
		Description: "The extracted text of an item of a capsule.",
		URITemplate: resourceScheme + "://{capsule}/{item}",
		MIMEType:    "text/plain",
	}, t.readResource)
	// The SDK lists only resources added one by one; capsule items change,
	// so resources/list is answered here.
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			cursor := ""
			if p, ok := req.GetParams().(*mcp.ListResourcesParams); ok && p != nil {
				cursor = p.Cursor
			}
			return t.listResources(ctx, req.GetExtra(), cursor)
		}
	})
}

// listResources returns one page of items. The cursor is "CAPSULE/AFTER":
// the capsule to go on with and the last item id listed in it.
func (t *tools) listResources(ctx context.Context, extra *mcp.RequestExtra, cursor string) (*mcp.ListResourcesResult, error) {
	p, err := t.principal(extra, domain.ScopeCapsulesRead)
	if err != nil {
		return nil, rpcError(err)
	}
	caps, err := t.allowedCapsules(ctx, p)
	if err != nil {
		return nil, rpcError(t.toolError(ctx, "resources/list", err))
	}
	startCap, after, _ := strings.Cut(cursor, "/")
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}
	started := cursor == ""
	for _, c := range caps {
		if !started {
			if c.Name != startCap {
				continue
			}
			started = true
		} else {
			after = ""
		}
		for {
			want := resourcePage - len(res.Resources)
			items, next, err := t.srv.capsules.ListItems(ctx, c.Name, domain.StatusReady, after, want)
			if err != nil {
				if domain.KindOf(err) == domain.KindNotFound {
					break // deleted meanwhile
				}
				return nil, rpcError(t.toolError(ctx, "resources/list", err))
			}
			for _, it := range items {
				res.Resources = append(res.Resources, &mcp.Resource{
					URI: resourceURI(c.Name, it.ID), Name: it.ID, Title: title(it), MIMEType: "text/plain",
					Description: "item of capsule " + c.Name,
				})
			}
			if len(res.Resources) >= resourcePage {
				if next != "" {
					res.NextCursor = c.Name + "/" + next
				} else {
					res.NextCursor = c.Name + "/" + items[len(items)-1].ID
				}
				return res, nil
			}
			if next == "" {
				break
			}
			after = next
		}
	}
	if !started {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
	}
	return res, nil
}

func (t *tools) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	capsule, id, ok := parseResourceURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	p, err := t.principal(req.Extra, domain.ScopeCapsulesRead)
	if err != nil {
		return nil, rpcError(err)
	}
	if err := checkCapsule(p, capsule); err != nil {
		return nil, rpcError(err)
	}
	_, body, err := t.srv.capsules.ItemText(ctx, capsule, id)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, rpcError(t.toolError(ctx, "resources/read", err))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: body}}}, nil
}

// rpcError is err as a JSON-RPC error: invalid params, with the client's
// message.
func rpcError(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: clientMessage(err)}
}
