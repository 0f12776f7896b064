package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"capsuled/internal/domain"
)

// errorClass is the HTTP status and the wire "type" of each error Kind: the
// one table that maps errors to responses.
var errorClass = map[domain.Kind]struct {
	status int
	typ    string
}{
	domain.KindInvalid:         {http.StatusBadRequest, "invalid_request_error"},
	domain.KindUnauthenticated: {http.StatusUnauthorized, "authentication_error"},
	domain.KindForbidden:       {http.StatusForbidden, "permission_error"},
	domain.KindNotFound:        {http.StatusNotFound, "not_found_error"},
	domain.KindConflict:        {http.StatusConflict, "conflict_error"},
	domain.KindTooLarge:        {http.StatusRequestEntityTooLarge, "request_too_large"},
	domain.KindUnsupportedType: {http.StatusUnsupportedMediaType, "unsupported_media_type_error"},
	domain.KindUnprocessable:   {http.StatusUnprocessableEntity, "unprocessable_entity_error"},
	domain.KindRateLimited:     {http.StatusTooManyRequests, "rate_limit_error"},
	domain.KindInternal:        {http.StatusInternalServerError, "server_error"},
	domain.KindNotImplemented:  {http.StatusNotImplemented, "not_implemented_error"},
	domain.KindUpstream:        {http.StatusBadGateway, "upstream_error"},
	domain.KindUnavailable:     {http.StatusServiceUnavailable, "service_unavailable_error"},
	domain.KindTimeout:         {http.StatusGatewayTimeout, "timeout_error"},
}

// errorBody is the spec's ErrorResponse.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// toWire turns any error into its status and body. Errors that are not
// *domain.Error are internal: logged, and answered without their text.
func toWire(ctx context.Context, log *slog.Logger, err error) (int, errorBody, *domain.Error) {
	e, ok := domain.AsError(err)
	if !ok {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			e = &domain.Error{Kind: domain.KindTimeout, Message: "the request timed out"}
		case errors.Is(err, context.Canceled):
			e = &domain.Error{Kind: domain.KindUnavailable, Code: "request_canceled", Message: "the request was canceled"}
		default:
			id := requestID(ctx)
			log.ErrorContext(ctx, "internal error", "request_id", id, "err", err)
			e = &domain.Error{Kind: domain.KindInternal, Message: "internal error (request id " + id + ")"}
		}
	} else if e.Kind == domain.KindInternal {
		log.ErrorContext(ctx, "internal error", "request_id", requestID(ctx), "err", err)
	}
	class, ok := errorClass[e.Kind]
	if !ok {
		class = errorClass[domain.KindInternal]
	}
	body := errorBody{Error: errorDetail{Message: e.Message, Type: class.typ}}
	if e.Param != "" {
		body.Error.Param = &e.Param
	}
	code := e.WireCode()
	body.Error.Code = &code
	return class.status, body, e
}

// writeError writes err as the spec's error response.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, body, e := toWire(r.Context(), log, err)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="capsuled"`)
	}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
